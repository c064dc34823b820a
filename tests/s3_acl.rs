//! ACLs, Object Ownership and Block Public Access against the real server, through the AWS
//! Rust SDK, a second user (who has no policy: only grants let it in) and anonymous
//! requests: ACLs disabled by default as on S3; canned ACLs and grants on buckets and
//! objects, and what they let others do; the four Block Public Access switches; and
//! GetBucketPolicyStatus.

mod common;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketCannedAcl, ObjectCannedAcl, ObjectOwnership, OwnershipControls, OwnershipControlsRule,
    Permission, PublicAccessBlockConfiguration, Type,
};
use aws_sdk_s3::Client;
use common::*;
use sha2::Digest;

const ALICE_SECRET: &str = "alice-secret-0123456789";

/// The server, its root client, and a client for user `alice`, who has no policy.
async fn with_alice() -> (TestServer, Client, Client) {
    let server = TestServer::start();
    let output = strata_admin(&server, &["user", "add", "alice", "--secret", ALICE_SECRET]);
    assert!(output.status.success(), "{output:?}");
    let root = server.client();
    let alice = server.client_with("alice", ALICE_SECRET);
    (server, root, alice)
}

/// A user's canonical ID, as grants name it.
fn canonical_id(name: &str) -> String {
    hex::encode(sha2::Sha256::digest(name.as_bytes()))
}

async fn anonymous_get(server: &TestServer, path: &str) -> u16 {
    let response = reqwest::get(server.url(path)).await.unwrap();
    response.status().as_u16()
}

async fn get_as(client: &Client, bucket: &str, key: &str) -> Result<Vec<u8>, String> {
    match client.get_object().bucket(bucket).key(key).send().await {
        Ok(out) => Ok(out.body.collect().await.unwrap().into_bytes().to_vec()),
        Err(e) => Err(code_of(&e).unwrap_or_else(|| describe(&e))),
    }
}

async fn put_as(client: &Client, bucket: &str, key: &str) -> Result<(), String> {
    let put = client.put_object().bucket(bucket).key(key);
    match put.body(ByteStream::from_static(b"written")).send().await {
        Ok(_) => Ok(()),
        Err(e) => Err(code_of(&e).unwrap_or_else(|| describe(&e))),
    }
}

async fn list_as(client: &Client, bucket: &str) -> Result<usize, String> {
    match client.list_objects_v2().bucket(bucket).send().await {
        Ok(out) => Ok(out.contents().len()),
        Err(e) => Err(code_of(&e).unwrap_or_else(|| describe(&e))),
    }
}

/// Creates a bucket whose ACLs count (Object Ownership `ObjectWriter`).
async fn bucket_with_acls(client: &Client, bucket: &str) {
    client
        .create_bucket()
        .bucket(bucket)
        .object_ownership(ObjectOwnership::ObjectWriter)
        .send()
        .await
        .unwrap();
}

fn error_code<T, E>(result: Result<T, aws_sdk_s3::error::SdkError<E, HttpResponse>>) -> String
where
    E: aws_sdk_s3::error::ProvideErrorMetadata + std::fmt::Debug,
{
    match result {
        Ok(_) => "succeeded".into(),
        Err(e) => code_of(&e).unwrap_or_else(|| describe(&e)),
    }
}

type HttpResponse = aws_sdk_s3::config::http::HttpResponse;

