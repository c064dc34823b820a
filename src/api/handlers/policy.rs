//! Bucket policies (`?policy`): the JSON document kept in the bucket's settings, which
//! authorisation (`crate::iam::authorize`) reads on every request of a user or of nobody.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{change_bucket_settings, Request};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::iam::{MalformedPolicy, Policy, PolicyKind};
use crate::object::BucketName;

pub async fn put_bucket_policy(
    mut request: Request<'_>,
    name: &BucketName,
) -> Result<Response, S3Error> {
    let body = request.small_body().await?;
    let document = std::str::from_utf8(&body)
        .map_err(|_| S3Error::from(MalformedPolicy("Policies must be UTF-8".into())))?;
    let policy =
        Policy::parse(document, PolicyKind::Bucket(name.as_str())).map_err(S3Error::from)?;
    let record = request.state.store.bucket(name).await?;
    super::access::admit_policy(&record.settings, &policy)?;
    change_bucket_settings(
        &request.state.store,
        name,
        StatusCode::NO_CONTENT,
        |settings| settings.policy = Some(document.to_string()),
    )
    .await
}

pub async fn get_bucket_policy(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let record = request.state.store.bucket(bucket).await?;
    match record.settings.policy {
        Some(document) => Ok(([("content-type", "application/json")], document).into_response()),
        None => Err(S3Error::from_code(S3ErrorCode::NoSuchBucketPolicy)),
    }
}

pub async fn delete_bucket_policy(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    change_bucket_settings(
        &request.state.store,
        bucket,
        StatusCode::NO_CONTENT,
        |settings| settings.policy = None,
    )
    .await
}
