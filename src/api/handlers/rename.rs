//! RenameObject: `PUT /{key}?renameObject` gives the object `x-amz-rename-source` names the
//! name `key`, in one atomic step that copies no data (see [`crate::object::ObjectStore::rename_object`]).

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::Request;
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::{self, header, ConditionFailure};
use crate::api::router::rename_source;
use crate::api::sse;
use crate::object::{
    BucketName, ObjectError, ObjectKey, ObjectRecord, Precondition, RenameOptions,
};

/// Longest `x-amz-client-token` S3 takes.
const MAX_CLIENT_TOKEN: usize = 64;

pub(super) async fn rename_object(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
) -> Result<Response, S3Error> {
    let headers = request.headers;
    let (source_bucket, source_key) = rename_source(headers)
        .ok_or_else(|| S3Error::new(S3ErrorCode::InvalidArgument, "Invalid rename source"))?;
    if source_bucket != bucket.as_str() {
        return Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "The rename source must be an object of the destination's bucket.",
        ));
    }
    let source = ObjectKey::parse(&source_key)?;
    sse::refuse_on_read(headers)?;
    let options = RenameOptions {
        source_if: source_precondition(headers.clone()),
        destination_if: destination_precondition(headers.clone())?,
        client_token: client_token(headers)?,
        customer_key: sse::customer_key(headers, false, request.state.sse_c_allowed)?,
    };
    request
        .state
        .store
        .rename_object(bucket, key, &source, &options)
        .await?;
    Ok(StatusCode::OK.into_response())
}

/// `x-amz-client-token`: up to 64 printable ASCII characters.
fn client_token(headers: &HeaderMap) -> Result<Option<String>, S3Error> {
    let Some(token) = header(headers, "x-amz-client-token") else {
        return Ok(None);
    };
    let printable = token.bytes().all(|b| (33..=126).contains(&b));
    if token.is_empty() || token.len() > MAX_CLIENT_TOKEN || !printable {
        return Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            "The client token must be 1 to 64 printable ASCII characters.",
        ));
    }
    Ok(Some(token.to_string()))
}

/// `x-amz-rename-source-if-*`, judged on the source's current version: any failure is 412.
fn source_precondition(headers: HeaderMap) -> Precondition {
    Precondition(Arc::new(move |source: Option<&ObjectRecord>| {
        let Some(source) = source else {
            return Ok(());
        };
        let modified = headers::modified(source);
        headers::check_rename_source_conditions(&headers, &source.etag, modified)
            .map_err(|_| ObjectError::PreconditionFailed)
    }))
}

/// `If-Match`, `If-None-Match`, `If-Modified-Since` and `If-Unmodified-Since`, judged on
/// the destination's current version; any failure is 412. With no destination object,
/// `If-Match` and `If-Modified-Since` fail (they ask that it exists) and the others hold.
fn destination_precondition(headers: HeaderMap) -> Result<Precondition, S3Error> {
    if header(&headers, "if-none-match").is_some_and(|value| value.trim() != "*") {
        return Err(S3Error::new(
            S3ErrorCode::NotImplemented,
            "If-None-Match on a rename only supports the value *.",
        ));
    }
    Ok(Precondition(Arc::new(
        move |dest: Option<&ObjectRecord>| {
            let held = match dest {
                None => {
                    let needs_one = ["if-match", "if-modified-since"]
                        .iter()
                        .any(|name| headers.contains_key(*name));
                    return match needs_one {
                        true => Err(ObjectError::PreconditionFailed),
                        false => Ok(()),
                    };
                }
                Some(dest) => {
                    headers::check_conditions(&headers, &dest.etag, headers::modified(dest))
                }
            };
            held.map_err(|_: ConditionFailure| ObjectError::PreconditionFailed)
        },
    )))
}