#[tokio::test]
async fn acls_are_disabled_by_default_as_on_s3() {
    let (_server, root, _alice) = with_alice().await;
    create_bucket(&root, "plain").await;
    put(&root, "plain", "k", b"data").await;

    let ownership = root
        .get_bucket_ownership_controls()
        .bucket("plain")
        .send()
        .await
        .unwrap();
    let rules = ownership.ownership_controls().unwrap().rules();
    assert_eq!(
        rules[0].object_ownership(),
        &ObjectOwnership::BucketOwnerEnforced
    );
    // The owner has full control, and nobody else anything.
    let acl = root.get_bucket_acl().bucket("plain").send().await.unwrap();
    let owner_id = acl.owner().unwrap().id().unwrap().to_string();
    assert_eq!(acl.grants().len(), 1);
    assert_eq!(acl.grants()[0].permission(), Some(&Permission::FullControl));
    assert_eq!(
        acl.grants()[0].grantee().unwrap().id(),
        Some(owner_id.as_str())
    );
    let object_acl = (root.get_object_acl().bucket("plain").key("k").send())
        .await
        .unwrap();
    assert_eq!(object_acl.owner().unwrap().id(), Some(owner_id.as_str()));

    let public = root
        .put_bucket_acl()
        .bucket("plain")
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await;
    assert_eq!(error_code(public), "AccessControlListNotSupported");
    let public = (root.put_object().bucket("plain").key("p"))
        .acl(ObjectCannedAcl::PublicRead)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await;
    assert_eq!(error_code(public), "AccessControlListNotSupported");
    // What says "the owner alone" is taken.
    (root.put_object().bucket("plain").key("p"))
        .acl(ObjectCannedAcl::BucketOwnerFullControl)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap();
    let public = root
        .create_bucket()
        .bucket("public-at-birth")
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await;
    assert_eq!(error_code(public), "InvalidBucketAclWithObjectOwnership");
}

#[tokio::test]
async fn grants_let_other_users_and_anonymous_callers_in() {
    let (server, root, alice) = with_alice().await;
    bucket_with_acls(&root, "shared").await;
    put(&root, "shared", "report", b"numbers").await;
    let alice_id = canonical_id("alice");

    // Nothing granted: alice and anonymous callers get nothing.
    assert_eq!(
        get_as(&alice, "shared", "report").await.unwrap_err(),
        "AccessDenied"
    );
    assert_eq!(list_as(&alice, "shared").await.unwrap_err(), "AccessDenied");
    assert_eq!(anonymous_get(&server, "/shared/report").await, 403);

    // public-read on the object: anyone reads it, nobody else lists or writes.
    (root.put_object_acl().bucket("shared").key("report"))
        .acl(ObjectCannedAcl::PublicRead)
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous_get(&server, "/shared/report").await, 200);
    let head = reqwest::Client::new()
        .head(server.url("/shared/report"))
        .send();
    assert_eq!(head.await.unwrap().status().as_u16(), 200);
    assert_eq!(
        get_as(&alice, "shared", "report").await.unwrap(),
        b"numbers"
    );
    assert_eq!(anonymous_get(&server, "/shared?list-type=2").await, 403);
    assert_eq!(
        put_as(&alice, "shared", "report").await.unwrap_err(),
        "AccessDenied"
    );
    let acl = (root.get_object_acl().bucket("shared").key("report").send())
        .await
        .unwrap();
    let public_grant = acl
        .grants()
        .iter()
        .find(|g| g.grantee().unwrap().r#type() == &Type::Group)
        .expect("a group grant");
    assert_eq!(public_grant.permission(), Some(&Permission::Read));
    assert_eq!(
        public_grant.grantee().unwrap().uri(),
        Some("http://acs.amazonaws.com/groups/global/AllUsers")
    );

    // authenticated-read: signed callers read, anonymous ones do not.
    put(&root, "shared", "signed", b"for users").await;
    (root.put_object_acl().bucket("shared").key("signed"))
        .acl(ObjectCannedAcl::AuthenticatedRead)
        .send()
        .await
        .unwrap();
    assert_eq!(
        get_as(&alice, "shared", "signed").await.unwrap(),
        b"for users"
    );
    assert_eq!(anonymous_get(&server, "/shared/signed").await, 403);

    // Bucket grants to alice by canonical ID: READ lists, WRITE writes and deletes.
    root.put_bucket_acl()
        .bucket("shared")
        .grant_read(format!("id=\"{alice_id}\""))
        .grant_write(format!("id=\"{alice_id}\""))
        .send()
        .await
        .unwrap();
    assert_eq!(list_as(&alice, "shared").await.unwrap(), 2);
    put_as(&alice, "shared", "from-alice").await.unwrap();
    put_as(&alice, "shared", "scratch").await.unwrap();
    (alice.delete_object().bucket("shared").key("scratch").send())
        .await
        .unwrap();
    assert_eq!(anonymous_get(&server, "/shared?list-type=2").await, 403);
    let acl = root.get_bucket_acl().bucket("shared").send().await.unwrap();
    let alice_grants: Vec<_> = (acl.grants().iter())
        .filter(|g| g.grantee().unwrap().id() == Some(alice_id.as_str()))
        .map(|g| g.permission().unwrap().clone())
        .collect();
    assert_eq!(alice_grants, [Permission::Read, Permission::Write]);
    assert_eq!(
        acl.grants()
            .iter()
            .find(|g| g.grantee().unwrap().id() == Some(alice_id.as_str()))
            .unwrap()
            .grantee()
            .unwrap()
            .display_name(),
        Some("alice")
    );
    // With ObjectWriter, what alice writes is hers.
    let mine = (root
        .get_object_acl()
        .bucket("shared")
        .key("from-alice")
        .send())
    .await
    .unwrap();
    assert_eq!(mine.owner().unwrap().id(), Some(alice_id.as_str()));
    // She may read and change its ACL (she owns it); not the root's object's ACL.
    (alice
        .get_object_acl()
        .bucket("shared")
        .key("from-alice")
        .send())
    .await
    .unwrap();
    let not_hers = alice.get_object_acl().bucket("shared").key("report").send();
    assert_eq!(error_code(not_hers.await), "AccessDenied");

    // S3's errors for bad grants.
    let by_email = root
        .put_bucket_acl()
        .bucket("shared")
        .grant_read("emailAddress=\"alice@example.com\"")
        .send()
        .await;
    assert_eq!(error_code(by_email), "UnresolvableGrantByEmailAddress");
    let unknown = root
        .put_bucket_acl()
        .bucket("shared")
        .grant_read("id=\"0123456789abcdef\"")
        .send()
        .await;
    assert_eq!(error_code(unknown), "InvalidArgument");
    // A rejected ACL changed nothing.
    assert_eq!(list_as(&alice, "shared").await.unwrap(), 3);

    // Ownership controls can be read, deleted (ACLs still count) and cannot disable ACLs
    // while the bucket's ACL grants something.
    let enforce = OwnershipControls::builder()
        .rules(
            OwnershipControlsRule::builder()
                .object_ownership(ObjectOwnership::BucketOwnerEnforced)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let refused = root
        .put_bucket_ownership_controls()
        .bucket("shared")
        .ownership_controls(enforce.clone())
        .send()
        .await;
    assert_eq!(error_code(refused), "InvalidBucketAclWithObjectOwnership");
    root.delete_bucket_ownership_controls()
        .bucket("shared")
        .send()
        .await
        .unwrap();
    let gone = root.get_bucket_ownership_controls().bucket("shared").send();
    assert_eq!(error_code(gone.await), "OwnershipControlsNotFoundError");
    assert_eq!(list_as(&alice, "shared").await.unwrap(), 3);
    // Back to private, then ACLs can be disabled: the object grants stop counting.
    root.put_bucket_acl()
        .bucket("shared")
        .acl(BucketCannedAcl::Private)
        .send()
        .await
        .unwrap();
    root.put_bucket_ownership_controls()
        .bucket("shared")
        .ownership_controls(enforce)
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous_get(&server, "/shared/report").await, 403);
}

