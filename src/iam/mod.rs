//! Identities and access: users besides the root user, the policies that say what they may
//! do, bucket policies, and the one decision every S3 request goes through.
//!
//! Who a request comes from is decided by authentication (`crate::api::auth`): the root
//! user, a user (by its access key, which is its name), or anonymous (unsigned). What it may
//! do is decided here, after routing, by [`authorize`]:
//!
//! - the root user may do everything;
//! - a user needs an `Allow` for every action the request is ([`action::checks`]), from its
//!   own policies or from the bucket's policy, and no `Deny` from either;
//! - an anonymous request needs an `Allow` for `Principal: "*"` in the bucket's policy, and
//!   no `Deny`.
//!
//! Anything else is `AccessDenied`.

pub mod action;
pub mod crypt;
pub mod policy;
pub mod store;

use std::net::IpAddr;
use std::sync::Arc;

use axum::http::HeaderMap;

pub use policy::{MalformedPolicy, Policy, PolicyKind};
pub use store::{Iam, IamError, PolicyInfo, UserInfo};

use crate::api::auth::Identity;
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::router::{Endpoint, Query};
use crate::api::AppState;
use crate::object::{BucketName, ObjectError, ObjectKey};
use action::On;
use policy::{Access, Caller, Context, Decision, Target};

/// What authorisation looks at besides the endpoint.
pub struct RequestInfo<'a> {
    pub headers: &'a HeaderMap,
    pub query: &'a Query,
    /// The client's address, when the server knows it (`aws:SourceIp`).
    pub source_ip: Option<IpAddr>,
}

/// Whether `identity` may make the request; `AccessDenied` otherwise.
pub async fn authorize(
    state: &AppState,
    identity: &Identity,
    endpoint: &Endpoint,
    request: &RequestInfo<'_>,
) -> Result<(), S3Error> {
    let caller = match identity {
        Identity::Root => Caller::Root,
        Identity::User(name) => Caller::User(name),
        Identity::Anonymous => Caller::Anonymous,
    };
    let mut context = context(caller, endpoint, request);
    // Per bucket: its policy, or `None` when the bucket does not exist.
    let mut bucket_policies: Vec<(String, Option<BucketPolicy>)> = Vec::new();
    let mut existing_tags_read = false;
    for check in action::checks(endpoint, request.headers) {
        // `s3:ExistingObjectTag/<key>` names the tags of the object acted on: read them
        // only when a policy that may apply asks for them.
        if let (Some(bucket), On::Key(key), false) = (&check.bucket, &check.on, existing_tags_read)
        {
            existing_tags_read = true;
            let policy = match bucket_policies.iter().find(|(b, _)| b == bucket) {
                Some((_, policy)) => policy.clone(),
                None => {
                    let policy = bucket_policy(state, bucket).await?;
                    bucket_policies.push((bucket.clone(), policy.clone()));
                    policy
                }
            };
            let in_bucket_policy = matches!(&policy, Some(Some(p))
                if p.reads_keys_starting(EXISTING_OBJECT_TAG));
            let in_user_policy = matches!(caller, Caller::User(name)
                if state.iam.user_reads_keys_starting(name, EXISTING_OBJECT_TAG));
            if in_bucket_policy || in_user_policy {
                for (tag, value) in existing_tags(state, bucket, key, &context).await {
                    context.set(&format!("s3:ExistingObjectTag/{tag}"), &value);
                }
            }
        }
        let resource = check.resource();
        let access = Access {
            action: check.action,
            target: Target::One(&resource),
            caller,
            context: &context,
        };
        let mut decision = match caller {
            Caller::User(name) => state.iam.decide(name, &access),
            Caller::Anonymous => Decision::NotApplicable,
            Caller::Root => Decision::Allow,
        };
        // As on S3, a bucket policy's explicit Deny binds the root user too, except on the
        // policy itself, so that nobody can lock the owner out for good.
        let policy_applies = caller != Caller::Root || !POLICY_ACTIONS.contains(&check.action);
        let mut missing_bucket = false;
        if decision != Decision::Deny && policy_applies {
            if let Some(bucket) = &check.bucket {
                let policy = match bucket_policies.iter().find(|(b, _)| b == bucket) {
                    Some((_, policy)) => policy.clone(),
                    None => {
                        let policy = bucket_policy(state, bucket).await?;
                        bucket_policies.push((bucket.clone(), policy.clone()));
                        policy
                    }
                };
                missing_bucket = policy.is_none();
                if let Some(Some(policy)) = policy {
                    decision = decision.combine(policy.evaluate(&access));
                }
            }
        }
        if decision != Decision::Allow {
            // S3 tells an anonymous caller that a bucket does not exist rather than that it
            // may not use it: there is nobody's bucket to protect.
            if missing_bucket && caller == Caller::Anonymous {
                return Err(S3Error::from_code(S3ErrorCode::NoSuchBucket));
            }
            return Err(S3Error::from_code(S3ErrorCode::AccessDenied));
        }
    }
    Ok(())
}

