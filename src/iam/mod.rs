//! Identities and access: users besides the root user, the policies that say what they may
//! do, bucket policies, and the one decision every S3 request goes through.
//!
//! Who a request comes from is decided by authentication (`crate::api::auth`): the root
//! user, a user (by its access key, which is its name), or anonymous (unsigned). What it may
//! do is decided here, after routing, by [`authorize`]:
//!
//! - the root user may do everything the bucket's policy does not explicitly deny;
//! - a user needs an `Allow` for every action the request is (`crate::api::permissions`), from its
//!   own policies or from the bucket's policy, and no `Deny` from either;
//! - an anonymous request needs an `Allow` for `Principal: "*"` in the bucket's policy, and
//!   no `Deny`;
//! - where nothing allowed or denied, an ACL grant allows (bucket `READ` lists, `WRITE`
//!   puts and deletes, object `READ` gets, `*_ACP` reads and writes ACLs), unless the
//!   bucket disables ACLs (Object Ownership `BucketOwnerEnforced`);
//! - Block Public Access: `IgnorePublicAcls` leaves grants to everyone out, and
//!   `RestrictPublicBuckets` keeps a public policy from allowing anonymous callers.
//!
//! Anything else is `AccessDenied`.

pub mod crypt;
pub mod policy;
pub mod store;

use std::sync::Arc;

pub use policy::{Context, MalformedPolicy, Policy, PolicyKind};
pub use store::{Iam, IamError, PolicyInfo, UserInfo, RECORD_PREFIX};

use crate::object::acl::{Acl, Permission, PublicAccessBlock, Requester};
use crate::object::{BucketName, ObjectError, ObjectKey, ObjectStore};
use policy::{Access, Caller, Decision, Target, S3_ARN_PREFIX};

/// Who sent a request, as authentication found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// The root user: may do everything.
    Root,
    /// A user, by access key (which is its name).
    User(String),
    /// Nobody: an unsigned request.
    Anonymous,
}

/// Why a request may not go on.
#[derive(Debug)]
pub enum Refusal {
    /// Nothing allows it, or something denies it.
    AccessDenied,
    /// An anonymous caller is told a bucket does not exist rather than that it may not use
    /// it (as S3 does: there is nobody's bucket to protect).
    NoSuchBucket,
    /// What decides could not be read (the bucket's record, for example).
    Unavailable(ObjectError),
}

/// The canonical ID (as ACLs and listings name owners) of the root user or a user.
pub fn canonical_id(name: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(name.as_bytes()))
}

/// One permission a request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub action: &'static str,
    /// `None`: the deployment (ListBuckets).
    pub bucket: Option<String>,
    pub on: On,
}

/// What in the bucket a check is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum On {
    Bucket,
    Key(String),
}

impl Check {
    pub fn bucket(action: &'static str, bucket: impl AsRef<str>) -> Self {
        Check {
            action,
            bucket: Some(bucket.as_ref().to_string()),
            on: On::Bucket,
        }
    }

    pub fn key(action: &'static str, bucket: impl AsRef<str>, key: impl AsRef<str>) -> Self {
        Check {
            action,
            bucket: Some(bucket.as_ref().to_string()),
            on: On::Key(key.as_ref().to_string()),
        }
    }

    /// The resource ARN: `arn:aws:s3:::*`, `arn:aws:s3:::bucket` or `arn:aws:s3:::bucket/key`.
    pub fn resource(&self) -> String {
        match (&self.bucket, &self.on) {
            (None, _) => format!("{S3_ARN_PREFIX}*"),
            (Some(bucket), On::Bucket) => format!("{S3_ARN_PREFIX}{bucket}"),
            (Some(bucket), On::Key(key)) => format!("{S3_ARN_PREFIX}{bucket}/{key}"),
        }
    }
}