#[tokio::test]
async fn block_public_access_switches_do_what_they_say() {
    let (server, root, _alice) = with_alice().await;
    bucket_with_acls(&root, "guarded").await;
    put(&root, "guarded", "open", b"was public").await;
    (root.put_object_acl().bucket("guarded").key("open"))
        .acl(ObjectCannedAcl::PublicRead)
        .send()
        .await
        .unwrap();
    let missing = root.get_public_access_block().bucket("guarded").send();
    assert_eq!(
        error_code(missing.await),
        "NoSuchPublicAccessBlockConfiguration"
    );
    let block = |acls: bool, ignore: bool, policy: bool, restrict: bool| {
        PublicAccessBlockConfiguration::builder()
            .block_public_acls(acls)
            .ignore_public_acls(ignore)
            .block_public_policy(policy)
            .restrict_public_buckets(restrict)
            .build()
    };

    // BlockPublicAcls: no new public ACL, on objects or the bucket.
    root.put_public_access_block()
        .bucket("guarded")
        .public_access_block_configuration(block(true, false, false, false))
        .send()
        .await
        .unwrap();
    let got = root
        .get_public_access_block()
        .bucket("guarded")
        .send()
        .await;
    let config = got
        .unwrap()
        .public_access_block_configuration()
        .unwrap()
        .clone();
    assert_eq!(config.block_public_acls(), Some(true));
    assert_eq!(config.ignore_public_acls(), Some(false));
    let refused = (root.put_object().bucket("guarded").key("new"))
        .acl(ObjectCannedAcl::PublicRead)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await;
    assert_eq!(error_code(refused), "AccessDenied");
    let refused = (root.put_bucket_acl().bucket("guarded"))
        .acl(BucketCannedAcl::PublicReadWrite)
        .send()
        .await;
    assert_eq!(error_code(refused), "AccessDenied");
    // What was public before stays so.
    assert_eq!(anonymous_get(&server, "/guarded/open").await, 200);

    // IgnorePublicAcls: public grants count for nothing, until the block goes.
    root.put_public_access_block()
        .bucket("guarded")
        .public_access_block_configuration(block(false, true, false, false))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous_get(&server, "/guarded/open").await, 403);
    root.delete_public_access_block()
        .bucket("guarded")
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous_get(&server, "/guarded/open").await, 200);

    // BlockPublicPolicy and GetBucketPolicyStatus.
    let public_policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow",
        "Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::guarded/*"}]}"#;
    let office_policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow",
        "Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::guarded/*",
        "Condition":{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"}}}]}"#;
    let no_policy = root.get_bucket_policy_status().bucket("guarded").send();
    assert_eq!(error_code(no_policy.await), "NoSuchBucketPolicy");
    root.put_public_access_block()
        .bucket("guarded")
        .public_access_block_configuration(block(false, false, true, false))
        .send()
        .await
        .unwrap();
    let refused = root
        .put_bucket_policy()
        .bucket("guarded")
        .policy(public_policy);
    assert_eq!(error_code(refused.send().await), "AccessDenied");
    let office = root
        .put_bucket_policy()
        .bucket("guarded")
        .policy(office_policy);
    office.send().await.unwrap();
    let status = root
        .get_bucket_policy_status()
        .bucket("guarded")
        .send()
        .await;
    assert_eq!(
        status.unwrap().policy_status().unwrap().is_public(),
        Some(false)
    );

    // RestrictPublicBuckets: a public policy stops opening the bucket to anonymous callers.
    root.delete_public_access_block()
        .bucket("guarded")
        .send()
        .await
        .unwrap();
    put(&root, "guarded", "by-policy", b"open by policy").await;
    let public = root
        .put_bucket_policy()
        .bucket("guarded")
        .policy(public_policy);
    public.send().await.unwrap();
    let status = root
        .get_bucket_policy_status()
        .bucket("guarded")
        .send()
        .await;
    assert_eq!(
        status.unwrap().policy_status().unwrap().is_public(),
        Some(true)
    );
    assert_eq!(anonymous_get(&server, "/guarded/by-policy").await, 200);
    root.put_public_access_block()
        .bucket("guarded")
        .public_access_block_configuration(block(false, false, false, true))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous_get(&server, "/guarded/by-policy").await, 403);
}

