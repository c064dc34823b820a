//! Who may reach a bucket and its objects besides its policy: ACLs (`?acl` on buckets and
//! objects), Object Ownership (`?ownershipControls`), Block Public Access
//! (`?publicAccessBlock`) and whether the policy makes the bucket public (`?policyStatus`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::versioning::with_version;
use super::{change_bucket_settings, Request};
use crate::api::acl::{self, Accounts};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::{xml, xml_response};
use crate::iam::{Policy, PolicyKind};
use crate::object::acl::{Acl, ObjectOwnership, PublicAccessBlock};
use crate::object::BucketName;
use crate::object::ObjectError;
use crate::object::ObjectKey;

/// The ACL a PutBucketAcl or PutObjectAcl sets: from its headers or its body, not both.
async fn requested_acl(
    request: &mut Request<'_>,
    (owner, bucket_owner): (&str, &str),
) -> Result<Acl, S3Error> {
    let accounts = Accounts::of(request.state);
    let body = request.small_body().await?;
    let in_body = !body.iter().all(u8::is_ascii_whitespace);
    match acl::from_headers(request.headers, (owner, bucket_owner), &accounts)? {
        Some(_) if in_body => Err(S3Error::new(
            S3ErrorCode::UnexpectedContent,
            "This request does not support content",
        )),
        Some(acl) => Ok(acl),
        None if in_body => acl::from_xml(&body, owner, &accounts),
        None => Err(S3Error::new(
            S3ErrorCode::MissingSecurityHeader,
            "Your request was missing a required header",
        )),
    }
}

pub async fn get_bucket_acl(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let record = request.state.store.bucket(bucket).await?;
    let owner = acl::bucket_owner(request.state, &record.settings);
    let acl = (record.settings.acl).unwrap_or_else(|| Acl::private(&owner));
    Ok(xml_response(acl::to_xml(
        &acl,
        &Accounts::of(request.state),
    )))
}

pub async fn put_bucket_acl(
    mut request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let record = request.state.store.bucket(bucket).await?;
    let owner = acl::bucket_owner(request.state, &record.settings);
    let acl = requested_acl(&mut request, (&owner, &owner)).await?;
    acl::admit(
        &acl,
        &record.settings,
        S3ErrorCode::AccessControlListNotSupported,
    )?;
    let stored = (!acl.is_private()).then_some(acl);
    change_bucket_settings(&request.state.store, bucket, StatusCode::OK, |settings| {
        settings.acl = stored.clone()
    })
    .await
}

pub async fn get_object_acl(
    request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    version_id: Option<&str>,
) -> Result<Response, S3Error> {
    let store = &request.state.store;
    let bucket_owner = acl::bucket_owner(request.state, &store.bucket(bucket).await?.settings);
    let record = store.head_object(bucket, key, version_id).await?;
    let acl = acl::of_object(&bucket_owner, record.acl.as_ref());
    let response = xml_response(acl::to_xml(&acl, &Accounts::of(request.state)));
    Ok(with_version(request.state, bucket, &record, version_id, response).await)
}