/// Whether `identity` may do everything `checks` asks, in the request's `context`; the
/// object layer gives the buckets' policies, ACLs and Block Public Access settings.
///
/// `checks` are all the permissions a request needs: an empty list allows, so the caller
/// decides which requests may need none.
pub async fn authorize(
    store: &ObjectStore,
    iam: &Iam,
    identity: &Identity,
    checks: Vec<Check>,
    mut context: Context,
) -> Result<(), Refusal> {
    let caller = match identity {
        Identity::Root => Caller::Root,
        Identity::User(name) => Caller::User(name),
        Identity::Anonymous => Caller::Anonymous,
    };
    // Per bucket: what decides access to it, or `None` when the bucket does not exist.
    let mut buckets: Vec<(String, Option<BucketAccess>)> = Vec::new();
    let mut existing_tags_read = false;
    for check in checks {
        let bucket = match &check.bucket {
            Some(name) => match buckets.iter().find(|(b, _)| b == name) {
                Some((_, access)) => Some(access.clone()),
                None => {
                    let access = bucket_access(store, iam, name).await?;
                    buckets.push((name.clone(), access.clone()));
                    Some(access)
                }
            },
            None => None,
        };
        let missing_bucket = matches!(bucket, Some(None));
        let bucket = bucket.flatten();
        let policy = bucket.as_ref().and_then(|b| b.policy.clone());
        // `s3:ExistingObjectTag/<key>` names the tags of the object acted on: read them
        // only when a policy that may apply asks for them.
        if let (Some(name), On::Key(key), false) = (&check.bucket, &check.on, existing_tags_read) {
            existing_tags_read = true;
            let in_bucket_policy = policy
                .as_ref()
                .is_some_and(|p| p.reads_keys_starting(EXISTING_OBJECT_TAG));
            let in_user_policy = matches!(caller, Caller::User(name)
                if iam.user_reads_keys_starting(name, EXISTING_OBJECT_TAG));
            if in_bucket_policy || in_user_policy {
                for (tag, value) in existing_tags(store, name, key, &context).await {
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
            Caller::User(name) => iam.decide(name, &access),
            Caller::Anonymous => Decision::NotApplicable,
            Caller::Root => Decision::Allow,
        };
        // As on S3, a bucket policy's explicit Deny binds the root user too, except on the
        // policy itself, so that nobody can lock the owner out for good.
        let policy_applies = caller != Caller::Root || !POLICY_ACTIONS.contains(&check.action);
        if let (Some(bucket), Some(policy), true) = (&bucket, &policy, policy_applies) {
            if decision != Decision::Deny {
                let mut said = policy.evaluate(&access);
                // Block Public Access's RestrictPublicBuckets: a public policy grants
                // nothing to callers outside the owner's account.
                if said == Decision::Allow
                    && caller == Caller::Anonymous
                    && bucket.block.restrict_public_buckets
                    && policy.is_public()
                {
                    said = Decision::NotApplicable;
                }
                decision = decision.combine(said);
            }
        }
        // An ACL grant allows what nothing denied.
        if decision == Decision::NotApplicable {
            if let (Some(bucket), Some(name)) = (&bucket, &check.bucket) {
                if acl_grants(store, bucket, name, &check, caller, &context).await {
                    decision = Decision::Allow;
                }
            }
        }
        if decision != Decision::Allow {
            // S3 tells an anonymous caller that a bucket does not exist rather than that it
            // may not use it: there is nobody's bucket to protect.
            if missing_bucket && caller == Caller::Anonymous {
                return Err(Refusal::NoSuchBucket);
            }
            return Err(Refusal::AccessDenied);
        }
    }
    Ok(())
}

/// Whether an ACL of the bucket (or of the object acted on) grants the permission a check
/// stands for to the caller; never when the bucket disables ACLs.
async fn acl_grants(
    store: &ObjectStore,
    bucket: &BucketAccess,
    name: &str,
    check: &Check,
    caller: Caller<'_>,
    context: &Context,
) -> bool {
    let Some((of_object, wanted)) = acl_permission(check.action) else {
        return false;
    };
    if !bucket.acls {
        return false;
    }
    let user_id;
    let requester = match caller {
        Caller::Anonymous => Requester::Anonymous,
        Caller::User(user) => {
            user_id = canonical_id(user);
            Requester::Signed(&user_id)
        }
        Caller::Root => return true,
    };
    let ignore_public = bucket.block.ignore_public_acls;
    match (of_object, &check.on) {
        (false, _) => (bucket.acl.clone())
            .unwrap_or_else(|| Acl::private(&bucket.owner))
            .allows(requester, wanted, ignore_public),
        (true, On::Key(key)) => {
            let (Ok(name), Ok(key)) = (BucketName::parse(name), ObjectKey::parse(key)) else {
                return false;
            };
            let version = context.get("s3:versionid");
            match store.head_object(&name, &key, version).await {
                Ok(record) => (record.acl)
                    .unwrap_or_else(|| Acl::private(&bucket.owner))
                    .allows(requester, wanted, ignore_public),
                Err(_) => false,
            }
        }
        (true, On::Bucket) => false,
    }
}

/// The ACL permission an action needs, and whether on the object (else on the bucket).
fn acl_permission(action: &str) -> Option<(bool, Permission)> {
    Some(match action {
        "s3:ListBucket" | "s3:ListBucketVersions" | "s3:ListBucketMultipartUploads" => {
            (false, Permission::Read)
        }
        "s3:PutObject"
        | "s3:DeleteObject"
        | "s3:DeleteObjectVersion"
        | "s3:AbortMultipartUpload" => (false, Permission::Write),
        "s3:GetBucketAcl" => (false, Permission::ReadAcp),
        "s3:PutBucketAcl" => (false, Permission::WriteAcp),
        "s3:GetObject" | "s3:GetObjectVersion" | "s3:GetObjectTorrent" => (true, Permission::Read),
        "s3:GetObjectAcl" | "s3:GetObjectVersionAcl" => (true, Permission::ReadAcp),
        "s3:PutObjectAcl" | "s3:PutObjectVersionAcl" => (true, Permission::WriteAcp),
        _ => return None,
    })
}

/// The condition keys that name the tags of the object a request acts on (lower-case).
const EXISTING_OBJECT_TAG: &str = "s3:existingobjecttag/";

/// The tags of the object (the version `s3:versionid` names, or the newest) a request acts
/// on; none when it does not exist (then the keys are absent, as S3 has them).
async fn existing_tags(
    store: &ObjectStore,
    bucket: &str,
    key: &str,
    context: &Context,
) -> Vec<(String, String)> {
    let (Ok(bucket), Ok(key)) = (BucketName::parse(bucket), ObjectKey::parse(key)) else {
        return Vec::new();
    };
    let version = context.get("s3:versionid");
    match store.head_object(&bucket, &key, version).await {
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

/// What decides access to a bucket besides the caller's own policies.
#[derive(Clone)]
struct BucketAccess {
    policy: Option<Arc<Policy>>,
    /// Whether ACLs count (Object Ownership is not `BucketOwnerEnforced`).
    acls: bool,
    acl: Option<Acl>,
    /// Canonical ID of the bucket's owner.
    owner: String,
    block: PublicAccessBlock,
}

/// What decides access to a bucket; `None` when the bucket does not exist.
async fn bucket_access(
    store: &ObjectStore,
    iam: &Iam,
    bucket: &str,
) -> Result<Option<BucketAccess>, Refusal> {
    let Ok(name) = BucketName::parse(bucket) else {
        return Ok(None);
    };
    let record = match store.bucket(&name).await {
        Ok(record) => record,
        Err(ObjectError::NoSuchBucket) => return Ok(None),
        Err(e) => return Err(Refusal::Unavailable(e)),
    };
    let settings = &record.settings;
    let policy = match &settings.policy {
        None => None,
        Some(document) => {
            let parse = || Policy::parse(document, PolicyKind::Bucket(bucket));
            match iam.bucket_policies.of(&record, parse) {
                Ok(policy) => Some(policy),
                Err(e) => {
                    // Put policies were validated: one that no longer parses could hide a
                    // Deny.
                    tracing::error!(%bucket, error = %e, "the bucket's stored policy does not parse; denying");
                    return Err(Refusal::AccessDenied);
                }
            }
        }
    };
    Ok(Some(BucketAccess {
        policy,
        acls: settings.acls_enabled(),
        acl: settings.acl.clone(),
        owner: settings.owner(&iam.owner_id()).to_string(),
        block: settings.public_access_block.unwrap_or_default(),
    }))
}
