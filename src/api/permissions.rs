//! Which IAM actions each S3 request is, on which resources, with which condition keys:
//! what the S3 protocol asks `crate::iam` to decide, and how its refusal is rendered.

use std::net::IpAddr;

use axum::http::HeaderMap;

use super::acl::has_acl_headers;
use super::auth::Identity;
use super::error::{S3Error, S3ErrorCode};
use super::router::{copy_source, rename_source, Endpoint, Query};
use crate::iam::policy::Context;
use crate::iam::{Check, Iam, On, Refusal};
use crate::object::{BucketName, ObjectKey, ObjectStore};

/// What authorisation looks at besides the endpoint.
pub struct RequestInfo<'a> {
    pub headers: &'a HeaderMap,
    pub query: &'a Query,
    /// The client's address, when the server knows it (`aws:SourceIp`).
    pub source_ip: Option<IpAddr>,
    /// Whether the request came over TLS (`aws:SecureTransport`).
    pub secure: bool,
}

/// Whether `identity` may make the request, as `crate::iam` decides; S3's error otherwise.
pub async fn authorize(
    store: &ObjectStore,
    iam: &Iam,
    identity: &Identity,
    endpoint: &Endpoint,
    request: &RequestInfo<'_>,
) -> Result<(), S3Error> {
    let checks = checks(endpoint, request.headers);
    // An operation that needs no permission here is one that authorises itself (each key of
    // a DeleteObjects, a POST form's policy, a CORS preflight); anything else is a mistake
    // to refuse, not a door to open.
    if checks.is_empty() && !authorises_itself(endpoint) {
        return Err(S3Error::from_code(S3ErrorCode::AccessDenied));
    }
    let context = context(identity, endpoint, request);
    crate::iam::authorize(store, iam, identity, checks, context)
        .await
        .map_err(|refusal| match refusal {
            Refusal::AccessDenied => S3Error::from_code(S3ErrorCode::AccessDenied),
            Refusal::NoSuchBucket => S3Error::from_code(S3ErrorCode::NoSuchBucket),
            Refusal::Unavailable(e) => e.into(),
        })
}

/// The condition keys of a request.
fn context(identity: &Identity, endpoint: &Endpoint, request: &RequestInfo<'_>) -> Context {
    let mut context = Context::default();
    let secure = if request.secure { "true" } else { "false" };
    context.set("aws:SecureTransport", secure);
    match request.source_ip {
        Some(ip) => {
            let ip = match ip {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
                v4 => v4,
            };
            context.set("aws:SourceIp", ip.to_string());
        }
        None => context.set_unknown("aws:SourceIp"),
    }
    match identity {
        Identity::User(name) => {
            context.set("aws:username", name);
            context.set("aws:userid", name);
            context.set("aws:PrincipalType", "User");
        }
        Identity::Anonymous => context.set("aws:PrincipalType", "Anonymous"),
        Identity::Root => context.set("aws:PrincipalType", "Account"),
    }
    for (header, key) in [("user-agent", "aws:UserAgent"), ("referer", "aws:Referer")] {
        if let Some(value) = request.headers.get(header).and_then(|v| v.to_str().ok()) {
            context.set(key, value);
        }
    }
    request_keys(endpoint, request.query, &mut context);
    header_keys(request.headers, &mut context);
    context
}

