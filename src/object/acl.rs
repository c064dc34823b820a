//! Access control lists, Object Ownership and Block Public Access, as S3 defines them: the
//! data kept in bucket and object records, and what a grant allows. Parsing and rendering
//! S3's XML and headers is the API's; deciding a request is IAM's.

use serde::{Deserialize, Serialize};

/// An ACL: the resource's owner and the grants it holds. The owner always has full control
/// on top of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acl {
    /// Canonical ID of the owner.
    pub owner: String,
    pub grants: Vec<Grant>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub grantee: Grantee,
    pub permission: Permission,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Grantee {
    /// A user, by canonical ID.
    User(String),
    /// Everyone, anonymous callers included (`.../global/AllUsers`).
    AllUsers,
    /// Every signed request (`.../global/AuthenticatedUsers`).
    AuthenticatedUsers,
    /// The log delivery group: kept and shown, never a caller of Strata.
    LogDelivery,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Permission {
    Read,
    Write,
    ReadAcp,
    WriteAcp,
    FullControl,
}

/// S3's canned ACLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CannedAcl {
    Private,
    PublicRead,
    PublicReadWrite,
    AuthenticatedRead,
    BucketOwnerRead,
    BucketOwnerFullControl,
}

/// Who a request comes from, as a grant sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requester<'a> {
    Anonymous,
    /// A signed request, by the caller's canonical ID.
    Signed(&'a str),
}

impl Permission {
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "READ",
            Permission::Write => "WRITE",
            Permission::ReadAcp => "READ_ACP",
            Permission::WriteAcp => "WRITE_ACP",
            Permission::FullControl => "FULL_CONTROL",
        }
    }

    pub fn parse(name: &str) -> Option<Permission> {
        [
            Permission::Read,
            Permission::Write,
            Permission::ReadAcp,
            Permission::WriteAcp,
            Permission::FullControl,
        ]
        .into_iter()
        .find(|p| p.as_str() == name)
    }

    /// Whether holding this permission gives `wanted`.
    fn gives(self, wanted: Permission) -> bool {
        self == wanted || self == Permission::FullControl
    }
}

impl CannedAcl {
    pub fn parse(name: &str) -> Option<CannedAcl> {
        Some(match name {
            "private" => CannedAcl::Private,
            "public-read" => CannedAcl::PublicRead,
            "public-read-write" => CannedAcl::PublicReadWrite,
            "authenticated-read" => CannedAcl::AuthenticatedRead,
            "bucket-owner-read" => CannedAcl::BucketOwnerRead,
            "bucket-owner-full-control" => CannedAcl::BucketOwnerFullControl,
            _ => return None,
        })
    }

    /// The ACL this canned ACL stands for, on a resource owned by `owner` in a bucket owned
    /// by `bucket_owner` (the `bucket-owner-*` ACLs name the bucket's owner; on a bucket
    /// they mean `private`).
    pub fn acl(self, owner: &str, bucket_owner: &str) -> Acl {
        let grant = |grantee, permission| Grant {
            grantee,
            permission,
        };
        let mut grants = vec![grant(
            Grantee::User(owner.to_string()),
            Permission::FullControl,
        )];
        let bucket_owner_grant = |permission| {
            (bucket_owner != owner).then(|| grant(Grantee::User(bucket_owner.into()), permission))
        };
        match self {
            CannedAcl::Private => {}
            CannedAcl::PublicRead => grants.push(grant(Grantee::AllUsers, Permission::Read)),
            CannedAcl::PublicReadWrite => {
                grants.push(grant(Grantee::AllUsers, Permission::Read));
                grants.push(grant(Grantee::AllUsers, Permission::Write));
            }
            CannedAcl::AuthenticatedRead => {
                grants.push(grant(Grantee::AuthenticatedUsers, Permission::Read))
            }
            CannedAcl::BucketOwnerRead => grants.extend(bucket_owner_grant(Permission::Read)),
            CannedAcl::BucketOwnerFullControl => {
                grants.extend(bucket_owner_grant(Permission::FullControl))
            }
        }
        Acl {
            owner: owner.to_string(),
            grants,
        }
    }
}

impl Acl {
    /// The ACL of a resource nobody set one on: its owner has full control.
    pub fn private(owner: &str) -> Acl {
        CannedAcl::Private.acl(owner, owner)
    }

    /// Whether the ACL gives `requester` the `wanted` permission. The owner always has
    /// it; `ignore_public` leaves out grants to everyone and to every signed request
    /// (Block Public Access's `IgnorePublicAcls`).
    pub fn allows(
        &self,
        requester: Requester<'_>,
        wanted: Permission,
        ignore_public: bool,
    ) -> bool {
        if requester == Requester::Signed(&self.owner) {
            return true;
        }
        self.grants.iter().any(|grant| {
            let to_requester = match (&grant.grantee, requester) {
                (Grantee::AllUsers, _) => !ignore_public,
                (Grantee::AuthenticatedUsers, Requester::Signed(_)) => !ignore_public,
                (Grantee::User(id), Requester::Signed(caller)) => id == caller,
                _ => false,
            };
            to_requester && grant.permission.gives(wanted)
        })
    }

