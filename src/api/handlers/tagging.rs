//! Object and bucket tagging (`?tagging`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::versioning::with_version;
use super::{change_bucket_settings, Request};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::{check_tags, TagLimit, BUCKET_TAG_LIMIT, OBJECT_TAG_LIMIT};
use crate::api::{xml, xml_response};
use crate::object::BucketName;
use crate::object::ObjectKey;

/// Reads and checks the tag set of a PutObjectTagging or PutBucketTagging request.
async fn tag_set(
    request: &mut Request<'_>,
    limit: TagLimit,
) -> Result<Vec<(String, String)>, S3Error> {
    let body = request.small_body().await?;
    let tagging: xml::Tagging = xml::parse(&body)?;
    check_tags(tagging.into_pairs(), limit)
}

/// A tag set as S3 returns it: sorted by key.
fn tagging_response(tags: &[(String, String)]) -> Response {
    let mut tags = tags.to_vec();
    tags.sort();
    xml_response(xml::render("Tagging", &xml::Tagging::new(&tags)))
}

pub async fn put_object_tagging(
    mut request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    version_id: Option<&str>,
) -> Result<Response, S3Error> {
    let tags = tag_set(&mut request, OBJECT_TAG_LIMIT).await?;
    let record = request
        .state
        .store
        .update_object_metadata(bucket, key, version_id, |current| {
            let mut record = current.clone();
            record.tags = tags;
            Ok(record)
        })
        .await?;
    let response = StatusCode::OK.into_response();
    Ok(with_version(request.state, bucket, &record, version_id, response).await)
}

pub async fn get_object_tagging(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    version_id: Option<&str>,
) -> Result<Response, S3Error> {
    let record = request
        .state
        .store
        .head_object(bucket, key, version_id)
        .await?;
    let response = tagging_response(&record.tags);
    Ok(with_version(request.state, bucket, &record, version_id, response).await)
}

pub async fn delete_object_tagging(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    version_id: Option<&str>,
) -> Result<Response, S3Error> {
    let record = request
        .state
        .store
        .update_object_metadata(bucket, key, version_id, |current| {
            let mut record = current.clone();
            record.tags.clear();
            Ok(record)
        })
        .await?;
    let response = StatusCode::NO_CONTENT.into_response();
    Ok(with_version(request.state, bucket, &record, version_id, response).await)
}

pub async fn put_bucket_tagging(
    mut request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let tags = tag_set(&mut request, BUCKET_TAG_LIMIT).await?;
    change_bucket_settings(
        &request.state.store,
        bucket,
        StatusCode::NO_CONTENT,
        |settings| settings.tags = Some(tags.clone()),
    )
    .await
}

pub async fn get_bucket_tagging(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let record = request.state.store.bucket(bucket).await?;
    match &record.settings.tags {
        Some(tags) => Ok(tagging_response(tags)),
        None => Err(S3Error::from_code(S3ErrorCode::NoSuchTagSet)),
    }
}

pub async fn delete_bucket_tagging(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    change_bucket_settings(
        &request.state.store,
        bucket,
        StatusCode::NO_CONTENT,
        |settings| settings.tags = None,
    )
    .await
}