/// The permissions a request needs, all of them. The endpoints that authenticate
/// themselves (CORS preflight, POST Object) need none here.
pub fn checks(endpoint: &Endpoint, headers: &HeaderMap) -> Vec<Check> {
    use Endpoint::*;
    let (b, k) = (Check::bucket, Check::key);
    match endpoint {
        ListBuckets => vec![Check {
            action: "s3:ListAllMyBuckets",
            bucket: None,
            on: On::Bucket,
        }],
        CreateBucket { bucket } => {
            let mut checks = vec![b("s3:CreateBucket", bucket)];
            // As in AWS, a bucket made with Object Lock (and so versioning) needs the
            // permissions to configure both.
            if creates_locked_bucket(headers) {
                checks.push(b("s3:PutBucketObjectLockConfiguration", bucket));
                checks.push(b("s3:PutBucketVersioning", bucket));
            }
            // And one that opens it to others, the permission to set its ACL.
            if crate::api::acl::grants_beyond_the_owner(headers) {
                checks.push(b("s3:PutBucketAcl", bucket));
            }
            checks
        }
        HeadBucket { bucket } => vec![b("s3:ListBucket", bucket)],
        DeleteBucket { bucket } => vec![b("s3:DeleteBucket", bucket)],
        GetBucketLocation { bucket } => vec![b("s3:GetBucketLocation", bucket)],
        ListObjectsV1 { bucket } => vec![b("s3:ListBucket", bucket)],
        ListObjectsV2 {
            bucket,
            with_metadata,
        } => {
            let mut checks = vec![b("s3:ListBucket", bucket)];
            // Entries with metadata and tags tell what reading each object and its tags
            // would: allowed only to who may do both on every key.
            if *with_metadata {
                checks.push(Check::key("s3:GetObject", bucket, "*"));
                checks.push(Check::key("s3:GetObjectTagging", bucket, "*"));
            }
            checks
        }
        ListMultipartUploads { bucket } => vec![b("s3:ListBucketMultipartUploads", bucket)],
        GetBucketTagging { bucket } => vec![b("s3:GetBucketTagging", bucket)],
        // AWS has no action of its own for deleting bucket tags or CORS rules.
        PutBucketTagging { bucket } | DeleteBucketTagging { bucket } => {
            vec![b("s3:PutBucketTagging", bucket)]
        }
        GetBucketCors { bucket } => vec![b("s3:GetBucketCORS", bucket)],
        PutBucketCors { bucket } | DeleteBucketCors { bucket } => {
            vec![b("s3:PutBucketCORS", bucket)]
        }
        GetBucketLifecycle { bucket } => vec![b("s3:GetLifecycleConfiguration", bucket)],
        // As in AWS, deleting the rules needs the permission to put them.
        PutBucketLifecycle { bucket } | DeleteBucketLifecycle { bucket } => {
            vec![b("s3:PutLifecycleConfiguration", bucket)]
        }
        GetBucketPolicy { bucket } => vec![b("s3:GetBucketPolicy", bucket)],
        PutBucketPolicy { bucket } => vec![b("s3:PutBucketPolicy", bucket)],
        DeleteBucketPolicy { bucket } => vec![b("s3:DeleteBucketPolicy", bucket)],
        GetBucketPolicyStatus { bucket } => vec![b("s3:GetBucketPolicyStatus", bucket)],
        GetBucketAcl { bucket } => vec![b("s3:GetBucketAcl", bucket)],
        PutBucketAcl { bucket } => vec![b("s3:PutBucketAcl", bucket)],
        GetObjectAcl {
            bucket,
            key,
            version_id,
        } => vec![k(
            by_version(version_id, "s3:GetObjectAcl", "s3:GetObjectVersionAcl"),
            bucket,
            key,
        )],
        PutObjectAcl {
            bucket,
            key,
            version_id,
        } => vec![k(
            by_version(version_id, "s3:PutObjectAcl", "s3:PutObjectVersionAcl"),
            bucket,
            key,
        )],
        GetBucketOwnershipControls { bucket } => {
            vec![b("s3:GetBucketOwnershipControls", bucket)]
        }
        // As in AWS, deleting the controls needs the permission to put them.
        PutBucketOwnershipControls { bucket } | DeleteBucketOwnershipControls { bucket } => {
            vec![b("s3:PutBucketOwnershipControls", bucket)]
        }
        GetPublicAccessBlock { bucket } => vec![b("s3:GetBucketPublicAccessBlock", bucket)],
        // Put and Delete are both s3:PutEncryptionConfiguration, as on AWS.
        GetBucketEncryption { bucket } => vec![b("s3:GetEncryptionConfiguration", bucket)],
        PutBucketEncryption { bucket } | DeleteBucketEncryption { bucket } => {
            vec![b("s3:PutEncryptionConfiguration", bucket)]
        }
        PutPublicAccessBlock { bucket } | DeletePublicAccessBlock { bucket } => {
            vec![b("s3:PutBucketPublicAccessBlock", bucket)]
        }
        GetBucketVersioning { bucket } => vec![b("s3:GetBucketVersioning", bucket)],
        PutBucketVersioning { bucket } => vec![b("s3:PutBucketVersioning", bucket)],
        ListObjectVersions { bucket } => vec![b("s3:ListBucketVersions", bucket)],
        PutObjectLockConfiguration { bucket } => {
            vec![b("s3:PutBucketObjectLockConfiguration", bucket)]
        }
        GetObjectLockConfiguration { bucket } => {
            vec![b("s3:GetBucketObjectLockConfiguration", bucket)]
        }
        // AWS has no `*Version*` actions for retention and legal holds.
        PutObjectRetention { bucket, key, .. } => {
            let mut checks = vec![k("s3:PutObjectRetention", bucket, key)];
            if bypasses_governance(headers) {
                checks.push(k(BYPASS_GOVERNANCE, bucket, key));
            }
            checks
        }
        GetObjectRetention { bucket, key, .. } => vec![k("s3:GetObjectRetention", bucket, key)],
        PutObjectLegalHold { bucket, key, .. } => vec![k("s3:PutObjectLegalHold", bucket, key)],
        GetObjectLegalHold { bucket, key, .. } => vec![k("s3:GetObjectLegalHold", bucket, key)],
        PutObject { bucket, key }
        | AppendObject { bucket, key }
        | CreateMultipartUpload { bucket, key } => {
            let mut checks = vec![k("s3:PutObject", bucket, key)];
            checks.extend(set_with_the_object(headers, bucket, key));
            checks
        }
        UploadPart { bucket, key, .. } | CompleteMultipartUpload { bucket, key, .. } => {
            vec![k("s3:PutObject", bucket, key)]
        }
        // As in AWS, a request that names a version is the `*Version*` action.
        GetObject {
            bucket,
            key,
            version_id,
        }
        | HeadObject {
            bucket,
            key,
            version_id,
        } => vec![k(
            by_version(version_id, "s3:GetObject", "s3:GetObjectVersion"),
            bucket,
            key,
        )],
        DeleteObject {
            bucket,
            key,
            version_id,
        } => {
            let mut checks = vec![k(
                by_version(version_id, "s3:DeleteObject", "s3:DeleteObjectVersion"),
                bucket,
                key,
            )];
            // Only the removal of a version can lift a retention; DeleteObjects checks each
            // of its keys as this endpoint, with the request's headers.
            if version_id.is_some() && bypasses_governance(headers) {
                checks.push(k(BYPASS_GOVERNANCE, bucket, key));
            }
            checks
        }
        CopyObject { bucket, key } | UploadPartCopy { bucket, key, .. } => {
            let mut checks = vec![k("s3:PutObject", bucket, key)];
            if matches!(endpoint, CopyObject { .. }) {
                checks.extend(set_with_the_object(headers, bucket, key));
            }
            if let Some(source) = copy_source(headers) {
                let read = by_version(&source.version, "s3:GetObject", "s3:GetObjectVersion");
                checks.push(Check::key(read, &source.bucket, &source.key));
            }
            checks
        }
        // As on AWS: writing the new name, and deleting the old one.
        RenameObject { bucket, key } => {
            let mut checks = vec![k("s3:PutObject", bucket, key)];
            if let Some((source_bucket, source_key)) = rename_source(headers) {
                checks.push(Check::key("s3:DeleteObject", &source_bucket, &source_key));
            }
            checks
        }
        GetObjectAttributes {
            bucket,
            key,
            version_id,
        } => vec![k(
            by_version(
                version_id,
                "s3:GetObjectAttributes",
                "s3:GetObjectVersionAttributes",
            ),
            bucket,
            key,
        )],
        GetObjectTorrent { bucket, key } => vec![k("s3:GetObjectTorrent", bucket, key)],
        GetObjectTagging {
            bucket,
            key,
            version_id,
        } => vec![k(
            by_version(
                version_id,
                "s3:GetObjectTagging",
                "s3:GetObjectVersionTagging",
            ),
            bucket,
            key,
        )],
        PutObjectTagging {
            bucket,
            key,
            version_id,
        } => vec![k(
            by_version(
                version_id,
                "s3:PutObjectTagging",
                "s3:PutObjectVersionTagging",
            ),
            bucket,
            key,
        )],
        DeleteObjectTagging {
            bucket,
            key,
            version_id,
        } => vec![k(
            by_version(
                version_id,
                "s3:DeleteObjectTagging",
                "s3:DeleteObjectVersionTagging",
            ),
            bucket,
            key,
        )],
        ListParts { bucket, key, .. } => vec![k("s3:ListMultipartUploadParts", bucket, key)],
        AbortMultipartUpload { bucket, key, .. } => {
            vec![k("s3:AbortMultipartUpload", bucket, key)]
        }
        // The keys are in the body: the handler authorises each as a DeleteObject and answers
        // AccessDenied for the keys refused, as S3 does.
        DeleteObjects { .. } | CorsPreflight { .. } | PostObject { .. } => Vec::new(),
    }
}

