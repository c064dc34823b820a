//! One handler per S3 operation: read the request, call the object layer, render.

mod access;
mod attributes;
mod batch;
mod bucket;
mod copy;
mod cors;
mod encryption;
mod lifecycle;
mod list;
mod list_versions;
mod lock;
mod multipart;
mod object;
mod policy;
mod post_object;
mod rename;
mod tagging;
mod torrent;
mod versioning;

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;

use super::error::{S3Error, S3ErrorCode};
use super::router::{Endpoint, Query};
use super::S3State;
use crate::body::{ByteStream, TrailerSlot};
use crate::object::VersionId;
use crate::object::{BucketName, BucketSettings, ObjectKey, ObjectStore};

/// A request as handlers see it, authenticated and with its body verified as it streams.
pub struct Request<'a> {
    pub state: &'a S3State,
    pub headers: &'a HeaderMap,
    pub query: Query,
    pub body: ByteStream,
    pub trailers: Arc<TrailerSlot>,
    /// The decoded length of an `aws-chunked` body.
    pub decoded_length: Option<u64>,
    /// The region its signature was made for, when not the server's (a CreateBucket's).
    pub signed_for_region: Option<String>,
    /// Who sent it, and from where: for the checks a handler makes itself (DeleteObjects
    /// authorises each key of its body).
    pub identity: crate::api::auth::Identity,
    pub source_ip: Option<std::net::IpAddr>,
}

/// Largest XML request body read into memory (a CompleteMultipartUpload of 10,000 parts).
const MAX_XML_BODY: usize = 2 << 20;

impl Request<'_> {
    /// Whether the request carries a digest of its body: Content-MD5 or a flexible checksum
    /// (in a header or announced as a trailer).
    pub fn has_body_digest(&self) -> bool {
        self.headers.contains_key("content-md5")
            || self.headers.contains_key("x-amz-trailer")
            || self
                .headers
                .keys()
                .any(|name| name.as_str().starts_with("x-amz-checksum-"))
    }

    /// Refuses a request without a digest of its body, for the configurations S3 takes only
    /// with one.
    pub fn require_body_digest(&self) -> Result<(), S3Error> {
        if self.has_body_digest() {
            return Ok(());
        }
        Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Missing required header for this request: Content-MD5",
        ))
    }

    /// Reads a small request body (XML) into memory, refusing more than `MAX_XML_BODY`, and
    /// checks it against the Content-MD5 or flexible checksum the client sent, if any.
    pub async fn small_body(&mut self) -> Result<Bytes, S3Error> {
        let body = self.read_small_body().await?;
        self.check_body_digest(&body)?;
        Ok(body)
    }

    /// The body of a CompleteMultipartUpload: its `x-amz-checksum-*` headers are the whole
    /// object's checksum, not the XML's, so only a Content-MD5 is checked against it.
    pub async fn completion_body(&mut self) -> Result<Bytes, S3Error> {
        let body = self.read_small_body().await?;
        self.check_content_md5(&body)?;
        Ok(body)
    }

    async fn read_small_body(&mut self) -> Result<Bytes, S3Error> {
        let mut out = BytesMut::new();
        while let Some(chunk) = self.body.next().await {
            let chunk = chunk.map_err(|e| {
                S3Error::from_io(&e)
                    .unwrap_or_else(|| S3Error::from_code(S3ErrorCode::IncompleteBody))
            })?;
            if out.len() + chunk.len() > MAX_XML_BODY {
                return Err(S3Error::new(
                    S3ErrorCode::MalformedXML,
                    "The XML you provided was too large.",
                ));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out.freeze())
    }

    fn check_content_md5(&self, body: &[u8]) -> Result<(), S3Error> {
        use md5::Digest;
        if let Some(md5) = super::headers::content_md5(self.headers)? {
            if <[u8; 16]>::from(md5::Md5::digest(body)) != md5 {
                return Err(S3Error::from_code(S3ErrorCode::BadDigest));
            }
        }
        Ok(())
    }

    fn check_body_digest(&self, body: &[u8]) -> Result<(), S3Error> {
        self.check_content_md5(body)?;
        // A checksum header, or a trailer whose value came after the body just read.
        if let Some(expected) = super::headers::expected_checksum(self.headers, &self.trailers)? {
            let mut hasher = expected.algorithm().hasher();
            hasher.update(body);
            expected.check(&hasher.finish_base64())?;
        }
        Ok(())
    }
}

fn bucket_name(name: &str) -> Result<BucketName, S3Error> {
    Ok(BucketName::parse(name)?)
}

