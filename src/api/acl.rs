//! S3's ACLs on the wire: the `x-amz-acl` and `x-amz-grant-*` headers, the
//! `AccessControlPolicy` document, and what a bucket's Object Ownership and Block Public
//! Access let a request set.

use axum::http::HeaderMap;
use serde::Deserialize;

use super::auth::Identity;
use super::error::{S3Error, S3ErrorCode};
use super::headers::header;
use super::S3State;
use crate::iam::canonical_id;
use crate::object::acl::{Acl, CannedAcl, Grant, Grantee, ObjectOwnership, Permission};
use crate::object::BucketSettings;

/// The canonical ID S3 gives anonymous callers (the owner of what they write).
pub const ANONYMOUS_ID: &str = "65a011a29cdf8ec533ec3d1ccaae921c";
const ALL_USERS: &str = "http://acs.amazonaws.com/groups/global/AllUsers";
const AUTHENTICATED_USERS: &str = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";
const LOG_DELIVERY: &str = "http://acs.amazonaws.com/groups/s3/LogDelivery";

/// The headers that grant one permission each.
const GRANT_HEADERS: [(&str, Permission); 5] = [
    ("x-amz-grant-read", Permission::Read),
    ("x-amz-grant-write", Permission::Write),
    ("x-amz-grant-read-acp", Permission::ReadAcp),
    ("x-amz-grant-write-acp", Permission::WriteAcp),
    ("x-amz-grant-full-control", Permission::FullControl),
];

/// Whether a request carries ACL headers.
pub fn has_acl_headers(headers: &HeaderMap) -> bool {
    headers.contains_key("x-amz-acl") || GRANT_HEADERS.iter().any(|(h, _)| headers.contains_key(*h))
}

/// Whether the ACL headers give anyone more than the owner: a canned ACL other than
/// `private`, or a grant.
pub fn grants_beyond_the_owner(headers: &HeaderMap) -> bool {
    let canned = headers.get("x-amz-acl");
    canned.is_some_and(|acl| acl.as_bytes() != b"private")
        || GRANT_HEADERS.iter().any(|(h, _)| headers.contains_key(*h))
}

/// The accounts a grant can name: the root user and every user, by canonical ID.
pub struct Accounts(Vec<(String, String)>);

impl Accounts {
    pub fn of(state: &S3State) -> Self {
        let mut accounts = vec![(state.owner_id(), state.owner.clone())];
        for user in state.iam.users() {
            accounts.push((canonical_id(&user.name), user.name));
        }
        Accounts(accounts)
    }

    /// Accounts given as (canonical ID, name) pairs.
    #[cfg(test)]
    pub fn for_tests(accounts: &[(&str, &str)]) -> Self {
        Accounts(
            (accounts.iter())
                .map(|(id, name)| (id.to_string(), name.to_string()))
                .collect(),
        )
    }

    /// The name of the account with canonical ID `id`.
    pub fn name(&self, id: &str) -> Option<&str> {
        (self.0.iter())
            .find(|(known, _)| known == id)
            .map(|(_, name)| name.as_str())
    }

    fn check(&self, id: &str) -> Result<(), S3Error> {
        match self.name(id) {
            Some(_) => Ok(()),
            None => Err(S3Error::new(S3ErrorCode::InvalidArgument, "Invalid id")),
        }
    }
}

/// The canonical ID of whoever sent a request.
pub fn requester_id(state: &S3State, identity: &Identity) -> String {
    match identity {
        Identity::Root => state.owner_id(),
        Identity::User(name) => canonical_id(name),
        Identity::Anonymous => ANONYMOUS_ID.to_string(),
    }
}