/// The permission a request needs on top of its own to lift a governance retention.
const BYPASS_GOVERNANCE: &str = "s3:BypassGovernanceRetention";

/// Whether a request asks to lift governance retentions (`x-amz-bypass-governance-retention:
/// true`). Handlers read the header through this too, so a bypass is only ever used by a
/// request that was authorised for it.
pub fn bypasses_governance(headers: &HeaderMap) -> bool {
    headers
        .get("x-amz-bypass-governance-retention")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"))
}

/// The operations that authorise themselves, and so need no permission of [`checks`]:
/// DeleteObjects checks each key of its body, a POST form its policy's signer, a CORS
/// preflight carries no credentials.
pub fn authorises_itself(endpoint: &Endpoint) -> bool {
    matches!(
        endpoint,
        Endpoint::DeleteObjects { .. }
            | Endpoint::CorsPreflight { .. }
            | Endpoint::PostObject { .. }
    )
}

/// What a write that creates an object also sets, each needing its own permission as on
/// AWS: an ACL (`s3:PutObjectAcl`), a retention (`s3:PutObjectRetention`), a legal hold
/// (`s3:PutObjectLegalHold`) and tags (`s3:PutObjectTagging`). Without these, a writer allowed
/// only `s3:PutObject` could lock its versions for years.
fn set_with_the_object(headers: &HeaderMap, bucket: &BucketName, key: &ObjectKey) -> Vec<Check> {
    let has = |name: &str| headers.contains_key(name);
    let mut checks = Vec::new();
    if has_acl_headers(headers) {
        checks.push(Check::key("s3:PutObjectAcl", bucket, key));
    }
    if has("x-amz-object-lock-mode") || has("x-amz-object-lock-retain-until-date") {
        checks.push(Check::key("s3:PutObjectRetention", bucket, key));
    }
    if has("x-amz-object-lock-legal-hold") {
        checks.push(Check::key("s3:PutObjectLegalHold", bucket, key));
    }
    if has("x-amz-tagging") {
        checks.push(Check::key("s3:PutObjectTagging", bucket, key));
    }
    checks
}

