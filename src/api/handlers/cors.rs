//! Bucket CORS configuration (`?cors`) and browsers' preflight `OPTIONS` requests.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{change_bucket_settings, Request};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::header;
use crate::api::{cors, xml, xml_response};
use crate::object::BucketName;

pub async fn put_bucket_cors(
    mut request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let body = request.small_body().await?;
    let rules = cors::validate(xml::parse(&body)?)?;
    change_bucket_settings(&request.state.store, bucket, StatusCode::OK, |settings| {
        settings.cors = Some(rules.clone())
    })
    .await
}

pub async fn get_bucket_cors(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let record = request.state.store.bucket(bucket).await?;
    match &record.settings.cors {
        Some(rules) => Ok(xml_response(xml::render(
            "CORSConfiguration",
            &cors::to_xml(rules),
        ))),
        None => Err(S3Error::from_code(S3ErrorCode::NoSuchCORSConfiguration)),
    }
}

pub async fn delete_bucket_cors(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    change_bucket_settings(
        &request.state.store,
        bucket,
        StatusCode::NO_CONTENT,
        |settings| settings.cors = None,
    )
    .await
}

/// Answers a browser's preflight by the bucket's rules; unauthenticated, as in S3.
pub async fn preflight(request: Request<'_>, name: &BucketName) -> Result<Response, S3Error> {
    let (Some(origin), Some(method)) = (
        header(request.headers, "origin"),
        header(request.headers, "access-control-request-method"),
    ) else {
        return Err(S3Error::from_code(S3ErrorCode::BadRequest));
    };
    let record = request.state.store.bucket(name).await?;
    let Some(rules) = &record.settings.cors else {
        return Err(S3Error::new(
            S3ErrorCode::AccessForbidden,
            "CORSResponse: CORS is not enabled for this bucket.",
        ));
    };
    let requested = cors::requested_headers(request.headers);
    let rule = cors::matching_rule(rules, origin, method, &requested)
        .ok_or_else(|| S3Error::from_code(S3ErrorCode::AccessForbidden))?;
    let mut response = StatusCode::OK.into_response();
    response
        .headers_mut()
        .extend(cors::allow_headers(rule, origin, Some(&requested)));
    Ok(response)
}