/// The condition keys that name the tags of the object a request acts on (lower-case).
const EXISTING_OBJECT_TAG: &str = "s3:existingobjecttag/";

/// The tags of the object (the version `s3:versionid` names, or the newest) a request acts
/// on; none when it does not exist (then the keys are absent, as S3 has them).
async fn existing_tags(
    state: &AppState,
    bucket: &str,
    key: &str,
    context: &Context,
) -> Vec<(String, String)> {
    let (Ok(bucket), Ok(key)) = (BucketName::parse(bucket), ObjectKey::parse(key)) else {
        return Vec::new();
    };
    let version = context.get("s3:versionid");
    match state.store.head_object(&bucket, &key, version).await {
        Ok(record) => record.tags,
        Err(_) => Vec::new(),
    }
}

/// The actions on a bucket's policy, which the policy cannot deny the root user.
const POLICY_ACTIONS: [&str; 3] = [
    "s3:GetBucketPolicy",
    "s3:PutBucketPolicy",
    "s3:DeleteBucketPolicy",
];

/// A bucket's policy, if it has one.
type BucketPolicy = Option<Arc<Policy>>;

/// The condition keys of a request.
fn context(caller: Caller<'_>, endpoint: &Endpoint, request: &RequestInfo<'_>) -> Context {
    let mut context = Context::default();
    // Strata serves plain HTTP.
    context.set("aws:SecureTransport", "false");
    match request.source_ip {
        Some(ip) => {
            let ip = match ip {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
                v4 => v4,
            };
            context.set("aws:SourceIp", ip.to_string());
        }
        None => context.set_unknown("aws:SourceIp"),
    }
    match caller {
        Caller::User(name) => {
            context.set("aws:username", name);
            context.set("aws:userid", name);
            context.set("aws:PrincipalType", "User");
        }
        Caller::Anonymous => context.set("aws:PrincipalType", "Anonymous"),
        Caller::Root => context.set("aws:PrincipalType", "Account"),
    }
    for (header, key) in [("user-agent", "aws:UserAgent"), ("referer", "aws:Referer")] {
        if let Some(value) = request.headers.get(header).and_then(|v| v.to_str().ok()) {
            context.set(key, value);
        }
    }
    action::request_keys(endpoint, request.query, &mut context);
    action::header_keys(request.headers, &mut context);
    context
}

/// The bucket's policy, if it has one; `None` when the bucket does not exist.
async fn bucket_policy(state: &AppState, bucket: &str) -> Result<Option<BucketPolicy>, S3Error> {
    let Ok(name) = BucketName::parse(bucket) else {
        return Ok(None);
    };
    let record = match state.store.bucket(&name).await {
        Ok(record) => record,
        Err(ObjectError::NoSuchBucket) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let Some(document) = &record.settings.policy else {
        return Ok(Some(None));
    };
    let parse = || Policy::parse(document, PolicyKind::Bucket(bucket));
    match state.iam.bucket_policies.of(&record, parse) {
        Ok(policy) => Ok(Some(Some(policy))),
        Err(e) => {
            // Put policies were validated: one that no longer parses could hide a Deny.
            tracing::error!(%bucket, error = %e, "the bucket's stored policy does not parse; denying");
            Err(S3Error::from_code(S3ErrorCode::AccessDenied))
        }
    }
}

/// S3's answer to a policy document it refuses.
pub fn malformed_policy(err: MalformedPolicy) -> S3Error {
    S3Error::new(S3ErrorCode::MalformedPolicy, err.0)
}