#[tokio::test]
async fn bucket_owner_preferred_takes_what_is_written_for_it() {
    let (_server, root, alice) = with_alice().await;
    root.create_bucket()
        .bucket("preferred")
        .object_ownership(ObjectOwnership::BucketOwnerPreferred)
        .send()
        .await
        .unwrap();
    let alice_id = canonical_id("alice");
    root.put_bucket_acl()
        .bucket("preferred")
        .grant_write(format!("id={alice_id}"))
        .send()
        .await
        .unwrap();
    put_as(&alice, "preferred", "hers").await.unwrap();
    // Alice may not set an ACL without s3:PutObjectAcl, as on S3.
    let with_acl = (alice.put_object().bucket("preferred").key("for-owner"))
        .acl(ObjectCannedAcl::BucketOwnerFullControl)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await;
    assert_eq!(error_code(with_acl), "AccessDenied");
    (root.put_object().bucket("preferred").key("for-owner"))
        .acl(ObjectCannedAcl::BucketOwnerFullControl)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap();
    let owner_of = |key: &'static str| {
        let root = root.clone();
        async move {
            let acl = root.get_object_acl().bucket("preferred").key(key).send();
            acl.await
                .unwrap()
                .owner()
                .unwrap()
                .id()
                .unwrap()
                .to_string()
        }
    };
    assert_eq!(owner_of("hers").await, alice_id);
    assert_eq!(owner_of("for-owner").await, canonical_id(ACCESS_KEY));

    // Listings name each object's owner by canonical ID and display name.
    let hers = (Some(alice_id.clone()), Some("alice".to_string()));
    let root_owned = (Some(canonical_id(ACCESS_KEY)), Some(ACCESS_KEY.to_string()));
    let owner_pair = |owner: &aws_sdk_s3::types::Owner| {
        (
            owner.id().map(str::to_string),
            owner.display_name().map(str::to_string),
        )
    };
    let listed = (root
        .list_objects_v2()
        .bucket("preferred")
        .fetch_owner(true)
        .send())
    .await
    .unwrap();
    for object in listed.contents() {
        let want = match object.key() {
            Some("hers") => &hers,
            _ => &root_owned,
        };
        assert_eq!(owner_pair(object.owner().unwrap()), *want, "{object:?}");
    }
    let versions = (root.list_object_versions().bucket("preferred").send())
        .await
        .unwrap();
    for version in versions.versions() {
        let want = match version.key() {
            Some("hers") => &hers,
            _ => &root_owned,
        };
        assert_eq!(owner_pair(version.owner().unwrap()), *want, "{version:?}");
    }
}

