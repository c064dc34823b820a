//! The one place where S3 error codes and HTTP statuses are decided.

use std::borrow::Cow;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::object::ObjectError;

/// The S3 error codes Strata emits, each with the HTTP status AWS uses for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum S3ErrorCode {
    AccessControlListNotSupported,
    AccessDenied,
    AccessForbidden,
    AuthorizationHeaderMalformed,
    AuthorizationQueryParametersError,
    BadDigest,
    BadRequest,
    BucketAlreadyExists,
    BucketAlreadyOwnedByYou,
    BucketNotEmpty,
    EntityTooLarge,
    EntityTooSmall,
    IncompleteBody,
    InternalError,
    InvalidAccessKeyId,
    InvalidArgument,
    InvalidBucketAclWithObjectOwnership,
    InvalidBucketName,
    InvalidBucketState,
    InvalidDigest,
    IllegalLocationConstraintException,
    InvalidLocationConstraint,
    InvalidPart,
    InvalidPolicyDocument,
    InvalidPartNumber,
    InvalidPartOrder,
    InvalidRange,
    InvalidRequest,
    InvalidStorageClass,
    InvalidTag,
    KeyTooLongError,
    MalformedACLError,
    MalformedPOSTRequest,
    MalformedPolicy,
    MalformedXML,
    MaxPostPreDataLengthExceededError,
    MetadataTooLarge,
    MethodNotAllowed,
    MissingSecurityHeader,
    MissingContentLength,
    NoSuchBucket,
    NoSuchBucketPolicy,
    NoSuchCORSConfiguration,
    NoSuchLifecycleConfiguration,
    NoSuchKey,
    NoSuchObjectLockConfiguration,
    NoSuchPublicAccessBlockConfiguration,
    NoSuchTagSet,
    NoSuchUpload,
    NoSuchVersion,
    NotImplemented,
    IdempotencyParameterMismatch,
    InvalidWriteOffset,
    TooManyParts,
    ObjectLockConfigurationNotFoundError,
    OwnershipControlsNotFoundError,
    ServerSideEncryptionConfigurationNotFoundError,
    KmsNotFound,
    KmsDisabled,
    PreconditionFailed,
    RequestTimeTooSkewed,
    RequestTimeout,
    SignatureDoesNotMatch,
    SlowDown,
    ServiceUnavailable,
    InsufficientStorage,
    UnexpectedContent,
    UnresolvableGrantByEmailAddress,
    XAmzContentSHA256Mismatch,
}