pub async fn put_object_acl(
    mut request: Request<'_>,
    bucket: &BucketName,
    key: &ObjectKey,
    version_id: Option<&str>,
) -> Result<Response, S3Error> {
    let store = request.state.store.clone();
    let bucket_record = store.bucket(bucket).await?;
    let current = store.head_object(bucket, key, version_id).await?;
    let bucket_owner = acl::bucket_owner(request.state, &bucket_record.settings);
    let owner = acl::of_object(&bucket_owner, current.acl.as_ref()).owner;
    let acl = requested_acl(&mut request, (&owner, &bucket_owner)).await?;
    acl::admit(
        &acl,
        &bucket_record.settings,
        S3ErrorCode::AccessControlListNotSupported,
    )?;
    let stored = (!(acl.owner == bucket_owner && acl.is_private())).then_some(acl);
    let record = store
        .update_object_metadata(bucket, key, version_id, |held| {
            // The version judged is the version changed.
            if held.data_id != current.data_id {
                return Err(ObjectError::Conflict);
            }
            let mut changed = held.clone();
            changed.acl = stored.clone();
            Ok(changed)
        })
        .await?;
    let response = StatusCode::OK.into_response();
    Ok(with_version(request.state, bucket, &record, version_id, response).await)
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct OwnershipControls {
    #[serde(rename = "@xmlns", default, skip_deserializing)]
    xmlns: String,
    #[serde(rename = "Rule")]
    rules: Vec<OwnershipRule>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct OwnershipRule {
    object_ownership: String,
}

pub async fn put_ownership_controls(
    mut request: Request<'_>,
    name: &BucketName,
) -> Result<Response, S3Error> {
    let body = request.small_body().await?;
    let controls: OwnershipControls = xml::parse(&body)?;
    let [rule] = controls.rules.as_slice() else {
        return Err(S3Error::from_code(S3ErrorCode::MalformedXML));
    };
    let ownership = ObjectOwnership::parse(rule.object_ownership.trim())
        .ok_or_else(|| S3Error::from_code(S3ErrorCode::MalformedXML))?;
    // Disabling ACLs needs a bucket whose ACL gives nothing to anyone but its owner.
    let record = request.state.store.bucket(name).await?;
    let owner_only = record.settings.acl.as_ref().is_none_or(Acl::is_private);
    if !ownership.acls_enabled() && !owner_only {
        return Err(S3Error::from_code(
            S3ErrorCode::InvalidBucketAclWithObjectOwnership,
        ));
    }
    change_bucket_settings(&request.state.store, name, StatusCode::OK, |settings| {
        settings.ownership = Some(ownership)
    })
    .await?;
    Ok(StatusCode::OK.into_response())
}

pub async fn get_ownership_controls(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let record = request.state.store.bucket(bucket).await?;
    let Some(ownership) = record.settings.ownership else {
        return Err(S3Error::from_code(
            S3ErrorCode::OwnershipControlsNotFoundError,
        ));
    };
    let controls = OwnershipControls {
        xmlns: xml::XMLNS.to_string(),
        rules: vec![OwnershipRule {
            object_ownership: ownership.as_str().to_string(),
        }],
    };
    Ok(xml_response(xml::render("OwnershipControls", &controls)))
}

pub async fn delete_ownership_controls(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    change_bucket_settings(
        &request.state.store,
        bucket,
        StatusCode::NO_CONTENT,
        |settings| settings.ownership = None,
    )
    .await
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PublicAccessBlockConfiguration {
    #[serde(rename = "@xmlns", default, skip_deserializing)]
    xmlns: String,
    #[serde(default)]
    block_public_acls: Option<bool>,
    #[serde(default)]
    ignore_public_acls: Option<bool>,
    #[serde(default)]
    block_public_policy: Option<bool>,
    #[serde(default)]
    restrict_public_buckets: Option<bool>,
}

pub async fn put_public_access_block(
    mut request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let body = request.small_body().await?;
    let config: PublicAccessBlockConfiguration = xml::parse(&body)?;
    let block = PublicAccessBlock {
        block_public_acls: config.block_public_acls.unwrap_or(false),
        ignore_public_acls: config.ignore_public_acls.unwrap_or(false),
        block_public_policy: config.block_public_policy.unwrap_or(false),
        restrict_public_buckets: config.restrict_public_buckets.unwrap_or(false),
    };
    change_bucket_settings(&request.state.store, bucket, StatusCode::OK, |settings| {
        settings.public_access_block = Some(block)
    })
    .await
}

pub async fn get_public_access_block(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let record = request.state.store.bucket(bucket).await?;
    let Some(block) = record.settings.public_access_block else {
        return Err(S3Error::from_code(
            S3ErrorCode::NoSuchPublicAccessBlockConfiguration,
        ));
    };
    let config = PublicAccessBlockConfiguration {
        xmlns: xml::XMLNS.to_string(),
        block_public_acls: Some(block.block_public_acls),
        ignore_public_acls: Some(block.ignore_public_acls),
        block_public_policy: Some(block.block_public_policy),
        restrict_public_buckets: Some(block.restrict_public_buckets),
    };
    Ok(xml_response(xml::render(
        "PublicAccessBlockConfiguration",
        &config,
    )))
}

pub async fn delete_public_access_block(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    change_bucket_settings(
        &request.state.store,
        bucket,
        StatusCode::NO_CONTENT,
        |settings| settings.public_access_block = None,
    )
    .await
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct PolicyStatus {
    #[serde(rename = "@xmlns")]
    xmlns: &'static str,
    is_public: bool,
}

pub async fn get_policy_status(
    request: Request<'_>,
    name: &BucketName,
) -> Result<Response, S3Error> {
    let record = request.state.store.bucket(name).await?;
    let Some(document) = &record.settings.policy else {
        return Err(S3Error::from_code(S3ErrorCode::NoSuchBucketPolicy));
    };
    let policy = Policy::parse(document, PolicyKind::Bucket(name.as_str()))
        .map_err(|_| S3Error::from_code(S3ErrorCode::InternalError))?;
    let status = PolicyStatus {
        xmlns: xml::XMLNS,
        is_public: policy.is_public(),
    };
    Ok(xml_response(xml::render("PolicyStatus", &status)))
}

/// Refuses a bucket policy that Block Public Access's `BlockPublicPolicy` forbids.
pub fn admit_policy(
    settings: &crate::object::BucketSettings,
    policy: &Policy,
) -> Result<(), S3Error> {
    let blocked = settings
        .public_access_block
        .is_some_and(|b| b.block_public_policy);
    if blocked && policy.is_public() {
        return Err(S3Error::new(
            S3ErrorCode::AccessDenied,
            "Access Denied: Block Public Access forbids public bucket policies on this bucket",
        ));
    }
    Ok(())
}