/// The ACL a request's headers ask for on a resource `owner` owns, in a bucket
/// `bucket_owner` owns: a canned ACL or explicit grants (never both); `None` when they ask
/// for none.
pub fn from_headers(
    headers: &HeaderMap,
    (owner, bucket_owner): (&str, &str),
    accounts: &Accounts,
) -> Result<Option<Acl>, S3Error> {
    let canned = header(headers, "x-amz-acl");
    let grants: Vec<(&str, Permission)> = (GRANT_HEADERS.iter())
        .filter_map(|(name, permission)| Some((header(headers, name)?, *permission)))
        .collect();
    match (canned, grants.is_empty()) {
        (None, true) => Ok(None),
        (Some(_), false) => Err(S3Error::new(
            S3ErrorCode::InvalidRequest,
            "Specifying both Canned ACLs and Header Grants is not allowed",
        )),
        (Some(name), true) => match CannedAcl::parse(name.trim()) {
            Some(canned) => Ok(Some(canned.acl(owner, bucket_owner))),
            None => Err(S3Error::new(
                S3ErrorCode::InvalidArgument,
                "Invalid canned ACL",
            )),
        },
        (None, false) => {
            let mut acl = Acl {
                owner: owner.to_string(),
                grants: Vec::new(),
            };
            for (value, permission) in grants {
                for grantee in value.split(',').filter(|g| !g.trim().is_empty()) {
                    let grantee = grantee_from_header(grantee.trim(), accounts)?;
                    acl.grants.push(Grant {
                        grantee,
                        permission,
                    });
                }
            }
            Ok(Some(acl))
        }
    }
}

/// One grantee of a grant header: `id="…"`, `uri="…"` or `emailAddress="…"`.
fn grantee_from_header(text: &str, accounts: &Accounts) -> Result<Grantee, S3Error> {
    let invalid = || S3Error::new(S3ErrorCode::InvalidArgument, "Invalid grant header");
    let (kind, value) = text.split_once('=').ok_or_else(invalid)?;
    let value = value.trim().trim_matches('"');
    match kind.trim().to_ascii_lowercase().as_str() {
        "id" => {
            accounts.check(value)?;
            Ok(Grantee::User(value.to_string()))
        }
        "uri" => group(value),
        "emailaddress" => Err(S3Error::from_code(
            S3ErrorCode::UnresolvableGrantByEmailAddress,
        )),
        _ => Err(invalid()),
    }
}

