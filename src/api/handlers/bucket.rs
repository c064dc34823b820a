//! Bucket operations.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::Request;
use crate::api::acl;
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::headers::{self, iso8601};
use crate::api::permissions::creates_locked_bucket;
use crate::api::{xml, xml_response};
use crate::object::acl::{Acl, ObjectOwnership};
use crate::object::BucketName;
use crate::object::{BucketSettings, ObjectError};

/// Most buckets one ListBuckets page holds, and what `max-buckets` may ask for.
const MAX_BUCKETS: usize = 10_000;

/// ListBuckets: every bucket, or a page of them (`max-buckets`, `continuation-token`,
/// `prefix`), in name order.
pub async fn list_buckets(request: Request<'_>) -> Result<Response, S3Error> {
    let max = match request.query.get("max-buckets") {
        None => MAX_BUCKETS,
        Some(value) => value
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_BUCKETS).contains(n))
            .ok_or_else(|| {
                S3Error::new(
                    S3ErrorCode::InvalidArgument,
                    "max-buckets must be an integer between 1 and 10000",
                )
            })?,
    };
    let prefix = request.query.get("prefix").filter(|p| !p.is_empty());
    let after = match request.query.get("continuation-token") {
        Some(token) => Some(decode_bucket_token(token)?),
        None => None,
    };
    let mut buckets: Vec<_> = (request.state.store.list_buckets().await?.into_iter())
        .filter(|b| prefix.is_none_or(|p| b.name.starts_with(p)))
        .filter(|b| after.as_ref().is_none_or(|after| b.name > *after))
        .collect();
    let truncated = buckets.len() > max;
    buckets.truncate(max);
    let continuation_token = truncated
        .then(|| buckets.last().map(|b| hex::encode(&b.name)))
        .flatten();
    let doc = xml::ListAllMyBucketsResult {
        xmlns: (),
        owner: account(
            request.state,
            &acl::requester_id(request.state, &request.identity),
        ),
        buckets: xml::Buckets {
            bucket: buckets
                .into_iter()
                .map(|b| xml::BucketEntry {
                    name: b.name,
                    creation_date: iso8601(b.created_ms),
                })
                .collect(),
        },
        continuation_token,
        prefix: prefix.map(str::to_string),
    };
    Ok(xml_response(xml::render("ListAllMyBucketsResult", &doc)))
}

/// A ListBuckets continuation token: the hex of the last bucket name of the page before.
fn decode_bucket_token(token: &str) -> Result<String, S3Error> {
    hex::decode(token)
        .ok()
        .and_then(|name| String::from_utf8(name).ok())
        .ok_or_else(|| {
            S3Error::new(
                S3ErrorCode::InvalidArgument,
                "The continuation token provided is incorrect",
            )
        })
}

/// The `Owner` element of canonical ID `id`, named as `accounts` name it (by its ID alone
/// once no account has it any more).
fn owner_named(id: &str, accounts: &acl::Accounts) -> xml::Owner {
    xml::Owner {
        id: id.to_string(),
        display_name: accounts.name(id).unwrap_or(id).to_string(),
    }
}

/// The `Owner` element of the account with canonical ID `id`. The root user's needs no
/// lookup of the users.
pub fn account(state: &crate::api::S3State, id: &str) -> xml::Owner {
    match id == state.owner_id() {
        true => xml::Owner {
            id: id.to_string(),
            display_name: state.owner.clone(),
        },
        false => owner_named(id, &acl::Accounts::of(state)),
    }
}

/// The `Owner` element of a bucket's owner: the user who created it.
pub async fn bucket_owner_element(
    state: &crate::api::S3State,
    bucket: &BucketName,
) -> Result<xml::Owner, S3Error> {
    let record = state.store.bucket(bucket).await?;
    Ok(account(state, &acl::bucket_owner(state, &record.settings)))
}

/// The owners a listing names: the bucket's owner, or a version's writer where the bucket
/// lets writers own what they write (the version's ACL names them), by the account's name.
/// The accounts are looked up once per listing, and only for a version another owns.
pub struct ListedOwners<'a> {
    request: &'a Request<'a>,
    bucket_owner: xml::Owner,
    accounts: std::cell::OnceCell<acl::Accounts>,
}

impl<'a> ListedOwners<'a> {
    pub fn new(request: &'a Request<'a>, bucket_owner: xml::Owner) -> Self {
        Self {
            request,
            bucket_owner,
            accounts: std::cell::OnceCell::new(),
        }
    }

    pub fn of(&self, record: &crate::object::ObjectRecord) -> xml::Owner {
        match record.acl.as_ref().map(|acl| &acl.owner) {
            Some(id) if *id != self.bucket_owner.id => {
                let accounts =
                    (self.accounts).get_or_init(|| acl::Accounts::of(self.request.state));
                owner_named(id, accounts)
            }
            _ => self.bucket_owner.clone(),
        }
    }
}

