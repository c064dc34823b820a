//! Bucket operations.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{bucket_name, Request};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::iso8601;
use crate::api::{xml, xml_response};
use crate::iam::action::creates_locked_bucket;
use crate::object::ObjectError;

pub async fn list_buckets(request: Request<'_>) -> Result<Response, S3Error> {
    let buckets = request.state.store.list_buckets().await?;
    let doc = xml::ListAllMyBucketsResult {
        xmlns: (),
        owner: owner(&request),
        buckets: xml::Buckets {
            bucket: buckets
                .into_iter()
                .map(|b| xml::BucketEntry {
                    name: b.name,
                    creation_date: iso8601(b.created_ms),
                })
                .collect(),
        },
    };
    Ok(xml_response(xml::render("ListAllMyBucketsResult", &doc)))
}

/// The owner shown in listings: the deployment's root user.
pub fn owner(request: &Request<'_>) -> xml::Owner {
    let user = request.state.owner.clone();
    xml::Owner {
        id: hex::encode(sha2_digest(user.as_bytes())),
        display_name: user,
    }
}

fn sha2_digest(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

pub async fn create_bucket(mut request: Request<'_>, bucket: &str) -> Result<Response, S3Error> {
    let name = bucket_name(bucket)?;
    let body = request.small_body().await?;
    if !body.iter().all(u8::is_ascii_whitespace) {
        let config: xml::CreateBucketConfiguration = xml::parse(&body)?;
        let region = request.state.keyring.region();
        if config
            .location_constraint
            .is_some_and(|c| !c.is_empty() && c != region)
        {
            return Err(S3Error::from_code(S3ErrorCode::InvalidLocationConstraint));
        }
    }
    // Object Lock can be asked for at creation (it brings versioning, enabled for good).
    let store = &request.state.store;
    let created = if creates_locked_bucket(request.headers) {
        store.create_locked_bucket(&name).await.map(drop)
    } else {
        store.create_bucket(&name).await.map(drop)
    };
    match created {
        // S3 in us-east-1 answers the re-creation of one's own bucket with 200, for legacy
        // clients; other regions with 409 BucketAlreadyOwnedByYou.
        Err(ObjectError::BucketExists) if request.state.keyring.region() == "us-east-1" => {}
        created => {
            created?;
        }
    }
    Ok(([("location", format!("/{bucket}"))], StatusCode::OK).into_response())
}

pub async fn head_bucket(request: Request<'_>, bucket: &str) -> Result<Response, S3Error> {
    let name = bucket_name(bucket)?;
    request.state.store.bucket(&name).await?;
    let region = request.state.keyring.region().to_string();
    Ok(([("x-amz-bucket-region", region)], StatusCode::OK).into_response())
}

pub async fn delete_bucket(request: Request<'_>, bucket: &str) -> Result<Response, S3Error> {
    let name = bucket_name(bucket)?;
    request.state.store.delete_bucket(&name).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub async fn get_bucket_location(request: Request<'_>, bucket: &str) -> Result<Response, S3Error> {
    let name = bucket_name(bucket)?;
    request.state.store.bucket(&name).await?;
    // AWS answers an empty constraint for us-east-1.
    let region = match request.state.keyring.region() {
        "us-east-1" => String::new(),
        other => other.to_string(),
    };
    let doc = xml::LocationConstraint { xmlns: (), region };
    Ok(xml_response(xml::render("LocationConstraint", &doc)))
}