impl S3ErrorCode {
    /// The code as it appears in the `<Code>` element.
    pub fn as_str(self) -> &'static str {
        use S3ErrorCode::*;
        match self {
            AccessDenied => "AccessDenied",
            AccessForbidden => "AccessForbidden",
            AuthorizationHeaderMalformed => "AuthorizationHeaderMalformed",
            AuthorizationQueryParametersError => "AuthorizationQueryParametersError",
            BadDigest => "BadDigest",
            BadRequest => "BadRequest",
            BucketAlreadyExists => "BucketAlreadyExists",
            BucketAlreadyOwnedByYou => "BucketAlreadyOwnedByYou",
            BucketNotEmpty => "BucketNotEmpty",
            EntityTooLarge => "EntityTooLarge",
            EntityTooSmall => "EntityTooSmall",
            IncompleteBody => "IncompleteBody",
            InternalError => "InternalError",
            InvalidAccessKeyId => "InvalidAccessKeyId",
            InvalidArgument => "InvalidArgument",
            InvalidBucketName => "InvalidBucketName",
            InvalidDigest => "InvalidDigest",
            IllegalLocationConstraintException => "IllegalLocationConstraintException",
            InvalidLocationConstraint => "InvalidLocationConstraint",
            InvalidPart => "InvalidPart",
            InvalidPolicyDocument => "InvalidPolicyDocument",
            InvalidPartNumber => "InvalidPartNumber",
            InvalidPartOrder => "InvalidPartOrder",
            InvalidRange => "InvalidRange",
            InvalidRequest => "InvalidRequest",
            InvalidStorageClass => "InvalidStorageClass",
            InvalidTag => "InvalidTag",
            KeyTooLongError => "KeyTooLongError",
            MalformedACLError => "MalformedACLError",
            MalformedPOSTRequest => "MalformedPOSTRequest",
            MalformedPolicy => "MalformedPolicy",
            MalformedXML => "MalformedXML",
            MaxPostPreDataLengthExceededError => "MaxPostPreDataLengthExceededError",
            MetadataTooLarge => "MetadataTooLarge",
            MethodNotAllowed => "MethodNotAllowed",
            MissingContentLength => "MissingContentLength",
            NoSuchBucket => "NoSuchBucket",
            NoSuchBucketPolicy => "NoSuchBucketPolicy",
            NoSuchCORSConfiguration => "NoSuchCORSConfiguration",
            NoSuchLifecycleConfiguration => "NoSuchLifecycleConfiguration",
            NoSuchKey => "NoSuchKey",
            NoSuchObjectLockConfiguration => "NoSuchObjectLockConfiguration",
            ObjectLockConfigurationNotFoundError => "ObjectLockConfigurationNotFoundError",
            InvalidBucketState => "InvalidBucketState",
            NoSuchPublicAccessBlockConfiguration => "NoSuchPublicAccessBlockConfiguration",
            OwnershipControlsNotFoundError => "OwnershipControlsNotFoundError",
            ServerSideEncryptionConfigurationNotFoundError => {
                "ServerSideEncryptionConfigurationNotFoundError"
            }
            KmsNotFound => "KMS.NotFoundException",
            KmsDisabled => "KMS.DisabledException",
            UnresolvableGrantByEmailAddress => "UnresolvableGrantByEmailAddress",
            UnexpectedContent => "UnexpectedContent",
            RequestTimeout => "RequestTimeout",
            MissingSecurityHeader => "MissingSecurityHeader",
            InvalidBucketAclWithObjectOwnership => "InvalidBucketAclWithObjectOwnership",
            AccessControlListNotSupported => "AccessControlListNotSupported",
            NoSuchTagSet => "NoSuchTagSet",
            NoSuchUpload => "NoSuchUpload",
            NoSuchVersion => "NoSuchVersion",
            NotImplemented => "NotImplemented",
            IdempotencyParameterMismatch => "IdempotencyParameterMismatch",
            InvalidWriteOffset => "InvalidWriteOffset",
            TooManyParts => "TooManyParts",
            PreconditionFailed => "PreconditionFailed",
            RequestTimeTooSkewed => "RequestTimeTooSkewed",
            SignatureDoesNotMatch => "SignatureDoesNotMatch",
            SlowDown => "SlowDown",
            ServiceUnavailable => "ServiceUnavailable",
            InsufficientStorage => "XStrataStorageFull",
            XAmzContentSHA256Mismatch => "XAmzContentSHA256Mismatch",
        }
    }

    /// The HTTP status AWS answers with for this code.
    pub fn status(self) -> StatusCode {
        use S3ErrorCode::*;
        match self {
            AccessDenied
            | AccessForbidden
            | InvalidAccessKeyId
            | RequestTimeTooSkewed
            | SignatureDoesNotMatch => StatusCode::FORBIDDEN,
            NoSuchBucket
            | NoSuchCORSConfiguration
            | NoSuchLifecycleConfiguration
            | NoSuchKey
            | NoSuchObjectLockConfiguration
            | ObjectLockConfigurationNotFoundError
            | NoSuchTagSet
            | NoSuchUpload
            | NoSuchVersion => StatusCode::NOT_FOUND,
            NoSuchBucketPolicy
            | NoSuchPublicAccessBlockConfiguration
            | OwnershipControlsNotFoundError
            | ServerSideEncryptionConfigurationNotFoundError => StatusCode::NOT_FOUND,
            BucketAlreadyExists | BucketAlreadyOwnedByYou | BucketNotEmpty | InvalidBucketState => {
                StatusCode::CONFLICT
            }
            InvalidRange | InvalidPartNumber => StatusCode::RANGE_NOT_SATISFIABLE,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            MissingContentLength => StatusCode::LENGTH_REQUIRED,
            PreconditionFailed => StatusCode::PRECONDITION_FAILED,
            NotImplemented => StatusCode::NOT_IMPLEMENTED,
            InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            SlowDown | ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            InsufficientStorage => StatusCode::INSUFFICIENT_STORAGE,
            AuthorizationHeaderMalformed
            | AuthorizationQueryParametersError
            | AccessControlListNotSupported
            | BadDigest
            | BadRequest
            | EntityTooLarge
            | EntityTooSmall
            | IncompleteBody
            | InvalidArgument
            | KmsNotFound
            | KmsDisabled
            | InvalidBucketAclWithObjectOwnership
            | IdempotencyParameterMismatch
            | InvalidWriteOffset
            | TooManyParts
            | InvalidBucketName
            | InvalidDigest
            | IllegalLocationConstraintException
            | InvalidLocationConstraint
            | InvalidPart
            | InvalidPartOrder
            | InvalidRequest
            | InvalidStorageClass
            | InvalidTag
            | KeyTooLongError
            | InvalidPolicyDocument
            | MalformedACLError
            | MalformedPOSTRequest
            | MalformedPolicy
            | MalformedXML
            | MaxPostPreDataLengthExceededError
            | MetadataTooLarge
            | MissingSecurityHeader
            | RequestTimeout
            | UnexpectedContent
            | UnresolvableGrantByEmailAddress
            | XAmzContentSHA256Mismatch => StatusCode::BAD_REQUEST,
        }
    }
}

