//! Turns method + path + query + headers into a typed S3 operation.

use axum::http::{HeaderMap, Method, Uri};
use percent_encoding::percent_decode_str;

use super::error::{S3Error, S3ErrorCode};
use crate::object::{BucketName, ObjectKey, VersionId, MAX_PART_NUMBER};

/// The S3 operations Strata serves, with their bucket, key, version and part validated once
/// here. Everything else is `NotImplemented`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    ListBuckets,
    CreateBucket {
        bucket: BucketName,
    },
    HeadBucket {
        bucket: BucketName,
    },
    DeleteBucket {
        bucket: BucketName,
    },
    GetBucketLocation {
        bucket: BucketName,
    },
    ListObjectsV1 {
        bucket: BucketName,
    },
    ListObjectsV2 {
        bucket: BucketName,
        /// MinIO's `metadata=true`: each entry carries its user metadata and tags.
        with_metadata: bool,
    },
    PutObject {
        bucket: BucketName,
        key: ObjectKey,
    },
    /// A PutObject with `x-amz-write-offset-bytes`: the same handler, its own name in the
    /// logs and metrics.
    AppendObject {
        bucket: BucketName,
        key: ObjectKey,
    },
    GetObject {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    HeadObject {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    DeleteObject {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    CopyObject {
        bucket: BucketName,
        key: ObjectKey,
    },
    /// `PUT /{key}?renameObject` with `x-amz-rename-source`: `key` is the new name.
    RenameObject {
        bucket: BucketName,
        key: ObjectKey,
    },
    GetObjectAttributes {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    /// `GET /{key}?torrent`: a BitTorrent file of the newest version.
    GetObjectTorrent {
        bucket: BucketName,
        key: ObjectKey,
    },
    GetObjectTagging {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    PutObjectTagging {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    DeleteObjectTagging {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    GetBucketTagging {
        bucket: BucketName,
    },
    PutBucketTagging {
        bucket: BucketName,
    },
    DeleteBucketTagging {
        bucket: BucketName,
    },
    GetBucketCors {
        bucket: BucketName,
    },
    GetBucketLifecycle {
        bucket: BucketName,
    },
    PutBucketLifecycle {
        bucket: BucketName,
    },
    DeleteBucketLifecycle {
        bucket: BucketName,
    },
    PutBucketCors {
        bucket: BucketName,
    },
    DeleteBucketCors {
        bucket: BucketName,
    },
    GetBucketPolicy {
        bucket: BucketName,
    },
    GetBucketVersioning {
        bucket: BucketName,
    },
    PutBucketVersioning {
        bucket: BucketName,
    },
    ListObjectVersions {
        bucket: BucketName,
    },
    PutObjectLockConfiguration {
        bucket: BucketName,
    },
    GetObjectLockConfiguration {
        bucket: BucketName,
    },
    PutObjectRetention {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    GetObjectRetention {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    PutObjectLegalHold {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    GetObjectLegalHold {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    PutBucketPolicy {
        bucket: BucketName,
    },
    DeleteBucketPolicy {
        bucket: BucketName,
    },
    GetBucketPolicyStatus {
        bucket: BucketName,
    },
    GetBucketAcl {
        bucket: BucketName,
    },
    PutBucketAcl {
        bucket: BucketName,
    },
    GetObjectAcl {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    PutObjectAcl {
        bucket: BucketName,
        key: ObjectKey,
        /// `?versionId=`: the version to act on (`null` names the null version).
        version_id: Option<VersionId>,
    },
    GetBucketOwnershipControls {
        bucket: BucketName,
    },
    PutBucketOwnershipControls {
        bucket: BucketName,
    },
    DeleteBucketOwnershipControls {
        bucket: BucketName,
    },
    GetPublicAccessBlock {
        bucket: BucketName,
    },
    PutPublicAccessBlock {
        bucket: BucketName,
    },
    DeletePublicAccessBlock {
        bucket: BucketName,
    },
    GetBucketEncryption {
        bucket: BucketName,
    },
    PutBucketEncryption {
        bucket: BucketName,
    },
    DeleteBucketEncryption {
        bucket: BucketName,
    },
    /// A browser's CORS preflight `OPTIONS` request, for a bucket or an object in it.
    CorsPreflight {
        bucket: BucketName,
    },
    CreateMultipartUpload {
        bucket: BucketName,
        key: ObjectKey,
    },
    UploadPartCopy {
        bucket: BucketName,
        key: ObjectKey,
        upload_id: String,
        part_number: PartNumber,
    },
    ListParts {
        bucket: BucketName,
        key: ObjectKey,
        upload_id: String,
    },
    ListMultipartUploads {
        bucket: BucketName,
    },
    DeleteObjects {
        bucket: BucketName,
    },
    /// A browser form upload (`multipart/form-data`) signed by a POST policy.
    PostObject {
        bucket: BucketName,
    },
    UploadPart {
        bucket: BucketName,
        key: ObjectKey,
        upload_id: String,
        part_number: PartNumber,
    },
    CompleteMultipartUpload {
        bucket: BucketName,
        key: ObjectKey,
        upload_id: String,
    },
    AbortMultipartUpload {
        bucket: BucketName,
        key: ObjectKey,
        upload_id: String,
    },
}

impl Endpoint {
    /// Endpoints served without a signature and not authorised by `crate::iam::authorize`
    /// before their handler: a browser's CORS preflight carries none, and a POST Object form
    /// carries its own (the handler verifies the policy signature and authorises the upload).
    pub fn is_anonymous(&self) -> bool {
        matches!(
            self,
            Endpoint::CorsPreflight { .. } | Endpoint::PostObject { .. }
        )
    }

    /// The operation name, for logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Endpoint::ListBuckets => "ListBuckets",
            Endpoint::CreateBucket { .. } => "CreateBucket",
            Endpoint::HeadBucket { .. } => "HeadBucket",
            Endpoint::DeleteBucket { .. } => "DeleteBucket",
            Endpoint::GetBucketLocation { .. } => "GetBucketLocation",
            Endpoint::ListObjectsV1 { .. } => "ListObjects",
            Endpoint::ListObjectsV2 { .. } => "ListObjectsV2",
            Endpoint::PutObject { .. } => "PutObject",
            Endpoint::AppendObject { .. } => "AppendObject",
            Endpoint::GetObject { .. } => "GetObject",
            Endpoint::HeadObject { .. } => "HeadObject",
            Endpoint::DeleteObject { .. } => "DeleteObject",
            Endpoint::CopyObject { .. } => "CopyObject",
            Endpoint::RenameObject { .. } => "RenameObject",
            Endpoint::GetObjectAttributes { .. } => "GetObjectAttributes",
            Endpoint::GetObjectTorrent { .. } => "GetObjectTorrent",
            Endpoint::GetObjectTagging { .. } => "GetObjectTagging",
            Endpoint::PutObjectTagging { .. } => "PutObjectTagging",
            Endpoint::DeleteObjectTagging { .. } => "DeleteObjectTagging",
            Endpoint::GetBucketTagging { .. } => "GetBucketTagging",
            Endpoint::PutBucketTagging { .. } => "PutBucketTagging",
            Endpoint::DeleteBucketTagging { .. } => "DeleteBucketTagging",
            Endpoint::GetBucketCors { .. } => "GetBucketCors",
            Endpoint::GetBucketLifecycle { .. } => "GetBucketLifecycleConfiguration",
            Endpoint::PutBucketLifecycle { .. } => "PutBucketLifecycleConfiguration",
            Endpoint::DeleteBucketLifecycle { .. } => "DeleteBucketLifecycle",
            Endpoint::PutBucketCors { .. } => "PutBucketCors",
            Endpoint::DeleteBucketCors { .. } => "DeleteBucketCors",
            Endpoint::GetBucketPolicy { .. } => "GetBucketPolicy",
            Endpoint::PutBucketPolicy { .. } => "PutBucketPolicy",
            Endpoint::DeleteBucketPolicy { .. } => "DeleteBucketPolicy",
            Endpoint::GetBucketPolicyStatus { .. } => "GetBucketPolicyStatus",
            Endpoint::GetBucketAcl { .. } => "GetBucketAcl",
            Endpoint::PutBucketAcl { .. } => "PutBucketAcl",
            Endpoint::GetObjectAcl { .. } => "GetObjectAcl",
            Endpoint::PutObjectAcl { .. } => "PutObjectAcl",
            Endpoint::GetBucketOwnershipControls { .. } => "GetBucketOwnershipControls",
            Endpoint::PutBucketOwnershipControls { .. } => "PutBucketOwnershipControls",
            Endpoint::DeleteBucketOwnershipControls { .. } => "DeleteBucketOwnershipControls",
            Endpoint::GetPublicAccessBlock { .. } => "GetPublicAccessBlock",
            Endpoint::PutPublicAccessBlock { .. } => "PutPublicAccessBlock",
            Endpoint::DeletePublicAccessBlock { .. } => "DeletePublicAccessBlock",
            Endpoint::GetBucketEncryption { .. } => "GetBucketEncryption",
            Endpoint::PutBucketEncryption { .. } => "PutBucketEncryption",
            Endpoint::DeleteBucketEncryption { .. } => "DeleteBucketEncryption",
            Endpoint::GetBucketVersioning { .. } => "GetBucketVersioning",
            Endpoint::PutBucketVersioning { .. } => "PutBucketVersioning",
            Endpoint::ListObjectVersions { .. } => "ListObjectVersions",
            Endpoint::PutObjectLockConfiguration { .. } => "PutObjectLockConfiguration",
            Endpoint::GetObjectLockConfiguration { .. } => "GetObjectLockConfiguration",
            Endpoint::PutObjectRetention { .. } => "PutObjectRetention",
            Endpoint::GetObjectRetention { .. } => "GetObjectRetention",
            Endpoint::PutObjectLegalHold { .. } => "PutObjectLegalHold",
            Endpoint::GetObjectLegalHold { .. } => "GetObjectLegalHold",
            Endpoint::CorsPreflight { .. } => "CorsPreflight",
            Endpoint::CreateMultipartUpload { .. } => "CreateMultipartUpload",
            Endpoint::UploadPart { .. } => "UploadPart",
            Endpoint::UploadPartCopy { .. } => "UploadPartCopy",
            Endpoint::ListParts { .. } => "ListParts",
            Endpoint::ListMultipartUploads { .. } => "ListMultipartUploads",
            Endpoint::DeleteObjects { .. } => "DeleteObjects",
            Endpoint::PostObject { .. } => "PostObject",
            Endpoint::CompleteMultipartUpload { .. } => "CompleteMultipartUpload",
            Endpoint::AbortMultipartUpload { .. } => "AbortMultipartUpload",
        }
    }
}

pub use crate::query::Query;

/// A part number of a multipart upload: 1 to 10,000.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartNumber(u32);

impl PartNumber {
    pub fn parse(text: &str) -> Result<Self, S3Error> {
        match text.parse() {
            Ok(number) if (1..=MAX_PART_NUMBER).contains(&number) => Ok(Self(number)),
            _ => Err(S3Error::new(
                S3ErrorCode::InvalidArgument,
                "Part number must be an integer between 1 and 10000, inclusive",
            )),
        }
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

/// Parameters of `query` that are neither signing parameters nor in `allowed`.
fn unknown_params<'a>(query: &'a Query, allowed: &'a [&str]) -> impl Iterator<Item = &'a str> + 'a {
    query.names().filter(move |k| {
        !allowed.contains(k)
            && !k.to_ascii_lowercase().starts_with("x-amz-")
            && !SIGV2_PARAMS.contains(k)
            && *k != "x-id"
            && !k.starts_with("response-")
    })
}

/// The parameters of a SigV2 presigned URL (the standard headers signed may ride along).
const SIGV2_PARAMS: &[&str] = &[
    "AWSAccessKeyId",
    "Signature",
    "Expires",
    "content-type",
    "content-md5",
];

const LIST_V2_PARAMS: &[&str] = &[
    "list-type",
    "prefix",
    "delimiter",
    "max-keys",
    "continuation-token",
    "start-after",
    "encoding-type",
    "fetch-owner",
    "metadata",
];
const LIST_V1_PARAMS: &[&str] = &["prefix", "delimiter", "max-keys", "marker", "encoding-type"];
const LIST_VERSIONS_PARAMS: &[&str] = &[
    "versions",
    "prefix",
    "delimiter",
    "key-marker",
    "version-id-marker",
    "max-keys",
    "encoding-type",
];
const LIST_UPLOADS_PARAMS: &[&str] = &[
    "uploads",
    "prefix",
    "delimiter",
    "key-marker",
    "upload-id-marker",
    "max-uploads",
    "encoding-type",
];

/// The object a copy reads: `x-amz-copy-source: [/]bucket/key[?versionId=…]`, URL-encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopySource {
    pub bucket: String,
    pub key: String,
    pub version: Option<String>,
}

/// Parses `x-amz-copy-source`; `None` when it is absent or names no bucket and key.
pub fn copy_source(headers: &HeaderMap) -> Option<CopySource> {
    let raw = headers.get("x-amz-copy-source")?.to_str().ok()?;
    let decoded = percent_decode_str(raw).decode_utf8().ok()?;
    let (path, version) = match decoded.split_once("?versionId=") {
        Some((path, version)) => (path, Some(version.to_string())),
        None => (&*decoded, None),
    };
    let (bucket, key) = bucket_and_key_of(path)?;
    Some(CopySource {
        bucket,
        key,
        version,
    })
}

/// `[/]bucket/key`, as a copy or rename source names an object; `None` without both.
fn bucket_and_key_of(path: &str) -> Option<(String, String)> {
    let path = path.strip_prefix('/').unwrap_or(path);
    let (bucket, key) = path.split_once('/')?;
    (!key.is_empty()).then(|| (bucket.to_string(), key.to_string()))
}

/// The object a rename moves: `x-amz-rename-source: [/]bucket/key`, URL-encoded, as
/// `(bucket, key)`; `None` when it is absent or names no bucket and key.
pub fn rename_source(headers: &HeaderMap) -> Option<(String, String)> {
    let raw = headers.get("x-amz-rename-source")?.to_str().ok()?;
    bucket_and_key_of(&percent_decode_str(raw).decode_utf8().ok()?)
}

/// The bucket a request's `Host` names when it is `bucket.DOMAIN` (virtual-hosted style).
/// The bucket a virtual-hosted request (`bucket.DOMAIN`) names; `None` for path style.
pub fn virtual_host_bucket(uri: &Uri, headers: &HeaderMap, domain: Option<&str>) -> Option<String> {
    let domain = domain?;
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.host())?;
    // Drop a port; an IPv6 literal has no bucket in it anyway.
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    let bucket = host
        .to_ascii_lowercase()
        .strip_suffix(domain)?
        .strip_suffix('.')?
        .to_string();
    (!bucket.is_empty()).then_some(bucket)
}

/// The bucket and key a request addresses: `bucket.DOMAIN/key` or path-style `/bucket/key`.
pub fn bucket_and_key(
    uri: &Uri,
    headers: &HeaderMap,
    domain: Option<&str>,
) -> Result<(String, String), S3Error> {
    let path = percent_decode_str(uri.path()).decode_utf8().map_err(|_| {
        S3Error::new(
            S3ErrorCode::InvalidArgument,
            "the request path is not valid UTF-8",
        )
    })?;
    let path = path.strip_prefix('/').unwrap_or(&path);
    if let Some(bucket) = virtual_host_bucket(uri, headers, domain) {
        return Ok((bucket, path.to_string()));
    }
    Ok(match path.split_once('/') {
        Some((b, k)) => (b.to_string(), k.to_string()),
        None => (path.to_string(), String::new()),
    })
}

/// Parses a request into an endpoint.
pub fn parse(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    domain: Option<&str>,
) -> Result<Endpoint, S3Error> {
    let (bucket, key) = bucket_and_key(uri, headers, domain)?;
    let query = Query::parse(uri.query());
    let copy = headers.contains_key("x-amz-copy-source");
    let not_implemented = || {
        let what = query
            .names()
            .next()
            .map(|k| format!("the '{k}' subresource"))
            .unwrap_or_else(|| format!("{method} on this resource"));
        Err(S3Error::new(
            S3ErrorCode::NotImplemented,
            format!("Strata does not implement {what} yet."),
        ))
    };
    let only = |allowed: &[&str], endpoint: Endpoint| {
        if unknown_params(&query, allowed).next().is_some() {
            not_implemented()
        } else {
            Ok(endpoint)
        }
    };

    if bucket.is_empty() {
        return match *method {
            Method::GET => only(
                &[
                    "max-buckets",
                    "continuation-token",
                    "prefix",
                    "bucket-region",
                ],
                Endpoint::ListBuckets,
            ),
            _ => not_implemented(),
        };
    }
    let bucket = BucketName::parse(&bucket)?;
    if *method == Method::OPTIONS {
        return Ok(Endpoint::CorsPreflight { bucket });
    }
    if key.is_empty() {
        return match *method {
            Method::PUT if query.has("tagging") => {
                only(&["tagging"], Endpoint::PutBucketTagging { bucket })
            }
            Method::GET if query.has("tagging") => {
                only(&["tagging"], Endpoint::GetBucketTagging { bucket })
            }
            Method::DELETE if query.has("tagging") => {
                only(&["tagging"], Endpoint::DeleteBucketTagging { bucket })
            }
            Method::PUT if query.has("lifecycle") => {
                only(&["lifecycle"], Endpoint::PutBucketLifecycle { bucket })
            }
            Method::GET if query.has("lifecycle") => {
                only(&["lifecycle"], Endpoint::GetBucketLifecycle { bucket })
            }
            Method::DELETE if query.has("lifecycle") => {
                only(&["lifecycle"], Endpoint::DeleteBucketLifecycle { bucket })
            }
            Method::PUT if query.has("cors") => only(&["cors"], Endpoint::PutBucketCors { bucket }),
            Method::GET if query.has("cors") => only(&["cors"], Endpoint::GetBucketCors { bucket }),
            Method::DELETE if query.has("cors") => {
                only(&["cors"], Endpoint::DeleteBucketCors { bucket })
            }
            Method::PUT if query.has("policy") => {
                only(&["policy"], Endpoint::PutBucketPolicy { bucket })
            }
            Method::GET if query.has("policy") => {
                only(&["policy"], Endpoint::GetBucketPolicy { bucket })
            }
            Method::DELETE if query.has("policy") => {
                only(&["policy"], Endpoint::DeleteBucketPolicy { bucket })
            }
            Method::GET if query.has("policyStatus") => only(
                &["policyStatus"],
                Endpoint::GetBucketPolicyStatus { bucket },
            ),
            Method::GET if query.has("acl") => only(&["acl"], Endpoint::GetBucketAcl { bucket }),
            Method::PUT if query.has("acl") => only(&["acl"], Endpoint::PutBucketAcl { bucket }),
            Method::GET if query.has("ownershipControls") => only(
                &["ownershipControls"],
                Endpoint::GetBucketOwnershipControls { bucket },
            ),
            Method::PUT if query.has("ownershipControls") => only(
                &["ownershipControls"],
                Endpoint::PutBucketOwnershipControls { bucket },
            ),
            Method::DELETE if query.has("ownershipControls") => only(
                &["ownershipControls"],
                Endpoint::DeleteBucketOwnershipControls { bucket },
            ),
            Method::GET if query.has("publicAccessBlock") => only(
                &["publicAccessBlock"],
                Endpoint::GetPublicAccessBlock { bucket },
            ),
            Method::PUT if query.has("publicAccessBlock") => only(
                &["publicAccessBlock"],
                Endpoint::PutPublicAccessBlock { bucket },
            ),
            Method::DELETE if query.has("publicAccessBlock") => only(
                &["publicAccessBlock"],
                Endpoint::DeletePublicAccessBlock { bucket },
            ),
            Method::GET if query.has("encryption") => {
                only(&["encryption"], Endpoint::GetBucketEncryption { bucket })
            }
            Method::PUT if query.has("encryption") => {
                only(&["encryption"], Endpoint::PutBucketEncryption { bucket })
            }
            Method::DELETE if query.has("encryption") => {
                only(&["encryption"], Endpoint::DeleteBucketEncryption { bucket })
            }
            Method::PUT if query.has("versioning") => {
                only(&["versioning"], Endpoint::PutBucketVersioning { bucket })
            }
            Method::GET if query.has("versioning") => {
                only(&["versioning"], Endpoint::GetBucketVersioning { bucket })
            }
            Method::PUT if query.has("object-lock") => only(
                &["object-lock"],
                Endpoint::PutObjectLockConfiguration { bucket },
            ),
            Method::GET if query.has("object-lock") => only(
                &["object-lock"],
                Endpoint::GetObjectLockConfiguration { bucket },
            ),
            Method::GET if query.has("versions") => only(
                LIST_VERSIONS_PARAMS,
                Endpoint::ListObjectVersions { bucket },
            ),
            Method::PUT => only(&[], Endpoint::CreateBucket { bucket }),
            Method::HEAD => only(&[], Endpoint::HeadBucket { bucket }),
            Method::DELETE => only(&[], Endpoint::DeleteBucket { bucket }),
            Method::POST if query.has("delete") => {
                only(&["delete"], Endpoint::DeleteObjects { bucket })
            }
            Method::POST
                if super::headers::header(headers, "content-type")
                    .is_some_and(|v| v.to_ascii_lowercase().starts_with("multipart/form-data")) =>
            {
                only(&[], Endpoint::PostObject { bucket })
            }
            Method::GET if query.has("uploads") => only(
                LIST_UPLOADS_PARAMS,
                Endpoint::ListMultipartUploads { bucket },
            ),
            Method::GET if query.has("location") => {
                only(&["location"], Endpoint::GetBucketLocation { bucket })
            }
            Method::GET if query.get("list-type") == Some("2") => {
                let with_metadata = query.get("metadata") == Some("true");
                only(
                    LIST_V2_PARAMS,
                    Endpoint::ListObjectsV2 {
                        bucket,
                        with_metadata,
                    },
                )
            }
            Method::GET => only(LIST_V1_PARAMS, Endpoint::ListObjectsV1 { bucket }),
            _ => not_implemented(),
        };
    }
    let key = ObjectKey::parse(&key)?;
    // Checked once the request is known to be one that names a version.
    let version_id = || query.get("versionId").map(VersionId::parse).transpose();
    if query.has("attributes") {
        return match *method {
            Method::GET => only(
                &["attributes", "versionId"],
                Endpoint::GetObjectAttributes {
                    bucket,
                    key,
                    version_id: version_id()?,
                },
            ),
            _ => not_implemented(),
        };
    }
    if query.has("torrent") {
        return match *method {
            Method::GET => only(&["torrent"], Endpoint::GetObjectTorrent { bucket, key }),
            _ => not_implemented(),
        };
    }
    if query.has("renameObject") {
        return match *method {
            Method::PUT => only(&["renameObject"], Endpoint::RenameObject { bucket, key }),
            _ => not_implemented(),
        };
    }
    if query.has("tagging") {
        const TAGGING: &[&str] = &["tagging", "versionId"];
        return match *method {
            Method::PUT => only(
                TAGGING,
                Endpoint::PutObjectTagging {
                    bucket,
                    key,
                    version_id: version_id()?,
                },
            ),
            Method::GET => only(
                TAGGING,
                Endpoint::GetObjectTagging {
                    bucket,
                    key,
                    version_id: version_id()?,
                },
            ),
            Method::DELETE => only(
                TAGGING,
                Endpoint::DeleteObjectTagging {
                    bucket,
                    key,
                    version_id: version_id()?,
                },
            ),
            _ => not_implemented(),
        };
    }
    if query.has("acl") {
        const ACL: &[&str] = &["acl", "versionId"];
        return match *method {
            Method::PUT => only(
                ACL,
                Endpoint::PutObjectAcl {
                    bucket,
                    key,
                    version_id: version_id()?,
                },
            ),
            Method::GET => only(
                ACL,
                Endpoint::GetObjectAcl {
                    bucket,
                    key,
                    version_id: version_id()?,
                },
            ),
            _ => not_implemented(),
        };
    }
    if query.has("retention") {
        const RETENTION: &[&str] = &["retention", "versionId"];
        return match *method {
            Method::PUT => only(
                RETENTION,
                Endpoint::PutObjectRetention {
                    bucket,
                    key,
                    version_id: version_id()?,
                },
            ),
            Method::GET => only(
                RETENTION,
                Endpoint::GetObjectRetention {
                    bucket,
                    key,
                    version_id: version_id()?,
                },
            ),
            _ => not_implemented(),
        };
    }
    if query.has("legal-hold") {
        const LEGAL_HOLD: &[&str] = &["legal-hold", "versionId"];
        return match *method {
            Method::PUT => only(
                LEGAL_HOLD,
                Endpoint::PutObjectLegalHold {
                    bucket,
                    key,
                    version_id: version_id()?,
                },
            ),
            Method::GET => only(
                LEGAL_HOLD,
                Endpoint::GetObjectLegalHold {
                    bucket,
                    key,
                    version_id: version_id()?,
                },
            ),
            _ => not_implemented(),
        };
    }
    let upload_id = query.get("uploadId").map(str::to_string);
    let part_number = || PartNumber::parse(query.get("partNumber").unwrap_or(""));
    match (method.clone(), upload_id) {
        (Method::PUT, Some(upload_id)) if copy => only(
            &["uploadId", "partNumber"],
            Endpoint::UploadPartCopy {
                bucket,
                key,
                upload_id,
                part_number: part_number()?,
            },
        ),
        (Method::PUT, Some(upload_id)) => only(
            &["uploadId", "partNumber"],
            Endpoint::UploadPart {
                bucket,
                key,
                upload_id,
                part_number: part_number()?,
            },
        ),
        (Method::PUT, None) if copy => only(&[], Endpoint::CopyObject { bucket, key }),
        (Method::PUT, None) if headers.contains_key("x-amz-write-offset-bytes") => {
            only(&[], Endpoint::AppendObject { bucket, key })
        }
        (Method::PUT, None) => only(&[], Endpoint::PutObject { bucket, key }),
        (Method::GET, Some(upload_id)) => only(
            &["uploadId", "max-parts", "part-number-marker"],
            Endpoint::ListParts {
                bucket,
                key,
                upload_id,
            },
        ),
        (Method::GET, None) => only(
            &["partNumber", "versionId"],
            Endpoint::GetObject {
                bucket,
                key,
                version_id: version_id()?,
            },
        ),
        (Method::HEAD, None) => only(
            &["partNumber", "versionId"],
            Endpoint::HeadObject {
                bucket,
                key,
                version_id: version_id()?,
            },
        ),
        (Method::DELETE, None) => only(
            &["versionId"],
            Endpoint::DeleteObject {
                bucket,
                key,
                version_id: version_id()?,
            },
        ),
        (Method::DELETE, Some(upload_id)) => only(
            &["uploadId"],
            Endpoint::AbortMultipartUpload {
                bucket,
                key,
                upload_id,
            },
        ),
        (Method::POST, None) if query.has("uploads") => only(
            &["uploads"],
            Endpoint::CreateMultipartUpload { bucket, key },
        ),
        (Method::POST, Some(upload_id)) => only(
            &["uploadId"],
            Endpoint::CompleteMultipartUpload {
                bucket,
                key,
                upload_id,
            },
        ),
        _ => not_implemented(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: Method, uri: &str) -> Result<Endpoint, S3Error> {
        route_with(method, uri, HeaderMap::new())
    }

    fn route_with(method: Method, uri: &str, headers: HeaderMap) -> Result<Endpoint, S3Error> {
        parse(&method, &uri.parse().unwrap(), &headers, None)
    }

    #[test]
    fn virtual_hosted_requests_name_the_bucket_in_the_host() {
        let host = |h: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("host", h.parse().unwrap());
            headers
        };
        let parse_at = |h: &str, uri: &str| {
            parse(
                &Method::GET,
                &uri.parse().unwrap(),
                &host(h),
                Some("s3.example.com"),
            )
            .unwrap()
        };
        assert_eq!(
            parse_at("bucket.s3.example.com:9000", "/a/b.txt"),
            Endpoint::GetObject {
                bucket: b(),
                key: "a/b.txt".into(),
                version_id: None
            }
        );
        assert_eq!(
            parse_at("bucket.s3.example.com", "/?list-type=2"),
            Endpoint::ListObjectsV2 {
                bucket: b(),
                with_metadata: false
            }
        );
        // The bare domain, or another host, is path-style.
        assert_eq!(
            parse_at("s3.example.com", "/bucket/k"),
            Endpoint::GetObject {
                bucket: b(),
                key: "k".into(),
                version_id: None
            }
        );
        assert_eq!(
            parse_at("127.0.0.1:9000", "/bucket/k"),
            Endpoint::GetObject {
                bucket: b(),
                key: "k".into(),
                version_id: None
            }
        );
    }

    fn b() -> BucketName {
        "bucket".into()
    }

    #[test]
    fn requests_map_to_endpoints() {
        let k = || ObjectKey::from("photos/2006/puppy.jpg");
        let table = [
            (Method::GET, "/", Endpoint::ListBuckets),
            (
                Method::PUT,
                "/bucket",
                Endpoint::CreateBucket { bucket: b() },
            ),
            (
                Method::HEAD,
                "/bucket",
                Endpoint::HeadBucket { bucket: b() },
            ),
            (
                Method::DELETE,
                "/bucket/",
                Endpoint::DeleteBucket { bucket: b() },
            ),
            (
                Method::GET,
                "/bucket?location",
                Endpoint::GetBucketLocation { bucket: b() },
            ),
            (
                Method::GET,
                "/bucket?list-type=2&prefix=a&max-keys=2",
                Endpoint::ListObjectsV2 {
                    bucket: b(),
                    with_metadata: false,
                },
            ),
            (
                Method::POST,
                "/bucket?delete",
                Endpoint::DeleteObjects { bucket: b() },
            ),
            (
                Method::GET,
                "/bucket?uploads&prefix=p",
                Endpoint::ListMultipartUploads { bucket: b() },
            ),
            (
                Method::GET,
                "/bucket/k?uploadId=u1&max-parts=2",
                Endpoint::ListParts {
                    bucket: b(),
                    key: "k".into(),
                    upload_id: "u1".into(),
                },
            ),
            (
                Method::GET,
                "/bucket/k?partNumber=3",
                Endpoint::GetObject {
                    bucket: b(),
                    key: "k".into(),
                    version_id: None,
                },
            ),
            (
                Method::PUT,
                "/bucket?tagging",
                Endpoint::PutBucketTagging { bucket: b() },
            ),
            (
                Method::GET,
                "/bucket?cors",
                Endpoint::GetBucketCors { bucket: b() },
            ),
            (
                Method::PUT,
                "/bucket?policy",
                Endpoint::PutBucketPolicy { bucket: b() },
            ),
            (
                Method::DELETE,
                "/bucket?policy",
                Endpoint::DeleteBucketPolicy { bucket: b() },
            ),
            (
                Method::OPTIONS,
                "/bucket/some/key",
                Endpoint::CorsPreflight { bucket: b() },
            ),
            (
                Method::DELETE,
                "/bucket/k?tagging",
                Endpoint::DeleteObjectTagging {
                    bucket: b(),
                    key: "k".into(),
                    version_id: None,
                },
            ),
            (
                Method::GET,
                "/bucket?marker=x",
                Endpoint::ListObjectsV1 { bucket: b() },
            ),
            (
                Method::PUT,
                "/bucket/photos/2006/puppy.jpg",
                Endpoint::PutObject {
                    bucket: b(),
                    key: k(),
                },
            ),
            (
                Method::GET,
                "/bucket/photos/2006/puppy.jpg?x-id=GetObject",
                Endpoint::GetObject {
                    bucket: b(),
                    key: k(),
                    version_id: None,
                },
            ),
            (
                Method::HEAD,
                "/bucket/photos/2006/puppy.jpg",
                Endpoint::HeadObject {
                    bucket: b(),
                    key: k(),
                    version_id: None,
                },
            ),
            (
                Method::DELETE,
                "/bucket/photos/2006/puppy.jpg",
                Endpoint::DeleteObject {
                    bucket: b(),
                    key: k(),
                    version_id: None,
                },
            ),
            (
                Method::POST,
                "/bucket/photos/2006/puppy.jpg?uploads",
                Endpoint::CreateMultipartUpload {
                    bucket: b(),
                    key: k(),
                },
            ),
            (
                Method::PUT,
                "/bucket/photos/2006/puppy.jpg?partNumber=2&uploadId=u1",
                Endpoint::UploadPart {
                    bucket: b(),
                    key: k(),
                    upload_id: "u1".into(),
                    part_number: PartNumber(2),
                },
            ),
            (
                Method::POST,
                "/bucket/photos/2006/puppy.jpg?uploadId=u1",
                Endpoint::CompleteMultipartUpload {
                    bucket: b(),
                    key: k(),
                    upload_id: "u1".into(),
                },
            ),
            (
                Method::DELETE,
                "/bucket/photos/2006/puppy.jpg?uploadId=u1",
                Endpoint::AbortMultipartUpload {
                    bucket: b(),
                    key: k(),
                    upload_id: "u1".into(),
                },
            ),
        ];
        for (method, uri, expected) in table {
            assert_eq!(
                route(method.clone(), uri).unwrap(),
                expected,
                "{method} {uri}"
            );
        }
    }

    #[test]
    fn versioning_requests_map_to_endpoints() {
        let v = |id: &str| Some(VersionId::from(id));
        let k = || ObjectKey::from("my-image.jpg");
        let table = [
            (
                Method::GET,
                "/bucket?versioning",
                Endpoint::GetBucketVersioning { bucket: b() },
            ),
            (
                Method::PUT,
                "/bucket?versioning",
                Endpoint::PutBucketVersioning { bucket: b() },
            ),
            (
                Method::GET,
                "/bucket?versions",
                Endpoint::ListObjectVersions { bucket: b() },
            ),
            (
                Method::GET,
                "/bucket?versions&key-marker=key2&version-id-marker=null&max-keys=3&prefix=p&delimiter=%2F&encoding-type=url",
                Endpoint::ListObjectVersions { bucket: b() },
            ),
            (
                Method::GET,
                "/bucket/my-image.jpg?versionId=0f3c2a1b9d8e7f6a5b4c3d2e1f0a9b8c",
                Endpoint::GetObject {
                    bucket: b(),
                    key: k(),
                    version_id: v("0f3c2a1b9d8e7f6a5b4c3d2e1f0a9b8c"),
                },
            ),
            (
                Method::HEAD,
                "/bucket/my-image.jpg?versionId=null&partNumber=1",
                Endpoint::HeadObject {
                    bucket: b(),
                    key: k(),
                    version_id: v("null"),
                },
            ),
            (
                Method::DELETE,
                "/bucket/my-image.jpg?versionId=3f5c2a1b9d8e7f6a5b4c3d2e1f0a9b8c",
                Endpoint::DeleteObject {
                    bucket: b(),
                    key: k(),
                    version_id: v("3f5c2a1b9d8e7f6a5b4c3d2e1f0a9b8c"),
                },
            ),
            (
                Method::PUT,
                "/bucket/my-image.jpg?tagging&versionId=2f5c2a1b9d8e7f6a5b4c3d2e1f0a9b8c",
                Endpoint::PutObjectTagging {
                    bucket: b(),
                    key: k(),
                    version_id: v("2f5c2a1b9d8e7f6a5b4c3d2e1f0a9b8c"),
                },
            ),
            (
                Method::GET,
                "/bucket/my-image.jpg?tagging&versionId=2f5c2a1b9d8e7f6a5b4c3d2e1f0a9b8c",
                Endpoint::GetObjectTagging {
                    bucket: b(),
                    key: k(),
                    version_id: v("2f5c2a1b9d8e7f6a5b4c3d2e1f0a9b8c"),
                },
            ),
            (
                Method::DELETE,
                "/bucket/my-image.jpg?tagging",
                Endpoint::DeleteObjectTagging {
                    bucket: b(),
                    key: k(),
                    version_id: None,
                },
            ),
        ];
        for (method, uri, expected) in table {
            let got = route(method.clone(), uri).unwrap();
            assert_eq!(got, expected, "{method} {uri}");
        }
        assert_eq!(
            Endpoint::ListObjectVersions { bucket: b() }.name(),
            "ListObjectVersions"
        );
    }

    #[test]
    fn object_lock_requests_map_to_endpoints() {
        let v = |id: &str| Some(VersionId::from(id));
        let k = || ObjectKey::from("my-image.jpg");
        let table = [
            (
                Method::PUT,
                "/bucket?object-lock",
                Endpoint::PutObjectLockConfiguration { bucket: b() },
            ),
            (
                Method::GET,
                "/bucket?object-lock",
                Endpoint::GetObjectLockConfiguration { bucket: b() },
            ),
            (
                Method::PUT,
                "/bucket/my-image.jpg?retention",
                Endpoint::PutObjectRetention {
                    bucket: b(),
                    key: k(),
                    version_id: None,
                },
            ),
            (
                Method::GET,
                "/bucket/my-image.jpg?retention&versionId=2f5c2a1b9d8e7f6a5b4c3d2e1f0a9b8c",
                Endpoint::GetObjectRetention {
                    bucket: b(),
                    key: k(),
                    version_id: v("2f5c2a1b9d8e7f6a5b4c3d2e1f0a9b8c"),
                },
            ),
            (
                Method::PUT,
                "/bucket/my-image.jpg?legal-hold&versionId=null",
                Endpoint::PutObjectLegalHold {
                    bucket: b(),
                    key: k(),
                    version_id: v("null"),
                },
            ),
            (
                Method::GET,
                "/bucket/my-image.jpg?legal-hold",
                Endpoint::GetObjectLegalHold {
                    bucket: b(),
                    key: k(),
                    version_id: None,
                },
            ),
        ];
        for (method, uri, expected) in table {
            let got = route(method.clone(), uri).unwrap();
            assert_eq!(got, expected, "{method} {uri}");
        }
        assert_eq!(
            Endpoint::GetObjectLockConfiguration { bucket: b() }.name(),
            "GetObjectLockConfiguration"
        );
        // No DELETE of these subresources exists, and they take no other parameters.
        for (method, uri) in [
            (Method::DELETE, "/bucket?object-lock"),
            (Method::GET, "/bucket?object-lock&prefix=a"),
            (Method::DELETE, "/bucket/k?retention"),
            (Method::POST, "/bucket/k?legal-hold"),
            (Method::PUT, "/bucket/k?retention&uploadId=u1"),
        ] {
            let err = route(method.clone(), uri).unwrap_err();
            assert_eq!(err.code, S3ErrorCode::NotImplemented, "{method} {uri}");
        }
    }

    #[test]
    fn copy_sources_are_decoded_with_their_version() {
        let parse = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("x-amz-copy-source", value.parse().unwrap());
            copy_source(&headers)
        };
        assert_eq!(
            parse("/src/dir%2Fthe%20key?versionId=v1"),
            Some(CopySource {
                bucket: "src".into(),
                key: "dir/the key".into(),
                version: Some("v1".into())
            })
        );
        assert_eq!(
            parse("src/k").map(|s| (s.key, s.version)),
            Some(("k".into(), None))
        );
        assert_eq!(parse("/src/"), None);
        assert_eq!(parse("src"), None);
        assert_eq!(copy_source(&HeaderMap::new()), None);
    }

    #[test]
    fn a_put_with_a_copy_source_is_a_copy() {
        let mut copy = HeaderMap::new();
        copy.insert("x-amz-copy-source", "/b/k".parse().unwrap());
        assert_eq!(
            route_with(Method::PUT, "/bucket/k2", copy).unwrap(),
            Endpoint::CopyObject {
                bucket: b(),
                key: "k2".into()
            }
        );
    }

    #[test]
    fn keys_are_percent_decoded_and_keep_their_slashes() {
        let got = route(Method::GET, "/bucket/a%20b/%2Bc//d%25").unwrap();
        assert_eq!(
            got,
            Endpoint::GetObject {
                bucket: b(),
                key: "a b/+c//d%".into(),
                version_id: None
            }
        );
        let got = route(Method::PUT, "/bucket/a/").unwrap();
        assert_eq!(
            got,
            Endpoint::PutObject {
                bucket: b(),
                key: "a/".into()
            }
        );
    }

    #[test]
    fn names_are_validated_once_by_the_router() {
        let code =
            |method: Method, uri: &str| route_with(method, uri, HeaderMap::new()).unwrap_err().code;
        assert_eq!(
            code(Method::GET, "/Bad_Bucket/k"),
            S3ErrorCode::InvalidBucketName
        );
        assert_eq!(code(Method::PUT, "/ab"), S3ErrorCode::InvalidBucketName);
        let long = format!("/bucket/{}", "k".repeat(1025));
        assert_eq!(code(Method::PUT, &long), S3ErrorCode::KeyTooLongError);
        assert_eq!(
            code(Method::GET, "/bucket/k?versionId=v1"),
            S3ErrorCode::InvalidArgument
        );
        assert_eq!(
            code(Method::DELETE, "/bucket/k?versionId=%00"),
            S3ErrorCode::InvalidArgument
        );
        for part in ["0", "10001", "x", ""] {
            let uri = format!("/bucket/k?uploadId=u&partNumber={part}");
            assert_eq!(
                code(Method::PUT, &uri),
                S3ErrorCode::InvalidArgument,
                "{part}"
            );
        }
    }

    #[test]
    fn unsupported_requests_are_not_implemented() {
        for (method, uri, headers) in [
            (Method::GET, "/bucket?website", HeaderMap::new()),
            (Method::PUT, "/bucket?replication", HeaderMap::new()),
            (Method::POST, "/bucket?versions", HeaderMap::new()),
            (Method::PUT, "/bucket/key?versionId=v1", HeaderMap::new()),
            (
                Method::GET,
                "/bucket?versions&version-id=x",
                HeaderMap::new(),
            ),
            (Method::DELETE, "/bucket?acl", HeaderMap::new()),
            (Method::POST, "/bucket/key?acl", HeaderMap::new()),
            (Method::POST, "/bucket/key?tagging", HeaderMap::new()),
            (Method::POST, "/", HeaderMap::new()),
        ] {
            let err = route_with(method.clone(), uri, headers).unwrap_err();
            assert_eq!(err.code, S3ErrorCode::NotImplemented, "{method} {uri}");
        }
    }

    #[test]
    fn form_posts_to_a_bucket_are_post_object() {
        let mut form = HeaderMap::new();
        let value = "Multipart/Form-Data; boundary=----x";
        form.insert("content-type", value.parse().unwrap());
        assert_eq!(
            route_with(Method::POST, "/bucket", form.clone()).unwrap(),
            Endpoint::PostObject { bucket: b() }
        );
        assert!(Endpoint::PostObject { bucket: b() }.is_anonymous());
        // Anything else posted to a bucket is still not an operation Strata serves.
        let err = route_with(Method::POST, "/bucket", HeaderMap::new()).unwrap_err();
        assert_eq!(err.code, S3ErrorCode::NotImplemented);
        let err = route_with(Method::POST, "/bucket?acl", form).unwrap_err();
        assert_eq!(err.code, S3ErrorCode::NotImplemented);
    }
}