    /// Whether the ACL grants anything to everyone or to every signed request.
    pub fn is_public(&self) -> bool {
        self.grants
            .iter()
            .any(|g| matches!(g.grantee, Grantee::AllUsers | Grantee::AuthenticatedUsers))
    }

    /// Whether this is exactly "the owner has full control" (what a bucket that disables
    /// ACLs accepts).
    pub fn is_private(&self) -> bool {
        self.grants.iter().all(|g| {
            g.grantee == Grantee::User(self.owner.clone())
                && g.permission == Permission::FullControl
        })
    }
}

/// Who owns the objects written into a bucket, and whether ACLs count (S3's Object
/// Ownership).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ObjectOwnership {
    /// ACLs are disabled: the bucket owner owns every object, and only ACLs that say so
    /// are accepted. S3's default for new buckets.
    #[default]
    BucketOwnerEnforced,
    /// The bucket owner owns objects written with `bucket-owner-full-control`; ACLs count.
    BucketOwnerPreferred,
    /// The writer owns what it writes; ACLs count.
    ObjectWriter,
}

impl ObjectOwnership {
    pub const ALL: [ObjectOwnership; 3] = [
        ObjectOwnership::BucketOwnerEnforced,
        ObjectOwnership::BucketOwnerPreferred,
        ObjectOwnership::ObjectWriter,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ObjectOwnership::BucketOwnerEnforced => "BucketOwnerEnforced",
            ObjectOwnership::BucketOwnerPreferred => "BucketOwnerPreferred",
            ObjectOwnership::ObjectWriter => "ObjectWriter",
        }
    }

    pub fn parse(name: &str) -> Option<ObjectOwnership> {
        Self::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// Whether ACLs grant anything in the bucket.
    pub fn acls_enabled(self) -> bool {
        self != ObjectOwnership::BucketOwnerEnforced
    }
}

/// A bucket's Block Public Access switches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicAccessBlock {
    /// Requests that would set a public ACL are refused.
    pub block_public_acls: bool,
    /// Public grants in ACLs count for nothing.
    pub ignore_public_acls: bool,
    /// A public bucket policy cannot be put.
    pub block_public_policy: bool,
    /// A public bucket policy grants nothing to callers outside the owner's account
    /// (anonymous ones).
    pub restrict_public_buckets: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER: &str = "owner-id";
    const OTHER: &str = "other-id";

    #[test]
    fn canned_acls_grant_what_s3_says() {
        let anonymous = Requester::Anonymous;
        let other = Requester::Signed(OTHER);
        let owner = Requester::Signed(OWNER);
        let private = CannedAcl::Private.acl(OWNER, OWNER);
        assert!(private.is_private() && !private.is_public());
        assert!(private.allows(owner, Permission::WriteAcp, false));
        assert!(!private.allows(other, Permission::Read, false));

        let public = CannedAcl::PublicRead.acl(OWNER, OWNER);
        assert!(public.allows(anonymous, Permission::Read, false));
        assert!(!public.allows(anonymous, Permission::Write, false));
        assert!(!public.allows(anonymous, Permission::Read, true), "ignored");
        assert!(public.is_public());

        let writable = CannedAcl::PublicReadWrite.acl(OWNER, OWNER);
        assert!(writable.allows(other, Permission::Write, false));

        let signed = CannedAcl::AuthenticatedRead.acl(OWNER, OWNER);
        assert!(signed.allows(other, Permission::Read, false));
        assert!(!signed.allows(anonymous, Permission::Read, false));

        let for_bucket_owner = CannedAcl::BucketOwnerFullControl.acl(OTHER, OWNER);
        assert!(for_bucket_owner.allows(owner, Permission::WriteAcp, false));
        let read_by_bucket_owner = CannedAcl::BucketOwnerRead.acl(OTHER, OWNER);
        assert!(read_by_bucket_owner.allows(owner, Permission::Read, false));
        assert!(!read_by_bucket_owner.allows(owner, Permission::Write, false));
        // On the bucket owner's own object they are just private.
        assert!(CannedAcl::BucketOwnerRead.acl(OWNER, OWNER).is_private());
    }

    #[test]
    fn full_control_gives_every_permission() {
        let acl = Acl {
            owner: OWNER.into(),
            grants: vec![Grant {
                grantee: Grantee::User(OTHER.into()),
                permission: Permission::FullControl,
            }],
        };
        for wanted in ["READ", "WRITE", "READ_ACP", "WRITE_ACP", "FULL_CONTROL"] {
            let wanted = Permission::parse(wanted).unwrap();
            assert!(acl.allows(Requester::Signed(OTHER), wanted, false));
        }
        assert!(!acl.allows(Requester::Signed("third"), Permission::Read, false));
    }
}