/// An error as the client sees it: code, message and the resource it concerns.
#[derive(Debug, Clone)]
pub struct S3Error {
    pub code: S3ErrorCode,
    pub message: Cow<'static, str>,
    pub resource: Option<String>,
    /// Request id, filled in by the router just before rendering.
    pub request_id: Option<String>,
    /// What the answer carries beyond code and message: response headers (a delete
    /// marker's `x-amz-delete-marker` and `x-amz-version-id`, which HEAD answers carry
    /// without the body) and elements of the error document (the `<Region>` a request
    /// should have been signed for, which clients re-sign with).
    pub extras: Vec<Extra>,
}

/// One thing an error's answer carries beyond its code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extra {
    Header(&'static str, String),
    Element(&'static str, String),
}

impl S3Error {
    pub fn new(code: S3ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code,
            message: message.into(),
            resource: None,
            request_id: None,
            extras: Vec::new(),
        }
    }

    /// The error with AWS's default message for its code.
    pub fn from_code(code: S3ErrorCode) -> Self {
        Self::new(code, default_message(code))
    }

    pub fn with_resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    /// Adds a response header to the error's answer.
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.extras.push(Extra::Header(name, value.into()));
        self
    }

    /// Adds an element to the error document, after the message.
    pub fn with_element(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.extras.push(Extra::Element(name, value.into()));
        self
    }

    /// Wraps this error in an `io::Error` so that it can travel inside a body stream and be
    /// recovered intact by [`S3Error::from_io`].
    pub fn into_io(self) -> std::io::Error {
        std::io::Error::other(self)
    }

    /// Recovers an S3 error carried by an `io::Error` made with [`S3Error::into_io`].
    /// The error may sit deeper, behind the HTTP layer's own wrapping of a body error.
    pub fn from_io(err: &std::io::Error) -> Option<S3Error> {
        let mut next: Option<&(dyn std::error::Error + 'static)> =
            err.get_ref().map(|inner| inner as _);
        while let Some(inner) = next {
            if let Some(found) = inner.downcast_ref::<S3Error>() {
                return Some(found.clone());
            }
            next = inner.source();
        }
        None
    }

    /// Renders the S3 `<Error>` document.
    pub fn to_xml(&self) -> String {
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>");
        xml.push_str(self.code.as_str());
        xml.push_str("</Code><Message>");
        xml.push_str(&escape(&self.message));
        xml.push_str("</Message>");
        for extra in &self.extras {
            let Extra::Element(name, value) = extra else {
                continue;
            };
            xml.push_str(&format!("<{name}>{}</{name}>", escape(value)));
        }
        if let Some(resource) = &self.resource {
            xml.push_str("<Resource>");
            xml.push_str(&escape(resource));
            xml.push_str("</Resource>");
        }
        if let Some(id) = &self.request_id {
            xml.push_str("<RequestId>");
            xml.push_str(&escape(id));
            xml.push_str("</RequestId>");
        }
        xml.push_str("</Error>");
        xml
    }
}

impl std::fmt::Display for S3Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for S3Error {}

impl IntoResponse for S3Error {
    fn into_response(self) -> Response {
        let status = self.code.status();
        let mut builder = Response::builder()
            .status(status)
            .header("content-type", "application/xml");
        if let Some(id) = &self.request_id {
            builder = builder.header("x-amz-request-id", id.as_str());
        }
        for extra in &self.extras {
            let Extra::Header(name, value) = extra else {
                continue;
            };
            if let Ok(value) = axum::http::HeaderValue::from_str(value) {
                builder = builder.header(*name, value);
            }
        }
        // HEAD responses carry no body; hyper drops it, the status tells the client.
        builder
            .body(axum::body::Body::from(self.to_xml()))
            .expect("static header names are valid")
    }
}

fn escape(text: &str) -> String {
    quick_xml::escape::escape(text).into_owned()
}