/// `--default-object-ownership ObjectWriter` (STRATA_DEFAULT_OBJECT_OWNERSHIP): buckets
/// created without `x-amz-object-ownership` take ACLs, as the scripts carried from servers
/// with ACLs on expect: canned ACLs at creation and on PUT, PutBucketAcl, and what they open;
/// a bucket that names its ownership still gets it, and a default S3 does not know is refused.
#[tokio::test]
async fn the_operator_may_make_new_buckets_take_acls() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![(
            "STRATA_DEFAULT_OBJECT_OWNERSHIP".into(),
            "ObjectWriter".into(),
        )],
        ..ServerOptions::default()
    });
    let root = server.client();
    (root.create_bucket().bucket("shared"))
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await
        .unwrap();
    let ownership = (root.get_bucket_ownership_controls().bucket("shared").send())
        .await
        .unwrap();
    let rules = ownership.ownership_controls().unwrap().rules();
    assert_eq!(rules[0].object_ownership(), &ObjectOwnership::ObjectWriter);
    let acl = root.get_bucket_acl().bucket("shared").send().await.unwrap();
    assert!(
        acl.grants().iter().any(|g| {
            g.permission() == Some(&Permission::Read)
                && g.grantee().and_then(|g| g.uri())
                    == Some("http://acs.amazonaws.com/groups/global/AllUsers")
        }),
        "{acl:?}"
    );
    assert_eq!(
        anonymous_get(&server, "/shared").await,
        200,
        "public listing"
    );

    (root.put_object().bucket("shared").key("open.txt"))
        .acl(ObjectCannedAcl::PublicRead)
        .body(ByteStream::from_static(b"for everyone"))
        .send()
        .await
        .unwrap();
    put(&root, "shared", "closed.txt", b"owner only").await;
    assert_eq!(anonymous_get(&server, "/shared/open.txt").await, 200);
    assert_eq!(anonymous_get(&server, "/shared/closed.txt").await, 403);
    root.put_bucket_acl()
        .bucket("shared")
        .acl(BucketCannedAcl::Private)
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous_get(&server, "/shared").await, 403, "revoked");
    // Re-created in us-east-1, a bucket of one's own is answered 200 and its ACL reset to the
    // one asked for, as S3 does for legacy clients (private, when none is asked for).
    (root.create_bucket().bucket("shared"))
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await
        .unwrap();
    assert_eq!(
        anonymous_get(&server, "/shared").await,
        200,
        "re-created public"
    );
    root.create_bucket().bucket("shared").send().await.unwrap();
    assert_eq!(
        anonymous_get(&server, "/shared").await,
        403,
        "re-created private"
    );
    assert_eq!(
        anonymous_get(&server, "/shared/open.txt").await,
        200,
        "objects keep theirs"
    );

    let enforced = root
        .create_bucket()
        .bucket("enforced")
        .object_ownership(ObjectOwnership::BucketOwnerEnforced)
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await;
    assert_eq!(error_code(enforced), "InvalidBucketAclWithObjectOwnership");

    let dir = tempfile::tempdir().unwrap();
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["server", "--default-object-ownership", "Everyone"])
        .arg(dir.path().join("d{1...9}"))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("BucketOwnerEnforced"),
        "{refused:?}"
    );
}

