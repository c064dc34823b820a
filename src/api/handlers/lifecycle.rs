//! Bucket lifecycle configuration (`?lifecycle`): rules checked as S3 checks them, stored as
//! S3's XML in the bucket's settings; the lifecycle scanner applies them.

use axum::http::StatusCode;
use axum::response::Response;

use super::{change_bucket_settings, Request};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::xml_response;
use crate::lifecycle::LifecycleConfig;
use crate::object::BucketName;

pub async fn put_bucket_lifecycle(
    mut request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    // S3 requires a digest of the rules, so a corrupted body never deletes the wrong objects.
    request.require_body_digest()?;
    let body = request.small_body().await?;
    let text =
        std::str::from_utf8(&body).map_err(|_| S3Error::from_code(S3ErrorCode::MalformedXML))?;
    let config = LifecycleConfig::from_xml(text)?;
    let stored = config.to_xml();
    change_bucket_settings(&request.state.store, bucket, StatusCode::OK, |settings| {
        settings.lifecycle = Some(stored.clone())
    })
    .await
}

pub async fn get_bucket_lifecycle(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let record = request.state.store.bucket(bucket).await?;
    match record.settings.lifecycle {
        Some(xml) => Ok(xml_response(xml)),
        None => Err(S3Error::from_code(
            S3ErrorCode::NoSuchLifecycleConfiguration,
        )),
    }
}

pub async fn delete_bucket_lifecycle(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    change_bucket_settings(
        &request.state.store,
        bucket,
        StatusCode::NO_CONTENT,
        |settings| settings.lifecycle = None,
    )
    .await
}