fn group(uri: &str) -> Result<Grantee, S3Error> {
    match uri {
        ALL_USERS => Ok(Grantee::AllUsers),
        AUTHENTICATED_USERS => Ok(Grantee::AuthenticatedUsers),
        LOG_DELIVERY => Ok(Grantee::LogDelivery),
        _ => Err(S3Error::new(
            S3ErrorCode::InvalidArgument,
            "Invalid group uri",
        )),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AccessControlPolicy {
    owner: Option<OwnerXml>,
    access_control_list: Option<GrantsXml>,
}

#[derive(Deserialize)]
struct OwnerXml {
    #[serde(rename = "ID")]
    id: Option<String>,
}

#[derive(Deserialize)]
struct GrantsXml {
    #[serde(rename = "Grant", default)]
    grants: Vec<GrantXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct GrantXml {
    grantee: GranteeXml,
    permission: String,
}

#[derive(Deserialize)]
struct GranteeXml {
    /// `xsi:type`: the namespace prefix does not reach serde.
    #[serde(rename = "@type")]
    kind: String,
    #[serde(rename = "ID")]
    id: Option<String>,
    #[serde(rename = "URI")]
    uri: Option<String>,
    #[serde(rename = "EmailAddress")]
    email: Option<String>,
}

/// Parses an `AccessControlPolicy` document for a resource `owner` owns.
pub fn from_xml(body: &[u8], owner: &str, accounts: &Accounts) -> Result<Acl, S3Error> {
    let malformed = || S3Error::from_code(S3ErrorCode::MalformedACLError);
    let text = std::str::from_utf8(body).map_err(|_| malformed())?;
    let policy: AccessControlPolicy =
        crate::untrusted_xml::from_str(text).map_err(|_| malformed())?;
    // Ownership does not change hands through an ACL.
    let named_owner = policy.owner.and_then(|o| o.id);
    if named_owner.is_some_and(|id| id != owner) {
        return Err(S3Error::from_code(S3ErrorCode::AccessDenied));
    }
    let mut acl = Acl {
        owner: owner.to_string(),
        grants: Vec::new(),
    };
    for grant in policy
        .access_control_list
        .map(|l| l.grants)
        .unwrap_or_default()
    {
        let permission = Permission::parse(grant.permission.trim()).ok_or_else(malformed)?;
        let g = grant.grantee;
        let grantee = match g.kind.as_str() {
            "CanonicalUser" => {
                let id = g.id.ok_or_else(malformed)?;
                accounts.check(&id)?;
                Grantee::User(id)
            }
            "Group" => group(g.uri.as_deref().ok_or_else(malformed)?)?,
            "AmazonCustomerByEmail" if g.email.is_some() => {
                return Err(S3Error::from_code(
                    S3ErrorCode::UnresolvableGrantByEmailAddress,
                ))
            }
            _ => return Err(malformed()),
        };
        acl.grants.push(Grant {
            grantee,
            permission,
        });
    }
    Ok(acl)
}

/// Renders an ACL as S3's `AccessControlPolicy` document.
pub fn to_xml(acl: &Acl, accounts: &Accounts) -> String {
    let name = |id: &str| escape(accounts.name(id).unwrap_or(""));
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<AccessControlPolicy \
         xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner><ID>{}</ID>\
         <DisplayName>{}</DisplayName></Owner><AccessControlList>",
        escape(&acl.owner),
        name(&acl.owner)
    );
    for grant in &acl.grants {
        xml.push_str(
            "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=",
        );
        match &grant.grantee {
            Grantee::User(id) => xml.push_str(&format!(
                "\"CanonicalUser\"><ID>{}</ID><DisplayName>{}</DisplayName>",
                escape(id),
                name(id)
            )),
            group => {
                let uri = match group {
                    Grantee::AllUsers => ALL_USERS,
                    Grantee::AuthenticatedUsers => AUTHENTICATED_USERS,
                    _ => LOG_DELIVERY,
                };
                xml.push_str(&format!("\"Group\"><URI>{uri}</URI>"));
            }
        }
        xml.push_str(&format!(
            "</Grantee><Permission>{}</Permission></Grant>",
            grant.permission.as_str()
        ));
    }
    xml.push_str("</AccessControlList></AccessControlPolicy>");
    xml
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// What a bucket's settings let a request set as an ACL: with ACLs disabled
/// (`BucketOwnerEnforced`) only one that gives the owner full control and nobody anything,
/// and under Block Public Access's `BlockPublicAcls` nothing public.
pub fn admit(acl: &Acl, settings: &BucketSettings, disabled: S3ErrorCode) -> Result<(), S3Error> {
    if !settings.acls_enabled() && !acl.is_private() {
        return Err(S3Error::from_code(disabled));
    }
    let blocked = settings
        .public_access_block
        .is_some_and(|b| b.block_public_acls);
    if blocked && acl.is_public() {
        return Err(S3Error::new(
            S3ErrorCode::AccessDenied,
            "Access Denied: Block Public Access forbids public ACLs on this bucket",
        ));
    }
    Ok(())
}

/// The ACL a new object is stored with, from the writer's headers (PUT, POST, copy,
/// multipart): `None` when the bucket's owner owns it alone (always, with ACLs disabled).
pub fn for_new_object(
    state: &S3State,
    headers: &HeaderMap,
    settings: &BucketSettings,
    writer: &Identity,
) -> Result<Option<Acl>, S3Error> {
    let bucket_owner = bucket_owner(state, settings);
    let writer = requester_id(state, writer);
    let asked_canned = header(headers, "x-amz-acl").map(str::trim);
    // The bucket owner takes what is written with `bucket-owner-full-control` under
    // BucketOwnerPreferred, and everything under BucketOwnerEnforced.
    let owner = match settings.ownership {
        Some(ObjectOwnership::BucketOwnerEnforced) => &bucket_owner,
        Some(ObjectOwnership::BucketOwnerPreferred)
            if asked_canned == Some("bucket-owner-full-control") =>
        {
            &bucket_owner
        }
        _ => &writer,
    };
    // The accounts grants may name are looked up only when the request names some.
    let asked = match has_acl_headers(headers) {
        true => from_headers(headers, (owner, &bucket_owner), &Accounts::of(state))?,
        false => None,
    };
    let acl = asked.unwrap_or_else(|| Acl::private(owner));
    admit(&acl, settings, S3ErrorCode::AccessControlListNotSupported)?;
    // With ACLs disabled, the owner's full control is all there is: `bucket-owner-*` ACLs
    // name the owner twice, which says nothing more.
    let owner_only = acl.owner == bucket_owner && (acl.is_private() || !settings.acls_enabled());
    Ok((!owner_only).then_some(acl))
}

/// An object's ACL as stored (`None`: the bucket owner's alone).
pub fn of_object(bucket_owner: &str, stored: Option<&Acl>) -> Acl {
    stored
        .cloned()
        .unwrap_or_else(|| Acl::private(bucket_owner))
}

/// The canonical ID of a bucket's owner.
pub fn bucket_owner(state: &S3State, settings: &BucketSettings) -> String {
    settings.owner(&state.owner_id()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accounts() -> Accounts {
        Accounts(vec![
            ("owner".into(), "root".into()),
            ("user-1".into(), "alice".into()),
        ])
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn grant_headers_name_users_and_groups() {
        let asked = headers(&[
            (
                "x-amz-grant-read",
                "uri=\"http://acs.amazonaws.com/groups/global/AllUsers\", id=\"user-1\"",
            ),
            ("x-amz-grant-full-control", "id=user-1"),
        ]);
        let acl = from_headers(&asked, ("owner", "owner"), &accounts())
            .unwrap()
            .unwrap();
        assert_eq!(acl.grants.len(), 3);
        assert!(acl.is_public());
        let unknown = headers(&[("x-amz-grant-read", "id=\"nobody\"")]);
        let err = from_headers(&unknown, ("owner", "owner"), &accounts()).unwrap_err();
        assert_eq!(err.code, S3ErrorCode::InvalidArgument);
        let email = headers(&[("x-amz-grant-write", "emailAddress=\"a@b.c\"")]);
        let err = from_headers(&email, ("owner", "owner"), &accounts()).unwrap_err();
        assert_eq!(err.code, S3ErrorCode::UnresolvableGrantByEmailAddress);
        let both = headers(&[("x-amz-acl", "private"), ("x-amz-grant-read", "id=user-1")]);
        let err = from_headers(&both, ("owner", "owner"), &accounts()).unwrap_err();
        assert_eq!(err.code, S3ErrorCode::InvalidRequest);
        let bad = headers(&[("x-amz-acl", "public")]);
        let err = from_headers(&bad, ("owner", "owner"), &accounts()).unwrap_err();
        assert_eq!(err.code, S3ErrorCode::InvalidArgument);
    }

    #[test]
    fn the_document_round_trips() {
        let acl = Acl {
            owner: "owner".into(),
            grants: vec![
                Grant {
                    grantee: Grantee::User("owner".into()),
                    permission: Permission::FullControl,
                },
                Grant {
                    grantee: Grantee::User("user-1".into()),
                    permission: Permission::WriteAcp,
                },
                Grant {
                    grantee: Grantee::AuthenticatedUsers,
                    permission: Permission::Read,
                },
            ],
        };
        let xml = to_xml(&acl, &accounts());
        assert!(xml.contains("<DisplayName>alice</DisplayName>"), "{xml}");
        assert_eq!(from_xml(xml.as_bytes(), "owner", &accounts()).unwrap(), acl);
        // Someone else named as the owner, a bad permission, a bad document.
        let other = xml.replacen("<ID>owner</ID>", "<ID>user-1</ID>", 1);
        let err = from_xml(other.as_bytes(), "owner", &accounts()).unwrap_err();
        assert_eq!(err.code, S3ErrorCode::AccessDenied);
        let bad = xml.replace("WRITE_ACP", "WRITE_ALL");
        let err = from_xml(bad.as_bytes(), "owner", &accounts()).unwrap_err();
        assert_eq!(err.code, S3ErrorCode::MalformedACLError);
        let err = from_xml(b"<AccessControlPolicy>", "owner", &accounts()).unwrap_err();
        assert_eq!(err.code, S3ErrorCode::MalformedACLError);
    }
}