/// Adds user `name` with the IAM policy `document` (named after the user).
fn user_with_policy(server: &TestServer, name: &str, secret: &str, document: &str) -> Client {
    let added = strata_admin(server, &["user", "add", name, "--secret", secret]);
    assert!(added.status.success(), "{added:?}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.json");
    std::fs::write(&file, document).unwrap();
    let policy = format!("{name}-policy");
    for args in [
        vec!["policy", "add", &policy, file.to_str().unwrap()],
        vec!["policy", "attach", name, &policy],
    ] {
        let output = strata_admin(server, &args);
        assert!(output.status.success(), "{args:?}: {output:?}");
    }
    server.client_with(name, secret)
}

/// Two users, as S3 has two accounts meet in one bucket: bob owns a bucket he made (its
/// ACLs on), alice writes into it. Each grant lets in exactly what it names, revoked grants
/// let in nothing, objects alice writes are hers (bob reads them only when she grants him, or
/// writes with `bucket-owner-full-control`), and the owners are reported by name.
#[tokio::test]
async fn a_bucket_another_user_owns_is_governed_by_its_acls() {
    let server = TestServer::start();
    let bob = user_with_policy(
        &server,
        "bob",
        "bob-secret-0123456789",
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow",
            "Action":["s3:CreateBucket","s3:ListAllMyBuckets"],"Resource":"*"}]}"#,
    );
    let alice = user_with_policy(
        &server,
        "alice",
        ALICE_SECRET,
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow",
            "Action":["s3:PutObject","s3:PutObjectAcl"],"Resource":"arn:aws:s3:::lab/*"}]}"#,
    );
    let root = server.client();
    let (bob_id, alice_id) = (canonical_id("bob"), canonical_id("alice"));
    bucket_with_acls(&bob, "lab").await;

    // Bob owns what he made, and is named so.
    let acl = bob.get_bucket_acl().bucket("lab").send().await.unwrap();
    let owner = acl.owner().unwrap();
    assert_eq!(owner.id(), Some(bob_id.as_str()));
    assert_eq!(owner.display_name(), Some("bob"));
    let listed = bob.list_buckets().send().await.unwrap();
    assert_eq!(listed.owner().unwrap().id(), Some(bob_id.as_str()));
    put_as(&bob, "lab", "notes").await.unwrap();
    assert_eq!(list_as(&bob, "lab").await.unwrap(), 1);
    let expecting = |owner: &str| {
        (bob.head_bucket().bucket("lab"))
            .expected_bucket_owner(owner)
            .send()
    };
    expecting(&bob_id).await.unwrap();
    let root_id = canonical_id(ACCESS_KEY);
    assert!(expecting(&root_id).await.is_err(), "another owner expected");
    // The name is bob's: another user cannot take it over by creating it again.
    let again = root.create_bucket().bucket("lab").send().await;
    assert_eq!(error_code(again), "BucketAlreadyExists");
    bob.create_bucket().bucket("lab").send().await.unwrap();

    // Alice writes (her policy lets her); what she writes is hers.
    put_as(&alice, "lab", "hers").await.unwrap();
    (alice.put_object().bucket("lab").key("for-bob"))
        .acl(ObjectCannedAcl::BucketOwnerFullControl)
        .body(ByteStream::from_static(b"for the owner"))
        .send()
        .await
        .unwrap();
    assert_eq!(get_as(&alice, "lab", "hers").await.unwrap(), b"written");
    assert_eq!(
        get_as(&bob, "lab", "hers").await.unwrap_err(),
        "AccessDenied"
    );
    let hers_acl = bob.get_object_acl().bucket("lab").key("hers").send().await;
    assert_eq!(error_code(hers_acl), "AccessDenied");
    assert_eq!(
        get_as(&bob, "lab", "for-bob").await.unwrap(),
        b"for the owner"
    );
    let for_bob = (bob.get_object_acl().bucket("lab").key("for-bob").send())
        .await
        .unwrap();
    assert_eq!(for_bob.owner().unwrap().id(), Some(alice_id.as_str()));
    let listed = (bob.list_objects_v2().bucket("lab").fetch_owner(true).send())
        .await
        .unwrap();
    let owners: Vec<_> = (listed.contents().iter())
        .map(|o| (o.key().unwrap(), o.owner().unwrap().display_name().unwrap()))
        .collect();
    assert_eq!(
        owners,
        [("for-bob", "alice"), ("hers", "alice"), ("notes", "bob")]
    );

    // READ_ACP, then WRITE_ACP on her object: bob reads its ACL, then changes it.
    (alice.put_object_acl().bucket("lab").key("hers"))
        .grant_read_acp(format!("id={bob_id}"))
        .send()
        .await
        .unwrap();
    (bob.get_object_acl().bucket("lab").key("hers").send())
        .await
        .unwrap();
    assert_eq!(
        get_as(&bob, "lab", "hers").await.unwrap_err(),
        "AccessDenied"
    );
    let change = (bob.put_object_acl().bucket("lab").key("hers"))
        .grant_read(format!("id={bob_id}"))
        .send()
        .await;
    assert_eq!(error_code(change), "AccessDenied");
    (alice.put_object_acl().bucket("lab").key("hers"))
        .grant_write_acp(format!("id={bob_id}"))
        .send()
        .await
        .unwrap();
    (bob.put_object_acl().bucket("lab").key("hers"))
        .grant_read(format!("id={bob_id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(get_as(&bob, "lab", "hers").await.unwrap(), b"written");
    // What bob set replaced alice's grants: the object is still hers, she keeps control.
    (alice.get_object_acl().bucket("lab").key("hers").send())
        .await
        .unwrap();

    // Bucket grants: FULL_CONTROL gives alice listing and the bucket's ACL; revoked, nothing.
    assert_eq!(list_as(&alice, "lab").await.unwrap_err(), "AccessDenied");
    (bob.put_bucket_acl().bucket("lab"))
        .grant_full_control(format!("id={alice_id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(list_as(&alice, "lab").await.unwrap(), 3);
    (alice.get_bucket_acl().bucket("lab").send()).await.unwrap();
    (bob.put_bucket_acl().bucket("lab"))
        .acl(BucketCannedAcl::Private)
        .send()
        .await
        .unwrap();
    assert_eq!(list_as(&alice, "lab").await.unwrap_err(), "AccessDenied");
    let revoked = alice.get_bucket_acl().bucket("lab").send().await;
    assert_eq!(error_code(revoked), "AccessDenied");
    // AuthenticatedUsers: any signed caller lists, an anonymous one does not.
    (bob.put_bucket_acl().bucket("lab"))
        .grant_read("uri=\"http://acs.amazonaws.com/groups/global/AuthenticatedUsers\"")
        .send()
        .await
        .unwrap();
    assert_eq!(list_as(&alice, "lab").await.unwrap(), 3);
    assert_eq!(anonymous_get(&server, "/lab?list-type=2").await, 403);

    // public-read-write: anyone writes, and what an anonymous caller writes is anonymous's;
    // Block Public Access's IgnorePublicAcls shuts that door.
    (bob.put_bucket_acl().bucket("lab"))
        .acl(BucketCannedAcl::PublicReadWrite)
        .send()
        .await
        .unwrap();
    let anonymous_put = || async {
        let put = reqwest::Client::new()
            .put(server.url("/lab/dropped"))
            .body("from anyone");
        put.send().await.unwrap().status().as_u16()
    };
    assert_eq!(anonymous_put().await, 200);
    assert_eq!(anonymous_get(&server, "/lab?list-type=2").await, 200);
    let dropped = (root.get_object_acl().bucket("lab").key("dropped").send())
        .await
        .unwrap();
    assert_eq!(
        dropped.owner().unwrap().id(),
        Some("65a011a29cdf8ec533ec3d1ccaae921c")
    );
    root.put_public_access_block()
        .bucket("lab")
        .public_access_block_configuration(
            PublicAccessBlockConfiguration::builder()
                .ignore_public_acls(true)
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous_put().await, 403);
    assert_eq!(anonymous_get(&server, "/lab?list-type=2").await, 403);

    // The bucket's owner may delete what others wrote in it (WRITE on the bucket).
    (bob.delete_object().bucket("lab").key("hers").send())
        .await
        .unwrap();
    assert_eq!(list_as(&bob, "lab").await.unwrap(), 3);
}