pub async fn create_bucket(
    mut request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    let mut settings = BucketSettings::default();
    if creates_locked_bucket(request.headers) {
        settings = settings.with_object_lock();
    }
    let creator = acl::requester_id(request.state, &request.identity);
    if creator != request.state.owner_id() {
        settings.owner = Some(creator.clone());
    }
    (settings.ownership, settings.acl) = initial_access(&request, &creator)?;
    let body = request.small_body().await?;
    let mut constraint = String::new();
    if !body.iter().all(u8::is_ascii_whitespace) {
        let config: xml::CreateBucketConfiguration = xml::parse(&body)?;
        constraint = config.location_constraint.unwrap_or_default();
    }
    let region = request.state.keyring.region();
    // Signed for the region it names, at the global endpoint (see `creates_bucket`).
    if let Some(signed_for) = &request.signed_for_region {
        if *signed_for != constraint || region != crate::config::DEFAULT_REGION {
            return Err(crate::api::auth::wrong_region(signed_for, region));
        }
    }
    check_location(&constraint, region)?;
    let asked_acl = settings.acl.clone();
    let store = &request.state.store;
    match store.create_bucket_with(bucket, settings).await.map(drop) {
        Err(ObjectError::BucketExists) => {
            // Another user's bucket is not re-created: its name is taken.
            let held = store.bucket(bucket).await?;
            if acl::bucket_owner(request.state, &held.settings) != creator {
                return Err(S3Error::from_code(S3ErrorCode::BucketAlreadyExists));
            }
            // S3 in us-east-1 answers the re-creation of one's own bucket with 200, for
            // legacy clients, and resets its ACL to the one asked for (other regions answer
            // 409 BucketAlreadyOwnedByYou).
            if region != crate::config::DEFAULT_REGION {
                return Err(ObjectError::BucketExists.into());
            }
            store
                .update_bucket_settings(bucket, |settings| {
                    if settings.acls_enabled() {
                        settings.acl = asked_acl.clone();
                    }
                    Ok(())
                })
                .await?;
        }
        created => created?,
    }
    Ok(([("location", format!("/{bucket}"))], StatusCode::OK).into_response())
}

/// A CreateBucket's `LocationConstraint` as S3 judges it: a server in us-east-1 answers as
/// S3's global endpoint does and takes a bucket for any region (it lives here, and reports
/// this server's region), one in another region as that region's endpoint does.
fn check_location(constraint: &str, region: &str) -> Result<(), S3Error> {
    let named = constraint == "EU" || crate::config::is_region_name(constraint);
    if !(constraint.is_empty() || named) {
        return Err(S3Error::from_code(S3ErrorCode::InvalidLocationConstraint));
    }
    if constraint.is_empty() || constraint == region || region == crate::config::DEFAULT_REGION {
        return Ok(());
    }
    let message = format!(
        "The {constraint} location constraint is incompatible for the region specific endpoint this request was sent to."
    );
    Err(S3Error::new(
        S3ErrorCode::IllegalLocationConstraintException,
        message,
    ))
}

/// A new bucket's Object Ownership (`x-amz-object-ownership`, S3's `BucketOwnerEnforced`
/// by default) and ACL (`x-amz-acl` or grants), which ACLs disabled by the first refuse.
fn initial_access(
    request: &Request<'_>,
    owner: &str,
) -> Result<(Option<ObjectOwnership>, Option<Acl>), S3Error> {
    let ownership = match headers::header(request.headers, "x-amz-object-ownership") {
        None => request.state.default_ownership,
        Some(value) => ObjectOwnership::parse(value.trim()).ok_or_else(|| {
            S3Error::new(
                S3ErrorCode::InvalidArgument,
                "Invalid x-amz-object-ownership header",
            )
        })?,
    };
    let accounts = acl::Accounts::of(request.state);
    let acl = acl::from_headers(request.headers, (owner, owner), &accounts)?;
    let acl = acl.filter(|acl| !acl.is_private());
    if acl.is_some() && !ownership.acls_enabled() {
        return Err(S3Error::from_code(
            S3ErrorCode::InvalidBucketAclWithObjectOwnership,
        ));
    }
    Ok((Some(ownership), acl))
}

pub async fn head_bucket(request: Request<'_>, name: &BucketName) -> Result<Response, S3Error> {
    request.state.store.bucket(name).await?;
    let region = request.state.keyring.region().to_string();
    Ok(([("x-amz-bucket-region", region)], StatusCode::OK).into_response())
}

pub async fn delete_bucket(request: Request<'_>, bucket: &BucketName) -> Result<Response, S3Error> {
    request.state.store.delete_bucket(bucket).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub async fn get_bucket_location(
    request: Request<'_>,
    bucket: &BucketName,
) -> Result<Response, S3Error> {
    request.state.store.bucket(bucket).await?;
    // AWS answers an empty constraint for us-east-1.
    let region = match request.state.keyring.region() {
        "us-east-1" => String::new(),
        other => other.to_string(),
    };
    let doc = xml::LocationConstraint { xmlns: (), region };
    Ok(xml_response(xml::render("LocationConstraint", &doc)))
}