fn default_message(code: S3ErrorCode) -> &'static str {
    use S3ErrorCode::*;
    match code {
        AccessDenied => "Access Denied",
        AccessForbidden => "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.",
        AuthorizationHeaderMalformed => "The authorization header is malformed.",
        AuthorizationQueryParametersError => "Error parsing the X-Amz-Credential parameter.",
        BadDigest => "The Content-MD5 you specified did not match what we received.",
        BadRequest => "Insufficient information. Origin request header needed.",
        BucketAlreadyExists => {
            "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again."
        }
        BucketAlreadyOwnedByYou => {
            "Your previous request to create the named bucket succeeded and you already own it."
        }
        BucketNotEmpty => "The bucket you tried to delete is not empty",
        EntityTooLarge => "Your proposed upload exceeds the maximum allowed object size.",
        EntityTooSmall => "Your proposed upload is smaller than the minimum allowed object size.",
        IncompleteBody => "You did not provide the number of bytes specified by the Content-Length HTTP header.",
        InternalError => "We encountered an internal error. Please try again.",
        InvalidAccessKeyId => "The AWS Access Key Id you provided does not exist in our records.",
        InvalidArgument => "Invalid Argument",
        InvalidBucketName => "The specified bucket is not valid.",
        InvalidDigest => "The Content-MD5 you specified is not valid.",
        IllegalLocationConstraintException => "The location constraint is incompatible for the region specific endpoint this request was sent to.",
        InvalidLocationConstraint => "The specified location constraint is not valid.",
        InvalidPart => "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
        InvalidPartNumber => "The requested partnumber is not satisfiable",
        InvalidPartOrder => "The list of parts was not in ascending order. Parts must be ordered by part number.",
        InvalidRange => "The requested range is not satisfiable",
        InvalidRequest => "Invalid Request",
        InvalidStorageClass => "The storage class you specified is not valid",
        InvalidTag => "The tag provided was not a valid tag.",
        KeyTooLongError => "Your key is too long",
        InvalidPolicyDocument => "The content of the form does not meet the conditions specified in the policy document.",
        MalformedPOSTRequest => "The body of your POST request is not well-formed multipart/form-data.",
        MalformedPolicy => "Policies must be valid JSON and the first byte must be '{'",
        MaxPostPreDataLengthExceededError => "Your POST request fields preceding the upload file were too large.",
        MalformedXML => "The XML you provided was not well-formed or did not validate against our published schema.",
        MetadataTooLarge => "Your metadata headers exceed the maximum allowed metadata size.",
        MethodNotAllowed => "The specified method is not allowed against this resource.",
        MissingContentLength => "You must provide the Content-Length HTTP header.",
        NoSuchBucket => "The specified bucket does not exist",
        NoSuchBucketPolicy => "The bucket policy does not exist",
        NoSuchCORSConfiguration => "The CORS configuration does not exist",
        NoSuchLifecycleConfiguration => "The lifecycle configuration does not exist",
        NoSuchKey => "The specified key does not exist.",
        NoSuchObjectLockConfiguration => "The specified object does not have a ObjectLock configuration",
        ObjectLockConfigurationNotFoundError => "Object Lock configuration does not exist for this bucket",
        InvalidBucketState => "The request is not valid with the current state of the bucket.",
        InvalidBucketAclWithObjectOwnership => {
            "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting"
        }
        AccessControlListNotSupported => "The bucket does not allow ACLs",
        MalformedACLError => "The XML you provided was not well-formed or did not validate against our published schema",
        NoSuchPublicAccessBlockConfiguration => "The public access block configuration was not found",
        OwnershipControlsNotFoundError => "The bucket ownership controls were not found",
        ServerSideEncryptionConfigurationNotFoundError => {
            "The server side encryption configuration was not found"
        }
        KmsNotFound => "Invalid keyId",
        KmsDisabled => "The KMS key is disabled",
        UnresolvableGrantByEmailAddress => "The e-mail address you provided does not match any account on record.",
        UnexpectedContent => "This request does not support content",
        RequestTimeout => "Your socket connection to the server was not read from or written to within the timeout period. Idle connections will be closed.",
        MissingSecurityHeader => "Your request was missing a required header",
        NoSuchTagSet => "The TagSet does not exist",
        NoSuchUpload => "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
        NoSuchVersion => "The specified version does not exist.",
        NotImplemented => "A header or query you provided implies functionality that is not implemented.",
        IdempotencyParameterMismatch => "Parameters on this idempotent request are inconsistent with parameters used in previous request(s).",
        InvalidWriteOffset => "The write offset value that you specified does not match the current object size.",
        TooManyParts => "You have attempted to add more parts than the maximum of 10000 that are allowed for this object. Copy the object (CopyObject) to rewrite it as one, then append to the copy.",
        PreconditionFailed => "At least one of the pre-conditions you specified did not hold",
        RequestTimeTooSkewed => "The difference between the request time and the server's time is too large.",
        SignatureDoesNotMatch => "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
        SlowDown => "Please reduce your request rate.",
        ServiceUnavailable => "The service is unavailable: not enough drives are online to serve this request. Please try again.",
        InsufficientStorage => "Storage backend has reached its minimum free drive threshold. Please delete a few objects to proceed.",
        XAmzContentSHA256Mismatch => "The provided 'x-amz-content-sha256' header does not match what was computed.",
    }
}

