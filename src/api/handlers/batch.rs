//! DeleteObjects: up to 1000 keys in one request, each answered on its own.

use axum::response::Response;

use super::Request;
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::timestamp_secs;
use crate::api::{xml, xml_response};
use crate::object::BucketName;
use crate::object::{DeleteConditions, DeleteIf, DeleteOptions, Deleted, ObjectKey, VersionId};

/// Most keys one DeleteObjects request may name.
const MAX_KEYS: usize = 1000;

/// Each key of a batch is authorised as a DeleteObject of its own (of a version, when the
/// entry names one).
async fn authorize_key(
    state: &crate::api::S3State,
    identity: &crate::api::auth::Identity,
    info: &crate::api::permissions::RequestInfo<'_>,
    bucket: &crate::object::BucketName,
    key: &ObjectKey,
    version_id: Option<&str>,
) -> Result<(), S3Error> {
    let endpoint = crate::api::router::Endpoint::DeleteObject {
        bucket: bucket.clone(),
        key: key.clone(),
        version_id: version_id.map(VersionId::parse).transpose()?,
    };
    crate::api::permissions::authorize(&state.store, &state.iam, identity, &endpoint, info).await
}

/// What S3 reports for one deleted entry: the version named, and the delete marker the
/// delete made (no version named) or removed (the version named was one).
fn deleted_entry(key: String, asked: Option<String>, deleted: Deleted) -> xml::Deleted {
    let marker_id = deleted
        .delete_marker
        .then_some(deleted.version_id)
        .flatten();
    xml::Deleted {
        key,
        version_id: asked,
        delete_marker: marker_id.is_some().then_some(true),
        delete_marker_version_id: marker_id,
    }
}

/// An entry's conditions (`ETag`, `LastModifiedTime`, `Size`), as DeleteObject's headers.
fn entry_condition(object: &xml::ObjectIdentifier) -> Result<DeleteIf, S3Error> {
    let invalid = |name: &str| {
        S3Error::new(
            S3ErrorCode::InvalidArgument,
            format!("Invalid value for {name}."),
        )
    };
    let last_modified_secs = (object.last_modified_time.as_deref())
        .map(|text| timestamp_secs(text).ok_or_else(|| invalid("LastModifiedTime")))
        .transpose()?;
    let size = (object.size.as_deref())
        .map(|text| text.trim().parse().map_err(|_| invalid("Size")))
        .transpose()?;
    Ok(DeleteIf::matching(DeleteConditions {
        etag: object.etag.clone(),
        last_modified_secs,
        size,
    }))
}

pub async fn delete_objects(
    mut request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    // S3 requires a digest of the key list, so a corrupted list never deletes the wrong
    // objects; `small_body` checks it.
    if !request.has_body_digest() {
        return Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Missing required header for this request: Content-MD5",
        ));
    }
    let body = request.small_body().await?;
    let parsed: xml::Delete = xml::parse(&body)?;
    if parsed.objects.is_empty() || parsed.objects.len() > MAX_KEYS {
        return Err(S3Error::from_code(S3ErrorCode::MalformedXML));
    }
    let store = &request.state.store;
    store.bucket(bucket).await?;
    let info = crate::api::permissions::RequestInfo {
        headers: request.headers,
        query: &request.query,
        source_ip: request.source_ip,
        secure: request.state.tls,
    };
    // Each key's authorisation required s3:BypassGovernanceRetention of a request that asks
    // for this.
    let bypass_governance = crate::api::permissions::bypasses_governance(request.headers);
    let mut result = xml::DeleteResult {
        xmlns: (),
        deleted: Vec::new(),
        error: Vec::new(),
    };
    for object in parsed.objects {
        let version = object.version_id.as_deref();
        let outcome = match (ObjectKey::parse(&object.key), entry_condition(&object)) {
            (Ok(key), Ok(only_if)) => {
                let identity = &request.identity;
                match authorize_key(request.state, identity, &info, bucket, &key, version).await {
                    // A locked version is this key's AccessDenied; the others still go.
                    Ok(()) => {
                        let options = DeleteOptions {
                            version_id: object.version_id.clone(),
                            bypass_governance,
                            only_if,
                        };
                        (store.delete_object_with(bucket, &key, &options).await)
                            .map_err(S3Error::from)
                    }
                    Err(e) => Err(e),
                }
            }
            (Err(e), _) => Err(S3Error::from(e)),
            (_, Err(e)) => Err(e),
        };
        match outcome {
            Ok(deleted) => {
                if !parsed.quiet.unwrap_or(false) {
                    let entry = deleted_entry(object.key, object.version_id, deleted);
                    result.deleted.push(entry);
                }
            }
            Err(e) => result.error.push(xml::DeleteError {
                key: object.key,
                version_id: object.version_id,
                code: e.code.as_str().to_string(),
                message: e.message.into_owned(),
            }),
        }
    }
    Ok(xml_response(xml::render("DeleteResult", &result)))
}