fn object_key(key: &str) -> Result<ObjectKey, S3Error> {
    Ok(ObjectKey::parse(key)?)
}

/// Stores one change to a bucket's settings (the Put or Delete of a bucket subresource) and
/// answers `status` without a body.
async fn change_bucket_settings(
    store: &ObjectStore,
    name: &BucketName,
    status: StatusCode,
    change: impl Fn(&mut BucketSettings) + Send + Sync,
) -> Result<Response, S3Error> {
    store
        .update_bucket_settings(name, |settings| {
            change(settings);
            Ok(())
        })
        .await?;
    Ok(status.into_response())
}

/// Runs the handler of an endpoint.
pub async fn call(endpoint: Endpoint, request: Request<'_>) -> Result<Response, S3Error> {
    use Endpoint::*;
    match endpoint {
        ListBuckets => bucket::list_buckets(request).await,
        CreateBucket { bucket } => bucket::create_bucket(request, &bucket).await,
        HeadBucket { bucket } => bucket::head_bucket(request, &bucket).await,
        DeleteBucket { bucket } => bucket::delete_bucket(request, &bucket).await,
        GetBucketLocation { bucket } => bucket::get_bucket_location(request, &bucket).await,
        ListObjectsV1 { bucket } => list::list_objects_v1(request, &bucket).await,
        ListObjectsV2 {
            bucket,
            with_metadata,
        } => list::list_objects_v2(request, &bucket, with_metadata).await,
        PutObject { bucket, key } | AppendObject { bucket, key } => {
            object::put_object(request, &bucket, &key).await
        }
        GetObject {
            bucket,
            key,
            version_id,
        } => object::get_object(request, &bucket, &key, version_id, true).await,
        HeadObject {
            bucket,
            key,
            version_id,
        } => object::get_object(request, &bucket, &key, version_id, false).await,
        DeleteObject {
            bucket,
            key,
            version_id,
        } => {
            object::delete_object(
                request,
                &bucket,
                &key,
                version_id.as_ref().map(VersionId::as_str),
            )
            .await
        }
        CopyObject { bucket, key } => copy::copy_object(request, &bucket, &key).await,
        RenameObject { bucket, key } => rename::rename_object(request, &bucket, &key).await,
        GetObjectAttributes {
            bucket,
            key,
            version_id,
        } => {
            let version = version_id.as_ref().map(VersionId::as_str);
            attributes::get_object_attributes(request, &bucket, &key, version).await
        }
        GetObjectTorrent { bucket, key } => {
            torrent::get_object_torrent(request, &bucket, &key).await
        }
        GetObjectTagging {
            bucket,
            key,
            version_id,
        } => {
            tagging::get_object_tagging(
                request,
                &bucket,
                &key,
                version_id.as_ref().map(VersionId::as_str),
            )
            .await
        }
        PutObjectTagging {
            bucket,
            key,
            version_id,
        } => {
            tagging::put_object_tagging(
                request,
                &bucket,
                &key,
                version_id.as_ref().map(VersionId::as_str),
            )
            .await
        }
        DeleteObjectTagging {
            bucket,
            key,
            version_id,
        } => {
            tagging::delete_object_tagging(
                request,
                &bucket,
                &key,
                version_id.as_ref().map(VersionId::as_str),
            )
            .await
        }
        GetBucketTagging { bucket } => tagging::get_bucket_tagging(request, &bucket).await,
        PutBucketTagging { bucket } => tagging::put_bucket_tagging(request, &bucket).await,
        DeleteBucketTagging { bucket } => tagging::delete_bucket_tagging(request, &bucket).await,
        GetBucketCors { bucket } => cors::get_bucket_cors(request, &bucket).await,
        GetBucketLifecycle { bucket } => lifecycle::get_bucket_lifecycle(request, &bucket).await,
        PutBucketLifecycle { bucket } => lifecycle::put_bucket_lifecycle(request, &bucket).await,
        DeleteBucketLifecycle { bucket } => {
            lifecycle::delete_bucket_lifecycle(request, &bucket).await
        }
        PutBucketCors { bucket } => cors::put_bucket_cors(request, &bucket).await,
        DeleteBucketCors { bucket } => cors::delete_bucket_cors(request, &bucket).await,
        GetBucketPolicy { bucket } => policy::get_bucket_policy(request, &bucket).await,
        PutBucketPolicy { bucket } => policy::put_bucket_policy(request, &bucket).await,
        DeleteBucketPolicy { bucket } => policy::delete_bucket_policy(request, &bucket).await,
        GetBucketPolicyStatus { bucket } => access::get_policy_status(request, &bucket).await,
        GetBucketAcl { bucket } => access::get_bucket_acl(request, &bucket).await,
        PutBucketAcl { bucket } => access::put_bucket_acl(request, &bucket).await,
        GetObjectAcl {
            bucket,
            key,
            version_id,
        } => {
            access::get_object_acl(
                request,
                &bucket,
                &key,
                version_id.as_ref().map(VersionId::as_str),
            )
            .await
        }
        PutObjectAcl {
            bucket,
            key,
            version_id,
        } => {
            access::put_object_acl(
                request,
                &bucket,
                &key,
                version_id.as_ref().map(VersionId::as_str),
            )
            .await
        }
        GetBucketOwnershipControls { bucket } => {
            access::get_ownership_controls(request, &bucket).await
        }
        PutBucketOwnershipControls { bucket } => {
            access::put_ownership_controls(request, &bucket).await
        }
        DeleteBucketOwnershipControls { bucket } => {
            access::delete_ownership_controls(request, &bucket).await
        }
        GetPublicAccessBlock { bucket } => access::get_public_access_block(request, &bucket).await,
        GetBucketEncryption { bucket } => encryption::get_bucket_encryption(request, &bucket).await,
        PutBucketEncryption { bucket } => encryption::put_bucket_encryption(request, &bucket).await,
        DeleteBucketEncryption { bucket } => {
            encryption::delete_bucket_encryption(request, &bucket).await
        }
        PutPublicAccessBlock { bucket } => access::put_public_access_block(request, &bucket).await,
        DeletePublicAccessBlock { bucket } => {
            access::delete_public_access_block(request, &bucket).await
        }
        GetBucketVersioning { bucket } => versioning::get_bucket_versioning(request, &bucket).await,
        PutBucketVersioning { bucket } => versioning::put_bucket_versioning(request, &bucket).await,
        ListObjectVersions { bucket } => {
            list_versions::list_object_versions(request, &bucket).await
        }
        PutObjectLockConfiguration { bucket } => {
            lock::put_object_lock_configuration(request, &bucket).await
        }
        GetObjectLockConfiguration { bucket } => {
            lock::get_object_lock_configuration(request, &bucket).await
        }
        PutObjectRetention {
            bucket,
            key,
            version_id,
        } => {
            lock::put_object_retention(
                request,
                &bucket,
                &key,
                version_id.as_ref().map(VersionId::as_str),
            )
            .await
        }
        GetObjectRetention {
            bucket,
            key,
            version_id,
        } => {
            lock::get_object_retention(
                request,
                &bucket,
                &key,
                version_id.as_ref().map(VersionId::as_str),
            )
            .await
        }
        PutObjectLegalHold {
            bucket,
            key,
            version_id,
        } => {
            lock::put_object_legal_hold(
                request,
                &bucket,
                &key,
                version_id.as_ref().map(VersionId::as_str),
            )
            .await
        }
        GetObjectLegalHold {
            bucket,
            key,
            version_id,
        } => {
            lock::get_object_legal_hold(
                request,
                &bucket,
                &key,
                version_id.as_ref().map(VersionId::as_str),
            )
            .await
        }
        CorsPreflight { bucket } => cors::preflight(request, &bucket).await,
        CreateMultipartUpload { bucket, key } => multipart::create(request, &bucket, &key).await,
        UploadPart {
            bucket,
            key,
            upload_id,
            part_number,
        } => multipart::upload_part(request, &bucket, &key, &upload_id, part_number).await,
        UploadPartCopy {
            bucket,
            key,
            upload_id,
            part_number,
        } => multipart::upload_part_copy(request, &bucket, &key, &upload_id, part_number).await,
        ListParts {
            bucket,
            key,
            upload_id,
        } => multipart::list_parts(request, &bucket, &key, &upload_id).await,
        ListMultipartUploads { bucket } => multipart::list_uploads(request, &bucket).await,
        DeleteObjects { bucket } => batch::delete_objects(request, &bucket).await,
        PostObject { bucket } => post_object::post_object(request, &bucket).await,
        CompleteMultipartUpload {
            bucket,
            key,
            upload_id,
        } => multipart::complete(request, &bucket, &key, &upload_id).await,
        AbortMultipartUpload {
            bucket,
            key,
            upload_id,
        } => multipart::abort(request, &bucket, &key, &upload_id).await,
    }
}