/// What each object-layer outcome is to an S3 client.
/// S3's answer to a policy document it refuses.
impl From<crate::iam::MalformedPolicy> for S3Error {
    fn from(err: crate::iam::MalformedPolicy) -> Self {
        S3Error::new(S3ErrorCode::MalformedPolicy, err.0)
    }
}

/// S3's answer to lifecycle rules it refuses.
impl From<crate::lifecycle::RuleError> for S3Error {
    fn from(err: crate::lifecycle::RuleError) -> Self {
        match err {
            crate::lifecycle::RuleError::MalformedXml(message) => {
                S3Error::new(S3ErrorCode::MalformedXML, message)
            }
            crate::lifecycle::RuleError::InvalidArgument(message) => {
                S3Error::new(S3ErrorCode::InvalidArgument, message)
            }
        }
    }
}

/// S3's answers when an object key cannot be made or reopened.
impl From<crate::encryption::EncryptionError> for S3Error {
    fn from(err: crate::encryption::EncryptionError) -> Self {
        use crate::encryption::EncryptionError as E;
        use crate::kms::KmsError;
        use S3ErrorCode as C;
        match err {
            E::CustomerKeyRequired => S3Error::new(
                C::InvalidRequest,
                "The object was stored using a form of Server Side Encryption. The correct \
                 parameters must be provided to retrieve the object.",
            ),
            E::CustomerKeyNotApplicable => S3Error::new(
                C::InvalidRequest,
                "The encryption parameters are not applicable to this object.",
            ),
            E::CustomerKeyMismatch => S3Error::from_code(C::AccessDenied),
            E::NoKmsKey => S3Error::new(C::InvalidArgument, "No KMS key was given"),
            E::Kms(KmsError::NoSuchKey(id)) => {
                S3Error::new(C::KmsNotFound, format!("Invalid keyId {id}"))
            }
            E::Kms(KmsError::KeyDisabled(id)) => {
                S3Error::new(C::KmsDisabled, format!("The KMS key {id} is disabled"))
            }
            E::Kms(KmsError::Invalid(message)) => S3Error::new(C::InvalidArgument, message),
            // A stored key that no longer opens: the cause goes to the log.
            other => S3Error::new(C::InternalError, other.to_string()),
        }
    }
}

