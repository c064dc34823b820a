//! Bucket versioning (`?versioning`), and the version headers object operations answer with.

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::Request;
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::{xml, xml_response, S3State};
use crate::object::{BucketName, Deleted, ObjectRecord, Versioning};

/// S3's names of the versioning states, as `<Status>` shows them.
fn status_name(state: Versioning) -> &'static str {
    match state {
        Versioning::Enabled => "Enabled",
        Versioning::Suspended => "Suspended",
    }
}

/// The state a PutBucketVersioning asks for. MFA Delete cannot be turned on: Strata has no
/// MFA devices, so it answers as AWS does to a request without a valid MFA.
fn requested_state(
    config: xml::VersioningConfiguration,
    headers: &HeaderMap,
) -> Result<Versioning, S3Error> {
    match config.mfa_delete.as_deref() {
        None | Some("Disabled") => {}
        Some("Enabled") if headers.contains_key("x-amz-mfa") => {
            return Err(S3Error::new(
                S3ErrorCode::NotImplemented,
                "Strata does not implement MFA Delete.",
            ))
        }
        Some("Enabled") => {
            return Err(S3Error::new(
                S3ErrorCode::AccessDenied,
                "Mfa Authentication must be used for this request",
            ))
        }
        Some(_) => return Err(S3Error::from_code(S3ErrorCode::MalformedXML)),
    }
    match config.status.as_deref() {
        Some("Enabled") => Ok(Versioning::Enabled),
        Some("Suspended") => Ok(Versioning::Suspended),
        _ => Err(S3Error::from_code(S3ErrorCode::MalformedXML)),
    }
}

pub async fn put_bucket_versioning(
    mut request: Request<'_>,
    name: &BucketName,
) -> Result<Response, S3Error> {
    // Unlike lifecycle rules, S3 takes this body without a Content-MD5; one that is sent is
    // checked by `small_body`.
    let body = request.small_body().await?;
    let config: xml::VersioningConfiguration = xml::parse(&body)?;
    let state = requested_state(config, request.headers)?;
    // Either state is reachable from any other (only "unversioned" is never asked for),
    // except on a bucket with Object Lock, which the store keeps enabled.
    request.state.store.set_versioning(name, state).await?;
    Ok(StatusCode::OK.into_response())
}

pub async fn get_bucket_versioning(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let record = request.state.store.bucket(bucket).await?;
    let doc = xml::VersioningConfiguration {
        status: record
            .settings
            .versioning
            .map(|state| status_name(state).to_string()),
        ..xml::VersioningConfiguration::default()
    };
    Ok(xml_response(xml::render("VersioningConfiguration", &doc)))
}

/// The bucket's versioning state, for the version headers of an answer; `None` when it has
/// none or cannot be read (the answer then leaves out what it cannot know).
pub(super) async fn bucket_versioning(state: &S3State, name: &BucketName) -> Option<Versioning> {
    state.store.bucket(name).await.ok()?.settings.versioning
}

/// The `x-amz-version-id` of a version just written (PUT, POST, copy, multipart completion):
/// its id. S3 leaves the header out for the `null` version that unversioned and
/// versioning-suspended buckets write.
pub(super) fn set_written_version(headers: &mut HeaderMap, record: &ObjectRecord) {
    set_version_id(headers, record.version_id.as_deref());
}

/// The version id a read of `record` shows: its id; `null` for the null version when the
/// bucket has versioning configured or the request named the version.
pub(super) fn shown_version(
    record: &ObjectRecord,
    versioning: Option<Versioning>,
    asked: bool,
) -> Option<&str> {
    match &record.version_id {
        Some(id) => Some(id),
        None => (versioning.is_some() || asked).then(|| record.version_id_str()),
    }
}

/// Sets `x-amz-version-id` when there is one to show.
pub(super) fn set_version_id(headers: &mut HeaderMap, version_id: Option<&str>) {
    if let Some(value) = version_id.and_then(|id| HeaderValue::from_str(id).ok()) {
        headers.insert("x-amz-version-id", value);
    }
}

/// Answers about one version (its tags, retention or legal hold) name it, as S3's do.
pub(super) async fn with_version(
    state: &S3State,
    name: &BucketName,
    record: &ObjectRecord,
    asked: Option<&str>,
    mut response: Response,
) -> Response {
    let versioning = match record.version_id {
        Some(_) => None,
        None => bucket_versioning(state, name).await,
    };
    set_version_id(
        response.headers_mut(),
        shown_version(record, versioning, asked.is_some()),
    );
    response
}

/// The headers of a DELETE: the version it removed or the delete marker it made, and
/// `x-amz-delete-marker: true` when that is a marker.
pub(super) fn set_deleted(headers: &mut HeaderMap, deleted: &Deleted) {
    set_version_id(headers, deleted.version_id.as_deref());
    if deleted.delete_marker {
        headers.insert("x-amz-delete-marker", HeaderValue::from_static("true"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(status: Option<&str>, mfa: Option<&str>) -> xml::VersioningConfiguration {
        xml::VersioningConfiguration {
            status: status.map(str::to_string),
            mfa_delete: mfa.map(str::to_string),
            ..xml::VersioningConfiguration::default()
        }
    }

    #[test]
    fn only_enabled_and_suspended_are_states() {
        let none = HeaderMap::new();
        let state = |status, mfa| requested_state(config(status, mfa), &none);
        assert_eq!(state(Some("Enabled"), None).unwrap(), Versioning::Enabled);
        assert_eq!(
            state(Some("Suspended"), Some("Disabled")).unwrap(),
            Versioning::Suspended
        );
        for status in [None, Some("enabled"), Some("Disabled"), Some("")] {
            let err = state(status, None).unwrap_err();
            assert_eq!(err.code, S3ErrorCode::MalformedXML, "{status:?}");
        }
        let err = state(Some("Enabled"), Some("Enabled")).unwrap_err();
        assert_eq!(err.code, S3ErrorCode::AccessDenied);
        let err = state(Some("Enabled"), Some("On")).unwrap_err();
        assert_eq!(err.code, S3ErrorCode::MalformedXML);
    }
}