/// Whether a CreateBucket asks for Object Lock (`x-amz-bucket-object-lock-enabled: true`).
pub fn creates_locked_bucket(headers: &HeaderMap) -> bool {
    headers
        .get("x-amz-bucket-object-lock-enabled")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"))
}

/// The action of a request on a key: `plain`, or `versioned` when it names a version.
fn by_version<Id>(
    version_id: &Option<Id>,
    plain: &'static str,
    versioned: &'static str,
) -> &'static str {
    if version_id.is_some() {
        versioned
    } else {
        plain
    }
}

/// The condition keys of the request itself: a listing's `s3:prefix` (empty when none is
/// given, as on AWS), `s3:delimiter` and `s3:max-keys`; the `s3:versionid` a request on a
/// version names.
fn request_keys(endpoint: &Endpoint, query: &Query, context: &mut Context) {
    use Endpoint::*;
    match endpoint {
        ListObjectsV1 { .. } | ListObjectsV2 { .. } | ListObjectVersions { .. } => {
            context.set("s3:prefix", query.get("prefix").unwrap_or(""));
            for key in ["delimiter", "max-keys"] {
                if let Some(value) = query.get(key) {
                    context.set(&format!("s3:{key}"), value);
                }
            }
        }
        GetObject { version_id, .. }
        | HeadObject { version_id, .. }
        | DeleteObject { version_id, .. }
        | GetObjectAttributes { version_id, .. }
        | GetObjectTagging { version_id, .. }
        | PutObjectTagging { version_id, .. }
        | DeleteObjectTagging { version_id, .. }
        | PutObjectRetention { version_id, .. }
        | GetObjectRetention { version_id, .. }
        | PutObjectLegalHold { version_id, .. }
        | GetObjectLegalHold { version_id, .. } => {
            if let Some(id) = version_id {
                context.set("s3:versionid", id.as_str());
            }
        }
        _ => {}
    }
}

/// Request headers whose values S3 offers to policy conditions as `s3:<header>`.
const HEADER_KEYS: [&str; 13] = [
    "x-amz-acl",
    "x-amz-grant-read",
    "x-amz-grant-write",
    "x-amz-grant-read-acp",
    "x-amz-grant-write-acp",
    "x-amz-grant-full-control",
    "x-amz-server-side-encryption",
    "x-amz-server-side-encryption-aws-kms-key-id",
    "x-amz-copy-source",
    "x-amz-metadata-directive",
    "x-amz-storage-class",
    "x-amz-content-sha256",
    "x-amz-object-ownership",
];

/// The condition keys a request's headers give: `s3:x-amz-acl` and the others S3
/// documents, the Object Lock ones, and `s3:RequestObjectTag/<key>` for each tag of
/// `x-amz-tagging`. A key whose header is absent is absent (what `Null` conditions test).
fn header_keys(headers: &HeaderMap, context: &mut Context) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    for name in HEADER_KEYS {
        if let Some(value) = header(name) {
            context.set(&format!("s3:{name}"), value);
        }
    }
    for (name, key) in [
        ("x-amz-object-lock-mode", "s3:object-lock-mode"),
        (
            "x-amz-object-lock-retain-until-date",
            "s3:object-lock-retain-until-date",
        ),
        ("x-amz-object-lock-legal-hold", "s3:object-lock-legal-hold"),
    ] {
        if let Some(value) = header(name) {
            context.set(key, value);
        }
    }
    // As the request stores them; tags the request cannot store give no keys (it fails).
    for (key, value) in super::headers::tags(headers).unwrap_or_default() {
        context.set(&format!("s3:RequestObjectTag/{key}"), &value);
    }
}

#[cfg(test)]
#[path = "permissions_tests.rs"]
mod tests;