impl From<ObjectError> for S3Error {
    fn from(err: ObjectError) -> Self {
        use S3ErrorCode as C;
        match err {
            ObjectError::NoSuchBucket => S3Error::from_code(C::NoSuchBucket),
            ObjectError::BucketExists => S3Error::from_code(C::BucketAlreadyOwnedByYou),
            ObjectError::BucketNotEmpty => S3Error::from_code(C::BucketNotEmpty),
            ObjectError::InvalidBucketName(_) => S3Error::from_code(C::InvalidBucketName),
            ObjectError::NoSuchKey => S3Error::from_code(C::NoSuchKey),
            ObjectError::NoSuchVersion => S3Error::from_code(C::NoSuchVersion),
            // A GET of a key whose newest version is a delete marker finds no key; one that
            // names the marker asks for something a marker cannot give. Both say what they hit.
            ObjectError::DeleteMarker {
                version_id,
                by_version,
            } => S3Error::from_code(if by_version {
                C::MethodNotAllowed
            } else {
                C::NoSuchKey
            })
            .with_header("x-amz-delete-marker", "true")
            .with_header("x-amz-version-id", version_id),
            ObjectError::Tier(e) => S3Error::new(C::ServiceUnavailable, e.to_string()),
            ObjectError::Encryption(e) => e.into(),
            ObjectError::KmsUnavailable => S3Error::from_code(C::ServiceUnavailable),
            ObjectError::ControlPlaneUnavailable => S3Error::new(
                C::ServiceUnavailable,
                ObjectError::ControlPlaneUnavailable.to_string(),
            ),
            ObjectError::KmsNotConfigured => S3Error::new(
                C::NotImplemented,
                "Server side encryption specified but KMS is not configured",
            ),
            ObjectError::KeyTooLong => S3Error::from_code(C::KeyTooLongError),
            ObjectError::NoSuchUpload => S3Error::from_code(C::NoSuchUpload),
            ObjectError::InvalidPart => S3Error::from_code(C::InvalidPart),
            ObjectError::InvalidPartOrder => S3Error::from_code(C::InvalidPartOrder),
            ObjectError::EntityTooSmall(_) => S3Error::from_code(C::EntityTooSmall),
            ObjectError::BadDigest => S3Error::from_code(C::BadDigest),
            ObjectError::ChecksumMismatch(algorithm) => S3Error::new(
                C::BadDigest,
                format!(
                    "The {} you specified did not match the calculated checksum.",
                    algorithm.header_name()
                ),
            ),
            ObjectError::InvalidRange(_) => S3Error::from_code(C::InvalidRange),
            ObjectError::InvalidPartNumber => S3Error::from_code(C::InvalidPartNumber),
            ObjectError::PreconditionFailed => S3Error::from_code(C::PreconditionFailed),
            ObjectError::InvalidArgument(message) => S3Error::new(C::InvalidArgument, message),
            ObjectError::InvalidRequest(message) => S3Error::new(C::InvalidRequest, message),
            ObjectError::NoObjectLock => S3Error::new(
                C::InvalidRequest,
                "Bucket is missing Object Lock Configuration",
            ),
            ObjectError::InvalidBucketState(message) => {
                S3Error::new(C::InvalidBucketState, message)
            }
            ObjectError::ObjectLocked => S3Error::new(
                C::AccessDenied,
                "Access Denied because object protected by object lock.",
            ),
            // Writers on other servers kept winning the race for this key: back off.
            ObjectError::Conflict => S3Error::from_code(C::SlowDown),
            ObjectError::Unavailable(_) => S3Error::from_code(C::ServiceUnavailable),
            // Clients retry a 503; the retry finds the key in the pool it moved to.
            ObjectError::Moved => S3Error::from_code(C::ServiceUnavailable),
            ObjectError::DriveFull => S3Error::from_code(C::InsufficientStorage),
            ObjectError::Body(io) => {
                S3Error::from_io(&io).unwrap_or_else(|| S3Error::from_code(C::IncompleteBody))
            }
            ObjectError::Erasure(other) => S3Error::new(C::InternalError, other.to_string()),
            ObjectError::NotImplemented(message) => S3Error::new(C::NotImplemented, message),
            ObjectError::IdempotencyMismatch => S3Error::from_code(C::IdempotencyParameterMismatch),
            ObjectError::InvalidWriteOffset => S3Error::from_code(C::InvalidWriteOffset),
            ObjectError::TooManyParts => S3Error::from_code(C::TooManyParts),
            ObjectError::Internal(message) => S3Error::new(C::InternalError, message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_xml_is_s3_shaped() {
        let mut err = S3Error::from_code(S3ErrorCode::NoSuchKey).with_resource("/b/k&1");
        err.request_id = Some("ID1".into());
        assert_eq!(
            err.to_xml(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>\
             <Message>The specified key does not exist.</Message><Resource>/b/k&amp;1</Resource>\
             <RequestId>ID1</RequestId></Error>"
        );
        assert_eq!(err.code.status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn errors_carry_their_headers() {
        let err = S3Error::from_code(S3ErrorCode::NoSuchKey)
            .with_header("x-amz-delete-marker", "true")
            .with_header("x-amz-version-id", "null");
        let response = err.into_response();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert_eq!(response.headers()["x-amz-delete-marker"], "true");
        assert_eq!(response.headers()["x-amz-version-id"], "null");
        assert_eq!(
            S3ErrorCode::NoSuchVersion.status(),
            StatusCode::NOT_FOUND,
            "NoSuchVersion is a 404"
        );
    }

    #[test]
    fn s3_error_survives_a_trip_through_io_error() {
        let io = S3Error::from_code(S3ErrorCode::BadDigest).into_io();
        assert_eq!(S3Error::from_io(&io).unwrap().code, S3ErrorCode::BadDigest);
    }
}
