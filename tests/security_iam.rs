//! Identities and access against the real server: users and policies made with
//! `strata admin user/policy`, each user's S3 client allowed and denied per its policies,
//! bucket policies (anonymous read access to a public bucket), and secrets kept out of the
//! drives and the log.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use aws_sdk_s3::Client;
use common::*;

const BUCKET: &str = "data";

/// Runs `strata admin ARGS --endpoint <server>` as the root user.
fn admin(server: &TestServer, args: &[&str]) -> Output {
    strata_admin(server, args)
}

/// `strata admin ARGS`, which must succeed; its standard output.
#[track_caller]
fn admin_ok(server: &TestServer, args: &[&str]) -> String {
    let output = admin(server, args);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "strata admin {args:?}: exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// `strata admin ARGS`, which must fail; its standard error.
#[track_caller]
fn admin_fails(server: &TestServer, args: &[&str]) -> String {
    let output = admin(server, args);
    assert!(!output.status.success(), "strata admin {args:?} succeeded");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Writes a policy document to a file and adds it as `name`.
fn add_policy(server: &TestServer, dir: &Path, name: &str, document: &str) {
    let file: PathBuf = dir.join(format!("{name}.json"));
    std::fs::write(&file, document).unwrap();
    admin_ok(server, &["policy", "add", name, file.to_str().unwrap()]);
}

const READ_ONLY: &str = r#"{
    "Version": "2012-10-17",
    "Statement": [{
        "Sid": "ReadData",
        "Effect": "Allow",
        "Action": ["s3:GetObject", "s3:ListBucket"],
        "Resource": ["arn:aws:s3:::data", "arn:aws:s3:::data/*"]
    }]
}"#;

const TEAM_A: &str = r#"{
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
         "Resource": "arn:aws:s3:::data/team-a/*"},
        {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::data",
         "Condition": {"StringLike": {"s3:prefix": ["team-a/", "team-a/*"]}}}
    ]
}"#;

const ALL_BUT_SECRETS: &str = r#"{
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
        {"Effect": "Deny", "Action": ["s3:GetObject", "s3:DeleteObject"],
         "Resource": "arn:aws:s3:::data/secret/*"}
    ]
}"#;

async fn put_as(client: &Client, key: &str) -> Result<(), String> {
    client
        .put_object()
        .bucket(BUCKET)
        .key(key)
        .body(ByteStream::from_static(b"written"))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| code_of(&e).unwrap_or_else(|| describe(&e)))
}

async fn get_as(client: &Client, key: &str) -> Result<Vec<u8>, String> {
    match client.get_object().bucket(BUCKET).key(key).send().await {
        Ok(out) => Ok(out.body.collect().await.unwrap().into_bytes().to_vec()),
        Err(e) => Err(code_of(&e).unwrap_or_else(|| describe(&e))),
    }
}

async fn delete_as(client: &Client, key: &str) -> Result<(), String> {
    client
        .delete_object()
        .bucket(BUCKET)
        .key(key)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| code_of(&e).unwrap_or_else(|| describe(&e)))
}

async fn list_as(client: &Client, prefix: Option<&str>) -> Result<Vec<String>, String> {
    match client
        .list_objects_v2()
        .bucket(BUCKET)
        .set_prefix(prefix.map(str::to_string))
        .send()
        .await
    {
        Ok(out) => Ok(out
            .contents()
            .iter()
            .filter_map(|o| o.key().map(str::to_string))
            .collect()),
        Err(e) => Err(code_of(&e).unwrap_or_else(|| describe(&e))),
    }
}

fn denied<T: std::fmt::Debug>(result: Result<T, String>, what: &str) {
    assert_eq!(
        result.map(|_| ()),
        Err("AccessDenied".to_string()),
        "{what}"
    );
}

/// The secret key `strata admin user add` printed.
fn printed_secret(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix("Secret key: "))
        .unwrap_or_else(|| panic!("no secret key printed:\n{stdout}"))
        .trim()
        .to_string()
}

#[tokio::test]
async fn each_user_may_do_what_its_policies_allow_and_nothing_else() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let root = server.client();
    create_bucket(&root, BUCKET).await;
    create_bucket(&root, "other").await;
    for key in ["team-a/one", "team-b/two", "secret/s", "public/p"] {
        put(&root, BUCKET, key, key.as_bytes()).await;
    }
    put(&root, "other", "x", b"x").await;

    add_policy(&server, dir.path(), "readonly", READ_ONLY);
    add_policy(&server, dir.path(), "team-a", TEAM_A);
    add_policy(&server, dir.path(), "all-but-secrets", ALL_BUT_SECRETS);
    let reader_secret = "reader-secret-0123456789";
    admin_ok(
        &server,
        &[
            "user",
            "add",
            "reader",
            "--secret",
            reader_secret,
            "--policy",
            "readonly",
        ],
    );
    let team_a_secret = printed_secret(&admin_ok(
        &server,
        &["user", "add", "alice", "--policy", "team-a"],
    ));
    admin_ok(&server, &["user", "add", "carol"]);
    admin_ok(&server, &["policy", "attach", "carol", "all-but-secrets"]);
    let carol_secret = "carol-secret-0123456789";
    admin_ok(&server, &["user", "remove", "carol"]);
    admin_ok(
        &server,
        &[
            "user",
            "add",
            "carol",
            "--secret",
            carol_secret,
            "--policy",
            "all-but-secrets",
        ],
    );

    // The read-only user reads and lists, and changes nothing.
    let reader = server.client_with("reader", reader_secret);
    assert_eq!(get_as(&reader, "team-b/two").await.unwrap(), b"team-b/two");
    assert_eq!(list_as(&reader, None).await.unwrap().len(), 4);
    denied(put_as(&reader, "new").await, "reader PUT");
    denied(delete_as(&reader, "public/p").await, "reader DELETE");
    denied(
        reader
            .list_buckets()
            .send()
            .await
            .map_err(|e| code_of(&e).unwrap_or_default()),
        "reader ListBuckets",
    );
    denied(
        reader
            .create_bucket()
            .bucket("readers-own")
            .send()
            .await
            .map_err(|e| code_of(&e).unwrap_or_default()),
        "reader CreateBucket",
    );
    denied(
        reader
            .get_object()
            .bucket("other")
            .key("x")
            .send()
            .await
            .map_err(|e| code_of(&e).unwrap_or_default()),
        "reader GET in another bucket",
    );
    assert_s3_status(
        reader.head_object().bucket("other").key("x").send().await,
        403,
        "reader HEAD in another bucket",
    );

    // The team user works under its prefix only.
    let alice = server.client_with("alice", &team_a_secret);
    put_as(&alice, "team-a/new").await.unwrap();
    assert_eq!(get_as(&alice, "team-a/one").await.unwrap(), b"team-a/one");
    assert_eq!(
        list_as(&alice, Some("team-a/")).await.unwrap(),
        ["team-a/new", "team-a/one"]
    );
    denied(get_as(&alice, "team-b/two").await, "alice GET team-b");
    denied(put_as(&alice, "team-b/x").await, "alice PUT team-b");
    denied(
        put_as(&alice, "team-ab").await,
        "alice PUT beside her prefix",
    );
    denied(list_as(&alice, None).await, "alice list everything");
    denied(list_as(&alice, Some("team-b/")).await, "alice list team-b");
    delete_as(&alice, "team-a/new").await.unwrap();
    // A copy needs to read its source.
    let copy = |source: &str| {
        alice
            .copy_object()
            .bucket(BUCKET)
            .key("team-a/copy")
            .copy_source(format!("{BUCKET}/{source}"))
            .send()
    };
    assert!(copy("team-a/one").await.is_ok());
    denied(
        copy("team-b/two")
            .await
            .map_err(|e| code_of(&e).unwrap_or_default()),
        "alice copies from team-b",
    );

    // An explicit deny beats an allow, also in a batch delete, where each key is judged on
    // its own (S3 answers AccessDenied for the refused keys and deletes the others).
    let carol = server.client_with("carol", carol_secret);
    assert_eq!(get_as(&carol, "public/p").await.unwrap(), b"public/p");
    denied(get_as(&carol, "secret/s").await, "carol GET secret");
    denied(delete_as(&carol, "secret/s").await, "carol DELETE secret");
    put_as(&carol, "secret/new").await.unwrap();
    put(&root, BUCKET, "public/gone", b"x").await;
    let batch = Delete::builder()
        .objects(
            ObjectIdentifier::builder()
                .key("public/gone")
                .build()
                .unwrap(),
        )
        .objects(ObjectIdentifier::builder().key("secret/s").build().unwrap())
        .build()
        .unwrap();
    let result = carol
        .delete_objects()
        .bucket(BUCKET)
        .delete(batch)
        .send()
        .await
        .expect("a batch delete answers per key");
    let deleted: Vec<_> = result.deleted().iter().filter_map(|d| d.key()).collect();
    assert_eq!(deleted, ["public/gone"]);
    let refused: Vec<_> = result
        .errors()
        .iter()
        .map(|e| (e.key().unwrap_or(""), e.code().unwrap_or("")))
        .collect();
    assert_eq!(refused, [("secret/s", "AccessDenied")]);
    assert_object(&root, BUCKET, "secret/s", b"secret/s").await;
    assert_s3_status(
        root.head_object()
            .bucket(BUCKET)
            .key("public/gone")
            .send()
            .await,
        404,
        "the allowed key of the batch is deleted",
    );
    assert_object(&root, BUCKET, "public/p", b"public/p").await;
    assert!(carol.list_buckets().send().await.is_ok());

    // Listings never show a secret.
    let users = admin_ok(&server, &["user", "list"]);
    assert!(
        users.contains("reader") && users.contains("readonly"),
        "{users}"
    );
    for secret in [reader_secret, &team_a_secret, carol_secret] {
        assert!(
            !users.contains(secret),
            "user list shows a secret:\n{users}"
        );
    }
    let json = admin_ok(&server, &["user", "list", "--json"]);
    assert!(!json.contains(reader_secret), "{json}");
    let policies = admin_ok(&server, &["policy", "list"]);
    assert!(
        policies.contains("team-a") && policies.contains("alice"),
        "{policies}"
    );
    let shown = admin_ok(&server, &["policy", "show", "team-a"]);
    assert!(shown.contains("arn:aws:s3:::data/team-a/*"), "{shown}");

    // Admin refusals.
    let err = admin_fails(&server, &["policy", "remove", "readonly"]);
    assert!(err.contains("PolicyInUse"), "{err}");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"Statement": {"Effect": "Allow"}}"#).unwrap();
    let err = admin_fails(&server, &["policy", "add", "bad", bad.to_str().unwrap()]);
    assert!(err.contains("MalformedPolicy"), "{err}");
    let err = admin_fails(&server, &["user", "add", "reader"]);
    assert!(err.contains("UserExists"), "{err}");
    let err = admin_fails(&server, &["user", "add", "nobody", "--policy", "missing"]);
    assert!(err.contains("NoSuchPolicy"), "{err}");
    // Only the root user administers.
    let as_reader = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["admin", "user", "list", "--endpoint", &server.endpoint()])
        .env("STRATA_ROOT_USER", "reader")
        .env("STRATA_ROOT_PASSWORD", reader_secret)
        .output()
        .unwrap();
    assert!(!as_reader.status.success());
    assert!(String::from_utf8_lossy(&as_reader.stderr).contains("AccessDenied"));

    // A disabled user is refused until enabled again; a removed one for good.
    admin_ok(&server, &["user", "disable", "alice"]);
    let err = get_as(&alice, "team-a/one").await.unwrap_err();
    assert_eq!(err, "InvalidAccessKeyId");
    admin_ok(&server, &["user", "enable", "alice"]);
    get_as(&alice, "team-a/one").await.unwrap();
    admin_ok(&server, &["policy", "detach", "alice", "team-a"]);
    denied(
        get_as(&alice, "team-a/one").await,
        "alice without her policy",
    );
    admin_ok(&server, &["policy", "attach", "alice", "team-a"]);
    admin_ok(&server, &["user", "remove", "reader"]);
    assert_eq!(
        get_as(&reader, "public/p").await.unwrap_err(),
        "InvalidAccessKeyId"
    );

    // Users and policies survive a restart.
    server.restart();
    let alice = server.client_with("alice", &team_a_secret);
    assert_eq!(get_as(&alice, "team-a/one").await.unwrap(), b"team-a/one");
    denied(
        get_as(&alice, "team-b/two").await,
        "alice GET team-b after restart",
    );
    let carol = server.client_with("carol", carol_secret);
    denied(
        get_as(&carol, "secret/s").await,
        "carol GET secret after restart",
    );
    let reader = server.client_with("reader", reader_secret);
    assert_eq!(
        get_as(&reader, "public/p").await.unwrap_err(),
        "InvalidAccessKeyId"
    );

    // Secrets are neither in the drives in plain text nor in the log.
    for drive in server.drives() {
        let db = std::fs::read(drive.join(".strata/meta.redb")).unwrap();
        for secret in [carol_secret, team_a_secret.as_str()] {
            assert!(
                !db.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{} holds a secret in plain text",
                drive.display()
            );
        }
    }
    let log = server.log();
    for secret in [reader_secret, carol_secret, team_a_secret.as_str()] {
        assert!(!log.contains(secret), "the server log shows a secret");
    }
}

const PUBLIC_READ: &str = r#"{
    "Version": "2012-10-17",
    "Statement": [{
        "Sid": "PublicRead",
        "Effect": "Allow",
        "Principal": "*",
        "Action": ["s3:GetObject", "s3:ListBucket"],
        "Resource": ["arn:aws:s3:::data", "arn:aws:s3:::data/*"]
    }]
}"#;

#[tokio::test]
async fn a_bucket_policy_opens_a_bucket_to_anonymous_readers() {
    let server = TestServer::start();
    let root = server.client();
    create_bucket(&root, BUCKET).await;
    create_bucket(&root, "private").await;
    put(&root, BUCKET, "dataset/part-0", b"public bytes").await;
    put(&root, "private", "k", b"private bytes").await;
    let anonymous_get = |path: &str| {
        let url = server.url(path);
        async move { raw_send("GET", &url, &[], Vec::new()).await }
    };

    // Private until a policy says otherwise.
    assert_eq!(anonymous_get("/data/dataset/part-0").await.status, 403);
    assert_s3_error(
        root.get_bucket_policy().bucket(BUCKET).send().await,
        404,
        "NoSuchBucketPolicy",
        "no policy yet",
    );
    assert_s3_error(
        root.put_bucket_policy()
            .bucket(BUCKET)
            .policy(r#"{"Statement": [{"Effect": "Allow", "Action": "s3:GetObject"}]}"#)
            .send()
            .await,
        400,
        "MalformedPolicy",
        "policy without a principal or resource",
    );
    assert_s3_error(
        root.put_bucket_policy()
            .bucket(BUCKET)
            .policy(PUBLIC_READ.replace("arn:aws:s3:::data/*", "arn:aws:s3:::private/*"))
            .send()
            .await,
        400,
        "MalformedPolicy",
        "policy about another bucket",
    );
    ok(
        root.put_bucket_policy()
            .bucket(BUCKET)
            .policy(PUBLIC_READ)
            .send()
            .await,
        "PutBucketPolicy",
    );
    let stored = ok(
        root.get_bucket_policy().bucket(BUCKET).send().await,
        "GetBucketPolicy",
    );
    assert_eq!(stored.policy(), Some(PUBLIC_READ));

    // Anyone reads and lists; nobody writes or deletes; other buckets stay private.
    let got = anonymous_get("/data/dataset/part-0").await;
    assert_eq!(
        (got.status, got.body.as_slice()),
        (200, &b"public bytes"[..])
    );
    let listing = anonymous_get("/data?list-type=2&prefix=dataset/").await;
    assert_eq!(listing.status, 200, "{}", listing.text());
    assert!(listing.text().contains("<Key>dataset/part-0</Key>"));
    let missing = anonymous_get("/data/no-such-key").await;
    assert_eq!(missing.status, 404, "{}", missing.text());
    // Unsigned requests may not change how a public object is served (as HTML, say).
    let as_html = anonymous_get("/data/dataset/part-0?response-content-type=text%2Fhtml").await;
    assert_eq!(as_html.status, 400, "{}", as_html.text());
    assert_eq!(
        as_html.xml_element("Code").as_deref(),
        Some("InvalidRequest")
    );
    assert_eq!(
        as_html.header("content-type").as_deref(),
        Some("application/xml")
    );
    let put = raw_send(
        "PUT",
        &server.url("/data/dataset/evil"),
        &[],
        b"evil".to_vec(),
    )
    .await;
    assert_eq!(put.status, 403);
    assert_eq!(put.xml_element("Code").as_deref(), Some("AccessDenied"));
    let delete = raw_send(
        "DELETE",
        &server.url("/data/dataset/part-0"),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(delete.status, 403);
    assert_eq!(anonymous_get("/data?policy").await.status, 403);
    assert_eq!(anonymous_get("/private/k").await.status, 403);
    assert_eq!(anonymous_get("/").await.status, 403);
    // A bucket that does not exist is NoSuchBucket to anybody, as on S3.
    let missing = anonymous_get("/no-such-bucket-here/k").await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.xml_element("Code").as_deref(), Some("NoSuchBucket"));
    let missing = anonymous_get("/no-such-bucket-here?list-type=2").await;
    assert_eq!(missing.status, 404);
    assert_object(&root, BUCKET, "dataset/part-0", b"public bytes").await;
    assert_s3_status(
        root.head_object()
            .bucket(BUCKET)
            .key("dataset/evil")
            .send()
            .await,
        404,
        "the anonymous PUT stored nothing",
    );

    // Deleting the policy makes the bucket private again.
    ok(
        root.delete_bucket_policy().bucket(BUCKET).send().await,
        "DeleteBucketPolicy",
    );
    let got = anonymous_get("/data/dataset/part-0").await;
    assert_eq!(got.status, 403);
    assert!(!got.text().contains("public bytes"));
    assert_s3_error(
        root.get_bucket_policy().bucket(BUCKET).send().await,
        404,
        "NoSuchBucketPolicy",
        "policy deleted",
    );
}

#[tokio::test]
async fn bucket_policies_grant_and_deny_users_too() {
    let server = TestServer::start();
    let root = server.client();
    create_bucket(&root, BUCKET).await;
    put(&root, BUCKET, "shared/a", b"a").await;
    put(&root, BUCKET, "locked/b", b"b").await;
    let dir = tempfile::tempdir().unwrap();
    add_policy(
        &server,
        dir.path(),
        "everything",
        r#"{"Statement": {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}}"#,
    );
    let dave_secret = "dave-secret-0123456789";
    admin_ok(&server, &["user", "add", "dave", "--secret", dave_secret]);
    let erin_secret = "erin-secret-0123456789";
    admin_ok(
        &server,
        &[
            "user",
            "add",
            "erin",
            "--secret",
            erin_secret,
            "--policy",
            "everything",
        ],
    );
    let dave = server.client_with("dave", dave_secret);
    let erin = server.client_with("erin", erin_secret);
    // Dave holds no policy: nothing at all.
    denied(get_as(&dave, "shared/a").await, "dave without policies");

    let policy = r#"{
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::000000000000:user/dave"]},
             "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/shared/*"},
            {"Effect": "Deny", "Principal": {"AWS": "*"},
             "Action": "s3:*", "Resource": "arn:aws:s3:::data/locked/*"}
        ]
    }"#;
    ok(
        root.put_bucket_policy()
            .bucket(BUCKET)
            .policy(policy)
            .send()
            .await,
        "PutBucketPolicy",
    );
    // The bucket grants Dave reads under shared/.
    assert_eq!(get_as(&dave, "shared/a").await.unwrap(), b"a");
    denied(put_as(&dave, "shared/new").await, "dave PUT");
    // The bucket's deny beats Erin's own allow-everything, and binds the root user too.
    assert_eq!(get_as(&erin, "shared/a").await.unwrap(), b"a");
    denied(get_as(&erin, "locked/b").await, "erin GET locked");
    denied(delete_as(&erin, "locked/b").await, "erin DELETE locked");
    assert_s3_error(
        root.get_object()
            .bucket(BUCKET)
            .key("locked/b")
            .send()
            .await,
        403,
        "AccessDenied",
        "root GET locked",
    );
    // Erin may change the bucket's policy (s3:*), which is how such a deny is lifted.
    ok(
        erin.delete_bucket_policy().bucket(BUCKET).send().await,
        "erin DeleteBucketPolicy",
    );
    assert_eq!(get_as(&erin, "locked/b").await.unwrap(), b"b");
    denied(
        get_as(&dave, "shared/a").await,
        "dave after the policy went",
    );
}

/// A POST Object form for `key` signed with a user's keys (or, without keys, no policy at
/// all: an anonymous form), posted to the bucket.
async fn post_form(server: &TestServer, keys: Option<(&str, &str)>, key: &str) -> RawResponse {
    post_form_with(server, keys, key, &[]).await
}

/// [`post_form`] with more fields, which its policy allows.
async fn post_form_with(
    server: &TestServer,
    keys: Option<(&str, &str)>,
    key: &str,
    fields: &[(&str, &str)],
) -> RawResponse {
    use base64::Engine as _;
    use hmac::{Hmac, Mac};
    let hmac = |key: &[u8], data: &[u8]| {
        let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(key).unwrap();
        mac.update(data);
        mac.finalize().into_bytes().to_vec()
    };
    let mut form = reqwest::multipart::Form::new().text("key", key.to_string());
    for (name, value) in fields {
        form = form.text(name.to_string(), value.to_string());
    }
    if let Some((access, secret)) = keys {
        let now = time::OffsetDateTime::now_utc();
        let date = format!(
            "{:04}{:02}{:02}",
            now.year(),
            u8::from(now.month()),
            now.day()
        );
        let amz_date = format!(
            "{date}T{:02}{:02}{:02}Z",
            now.hour(),
            now.minute(),
            now.second()
        );
        let credential = format!("{access}/{date}/{REGION}/s3/aws4_request");
        let expiration = (now + time::Duration::hours(1))
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        let mut conditions = vec![
            serde_json::json!({"bucket": BUCKET}),
            serde_json::json!(["starts-with", "$key", ""]),
            serde_json::json!({"x-amz-algorithm": "AWS4-HMAC-SHA256"}),
            serde_json::json!({"x-amz-credential": credential}),
            serde_json::json!({"x-amz-date": amz_date}),
        ];
        for (name, value) in fields {
            conditions.push(serde_json::json!({ *name: value }));
        }
        let policy = serde_json::json!({
            "expiration": expiration,
            "conditions": conditions,
        });
        let policy = base64::engine::general_purpose::STANDARD.encode(policy.to_string());
        let mut signing = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
        for part in [REGION, "s3", "aws4_request"] {
            signing = hmac(&signing, part.as_bytes());
        }
        let signature = hex::encode(hmac(&signing, policy.as_bytes()));
        for (name, value) in [
            ("x-amz-algorithm", "AWS4-HMAC-SHA256".to_string()),
            ("x-amz-credential", credential),
            ("x-amz-date", amz_date),
            ("policy", policy),
            ("x-amz-signature", signature),
        ] {
            form = form.text(name, value);
        }
    }
    let form = form.part(
        "file",
        reqwest::multipart::Part::bytes(b"posted".to_vec()).file_name("f.bin"),
    );
    let response = reqwest::Client::new()
        .post(server.url(&format!("/{BUCKET}")))
        .multipart(form)
        .send()
        .await
        .unwrap();
    RawResponse {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.bytes().await.unwrap().to_vec(),
    }
}

#[tokio::test]
async fn post_object_forms_are_authorised_like_puts() {
    let server = TestServer::start();
    let root = server.client();
    create_bucket(&root, BUCKET).await;
    let dir = tempfile::tempdir().unwrap();
    add_policy(&server, dir.path(), "team-a", TEAM_A);
    let secret = "frank-secret-0123456789";
    admin_ok(
        &server,
        &[
            "user", "add", "frank", "--secret", secret, "--policy", "team-a",
        ],
    );
    let keys = Some(("frank", secret));
    let allowed = post_form(&server, keys, "team-a/form").await;
    assert_eq!(allowed.status, 204, "{}", allowed.text());
    assert_object(&root, BUCKET, "team-a/form", b"posted").await;
    let refused = post_form(&server, keys, "team-b/form").await;
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert_eq!(refused.xml_element("Code").as_deref(), Some("AccessDenied"));

    // A form without a policy is anonymous: only a bucket policy for anyone lets it in.
    assert_eq!(post_form(&server, None, "drop/anon").await.status, 403);
    let drop_box = r#"{"Statement": {"Effect": "Allow", "Principal": "*",
        "Action": "s3:PutObject", "Resource": "arn:aws:s3:::data/drop/*"}}"#;
    ok(
        root.put_bucket_policy()
            .bucket(BUCKET)
            .policy(drop_box)
            .send()
            .await,
        "PutBucketPolicy",
    );
    assert_eq!(post_form(&server, None, "drop/anon").await.status, 204);
    assert_object(&root, BUCKET, "drop/anon", b"posted").await;
    assert_eq!(post_form(&server, None, "elsewhere").await.status, 403);
}

#[tokio::test]
async fn users_and_policies_are_healed_onto_a_replaced_drive() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![("STRATA_DRIVE_CHECK_SECS".into(), "1".into())],
        ..ServerOptions::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let root = server.client();
    create_bucket(&root, BUCKET).await;
    put(&root, BUCKET, "public/p", b"p").await;
    add_policy(&server, dir.path(), "readonly", READ_ONLY);
    let secret = "healed-user-secret-0123";
    admin_ok(
        &server,
        &[
            "user", "add", "healed", "--secret", secret, "--policy", "readonly",
        ],
    );

    // Drive 1 dies and an empty one takes its place; the heal pass gives it everything.
    let replaced = server.drives()[0].clone();
    std::fs::remove_dir_all(&replaced).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    std::fs::create_dir_all(&replaced).unwrap();
    let started = std::time::Instant::now();
    while !server.log().contains("heal pass done") {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no heal pass after the replacement"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    // With three other drives gone, the user and policy can only come from six drives that
    // include the replaced one: restart (no cache) and use them.
    server.kill();
    for i in [3, 4, 5] {
        let drive = &server.drives()[i];
        std::fs::rename(drive, drive.with_extension("away")).unwrap();
    }
    server.restart();
    let user = server.client_with("healed", secret);
    assert_eq!(get(&user, BUCKET, "public/p").await, b"p");
    assert_s3_error(
        user.put_object()
            .bucket(BUCKET)
            .key("public/q")
            .body(ByteStream::from_static(b"q"))
            .send()
            .await,
        403,
        "AccessDenied",
        "the healed policy still limits the user",
    );
    for i in [3, 4, 5] {
        let drive = &server.drives()[i];
        std::fs::rename(drive.with_extension("away"), drive).unwrap();
    }
}

#[tokio::test]
async fn bucket_policies_can_name_the_client_address() {
    let server = TestServer::start();
    let root = server.client();
    create_bucket(&root, BUCKET).await;
    put(&root, BUCKET, "dataset/part-0", b"public bytes").await;
    let policy_from = |network: &str| {
        format!(
            r#"{{"Version": "2012-10-17", "Statement": [{{"Effect": "Allow", "Principal": "*",
                "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*",
                "Condition": {{"IpAddress": {{"aws:SourceIp": "{network}"}}}}}}]}}"#
        )
    };
    let anonymous_get = || {
        let url = server.url("/data/dataset/part-0");
        async move { raw_send("GET", &url, &[], Vec::new()).await }
    };
    // The tests reach the server from 127.0.0.1.
    ok(
        root.put_bucket_policy()
            .bucket(BUCKET)
            .policy(policy_from("127.0.0.0/8"))
            .send()
            .await,
        "PutBucketPolicy for loopback",
    );
    let got = anonymous_get().await;
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(got.body, b"public bytes");
    ok(
        root.put_bucket_policy()
            .bucket(BUCKET)
            .policy(policy_from("10.0.0.0/8"))
            .send()
            .await,
        "PutBucketPolicy for another network",
    );
    assert_eq!(anonymous_get().await.status, 403);
}

#[tokio::test]
async fn bypassing_governance_retention_needs_its_own_permission() {
    use aws_sdk_s3::types::ObjectLockMode;
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let root = server.client();
    ok(
        root.create_bucket()
            .bucket("locked")
            .object_lock_enabled_for_bucket(true)
            .send()
            .await,
        "CreateBucket with Object Lock",
    );
    let until = aws_sdk_s3::primitives::DateTime::from_secs(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
            + 86_400,
    );
    let put = ok(
        root.put_object()
            .bucket("locked")
            .key("g")
            .body(ByteStream::from_static(b"governed"))
            .object_lock_mode(ObjectLockMode::Governance)
            .object_lock_retain_until_date(until)
            .send()
            .await,
        "PUT under governance retention",
    );
    let version = put.version_id().unwrap().to_string();
    add_policy(
        &server,
        dir.path(),
        "deleter",
        r#"{"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
            "Action": ["s3:DeleteObject", "s3:DeleteObjectVersion", "s3:GetObject"],
            "Resource": ["arn:aws:s3:::locked/*"]}]}"#,
    );
    add_policy(
        &server,
        dir.path(),
        "bypass",
        r#"{"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
            "Action": ["s3:BypassGovernanceRetention"],
            "Resource": ["arn:aws:s3:::locked/*"]}]}"#,
    );
    let secret = "deleter-secret-0123456789";
    admin_ok(
        &server,
        &[
            "user", "add", "dave", "--secret", secret, "--policy", "deleter",
        ],
    );
    let dave = server.client_with("dave", secret);
    let delete_bypassing = || {
        dave.delete_object()
            .bucket("locked")
            .key("g")
            .version_id(&version)
            .bypass_governance_retention(true)
            .send()
    };
    assert_s3_error(
        delete_bypassing().await,
        403,
        "AccessDenied",
        "a bypass without s3:BypassGovernanceRetention",
    );
    admin_ok(&server, &["policy", "attach", "dave", "bypass"]);
    ok(delete_bypassing().await, "a bypass with the permission");
}

/// As on S3, a bucket policy's explicit Deny binds the root user too ("deny deletes" must
/// hold for everybody), except on the policy itself, so the owner can always remove it.
#[tokio::test]
async fn a_bucket_policy_deny_binds_the_root_user_except_on_the_policy() {
    let server = TestServer::start();
    let root = server.client();
    create_bucket(&root, BUCKET).await;
    put(&root, BUCKET, "ckpt", b"keep me").await;
    let deny_deletes = r#"{"Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": ["s3:DeleteObject", "s3:GetBucketPolicy",
         "s3:PutBucketPolicy", "s3:DeleteBucketPolicy"], "Resource": ["arn:aws:s3:::data",
         "arn:aws:s3:::data/*"]}]}"#;
    ok(
        root.put_bucket_policy()
            .bucket(BUCKET)
            .policy(deny_deletes)
            .send()
            .await,
        "PutBucketPolicy",
    );
    assert_s3_error(
        root.delete_object().bucket(BUCKET).key("ckpt").send().await,
        403,
        "AccessDenied",
        "root DELETE under a deny-deletes policy",
    );
    assert_object(&root, BUCKET, "ckpt", b"keep me").await;
    // What the policy does not deny is allowed, and the policy itself stays the owner's.
    put(&root, BUCKET, "other", b"new").await;
    ok(
        root.get_bucket_policy().bucket(BUCKET).send().await,
        "GetBucketPolicy",
    );
    ok(
        root.delete_bucket_policy().bucket(BUCKET).send().await,
        "DeleteBucketPolicy",
    );
    ok(
        root.delete_object().bucket(BUCKET).key("ckpt").send().await,
        "DELETE once the policy is gone",
    );
}

/// Bucket policies can condition on what a request's headers ask for: its storage class,
/// its tags (`s3:RequestObjectTag/<key>`), its ACL, its encryption.
#[tokio::test]
async fn policy_conditions_see_the_request_headers() {
    let server = TestServer::start();
    let root = server.client();
    create_bucket(&root, BUCKET).await;
    let policy = r#"{"Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
         "Resource": "arn:aws:s3:::data/*",
         "Condition": {"StringEquals": {"s3:x-amz-storage-class": "REDUCED_REDUNDANCY"}}},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
         "Resource": "arn:aws:s3:::data/*",
         "Condition": {"StringEquals": {"s3:RequestObjectTag/secret": "true"}}}]}"#;
    ok(
        root.put_bucket_policy()
            .bucket(BUCKET)
            .policy(policy)
            .send()
            .await,
        "PutBucketPolicy",
    );
    let reduced = root
        .put_object()
        .bucket(BUCKET)
        .key("rrs")
        .storage_class(aws_sdk_s3::types::StorageClass::ReducedRedundancy)
        .body(b"x".to_vec().into())
        .send()
        .await;
    assert_s3_error(reduced, 403, "AccessDenied", "RRS PUT");
    let secret = root
        .put_object()
        .bucket(BUCKET)
        .key("tagged")
        .tagging("team=vision&secret=true")
        .body(b"x".to_vec().into())
        .send()
        .await;
    assert_s3_error(secret, 403, "AccessDenied", "PUT tagged secret=true");
    let open = root
        .put_object()
        .bucket(BUCKET)
        .key("tagged")
        .tagging("team=vision&secret=false")
        .body(b"x".to_vec().into())
        .send()
        .await;
    ok(open, "PUT tagged secret=false");
    put(&root, BUCKET, "plain", b"x").await;
}

/// `s3:ExistingObjectTag/<key>`: policies can grant or deny by the tags of the object acted
/// on: a user may read only objects tagged public, and nobody (root included) may delete
/// one tagged keep=yes.
#[tokio::test]
async fn policies_can_judge_by_the_tags_of_the_object() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let root = server.client();
    create_bucket(&root, BUCKET).await;
    for (key, tagging) in [
        ("open", "classification=public"),
        ("closed", "classification=secret&keep=yes"),
        ("plain", ""),
    ] {
        ok(
            root.put_object()
                .bucket(BUCKET)
                .key(key)
                .tagging(tagging)
                .body(key.as_bytes().to_vec().into())
                .send()
                .await,
            "tagged PUT",
        );
    }
    let public_only = r#"{"Statement": [{"Effect": "Allow", "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::data/*",
        "Condition": {"StringEquals": {"s3:ExistingObjectTag/classification": "public"}}}]}"#;
    add_policy(&server, dir.path(), "public-only", public_only);
    let secret = "tagged-reader-secret-0123";
    admin_ok(
        &server,
        &[
            "user",
            "add",
            "viewer",
            "--secret",
            secret,
            "--policy",
            "public-only",
        ],
    );
    let viewer = server.client_with("viewer", secret);
    assert_eq!(get_as(&viewer, "open").await.unwrap(), b"open");
    denied(get_as(&viewer, "closed").await, "viewer GET secret");
    denied(get_as(&viewer, "plain").await, "viewer GET untagged");

    let keep = r#"{"Statement": [{"Effect": "Deny", "Principal": "*",
        "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::data/*",
        "Condition": {"StringEquals": {"s3:ExistingObjectTag/keep": "yes"}}}]}"#;
    ok(
        root.put_bucket_policy()
            .bucket(BUCKET)
            .policy(keep)
            .send()
            .await,
        "PutBucketPolicy",
    );
    assert_s3_error(
        root.delete_object()
            .bucket(BUCKET)
            .key("closed")
            .send()
            .await,
        403,
        "AccessDenied",
        "root DELETE of a keep=yes object",
    );
    ok(
        root.delete_object()
            .bucket(BUCKET)
            .key("plain")
            .send()
            .await,
        "root DELETE of an untagged object",
    );
    assert_eq!(get(&root, BUCKET, "closed").await, b"closed");
}

/// A writer allowed only `s3:PutObject` writes objects, and nothing else with them: as on
/// AWS, a retention, a legal hold, tags or an ACL set by a PUT, CreateMultipartUpload,
/// CopyObject or POST form needs its own permission, or anyone who may write a checkpoint
/// could lock it for years.
#[tokio::test]
async fn a_writer_may_not_lock_tag_or_share_what_it_writes_without_those_permissions() {
    use aws_sdk_s3::types::{ObjectCannedAcl, ObjectLockLegalHoldStatus, ObjectLockMode};
    let server = TestServer::start();
    let root = server.client();
    ok(
        root.create_bucket()
            .bucket(BUCKET)
            .object_lock_enabled_for_bucket(true)
            .send()
            .await,
        "CreateBucket with Object Lock",
    );
    put(&root, BUCKET, "ckpt/source", b"source").await;
    let dir = tempfile::tempdir().unwrap();
    let writer_only = r#"{"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Action": ["s3:PutObject", "s3:GetObject"], "Resource": "arn:aws:s3:::data/*"}]}"#;
    add_policy(&server, dir.path(), "writer-only", writer_only);
    let secret = "writer-secret-0123456789";
    admin_ok(
        &server,
        &[
            "user",
            "add",
            "writer",
            "--secret",
            secret,
            "--policy",
            "writer-only",
        ],
    );
    let writer = server.client_with("writer", secret);
    let until = aws_sdk_s3::primitives::DateTime::from_secs(
        time::OffsetDateTime::now_utc().unix_timestamp() + 10 * 365 * 86_400,
    );
    let put_with = || {
        writer
            .put_object()
            .bucket(BUCKET)
            .key("ckpt/step-1")
            .body(ByteStream::from_static(b"weights"))
    };
    let code = |result: Result<(), String>| result.err().unwrap_or_else(|| "succeeded".into());
    fn sent<T, E>(
        r: Result<T, aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>>,
    ) -> Result<(), String>
    where
        E: aws_sdk_s3::error::ProvideErrorMetadata + std::fmt::Debug,
    {
        r.map(|_| ())
            .map_err(|e| code_of(&e).unwrap_or_else(|| describe(&e)))
    }
    let locked = put_with()
        .object_lock_mode(ObjectLockMode::Compliance)
        .object_lock_retain_until_date(until)
        .send()
        .await;
    assert_eq!(code(sent(locked)), "AccessDenied", "retention");
    let held = put_with()
        .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
        .send()
        .await;
    assert_eq!(code(sent(held)), "AccessDenied", "legal hold");
    let tagged = put_with().tagging("team=a").send().await;
    assert_eq!(code(sent(tagged)), "AccessDenied", "tags");
    let shared = put_with()
        .acl(ObjectCannedAcl::BucketOwnerFullControl)
        .send()
        .await;
    assert_eq!(code(sent(shared)), "AccessDenied", "ACL");
    let multipart = writer
        .create_multipart_upload()
        .bucket(BUCKET)
        .key("ckpt/step-2")
        .object_lock_mode(ObjectLockMode::Compliance)
        .object_lock_retain_until_date(until)
        .send()
        .await;
    assert_eq!(code(sent(multipart)), "AccessDenied", "multipart retention");
    let copied = writer
        .copy_object()
        .bucket(BUCKET)
        .key("ckpt/step-3")
        .copy_source(format!("{BUCKET}/ckpt/source"))
        .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
        .send()
        .await;
    assert_eq!(code(sent(copied)), "AccessDenied", "copy with a legal hold");
    let keys = Some(("writer", secret));
    let form = post_form_with(
        &server,
        keys,
        "ckpt/form",
        &[("x-amz-object-lock-legal-hold", "ON")],
    )
    .await;
    assert_eq!(
        form.status,
        403,
        "POST form with a legal hold: {}",
        form.text()
    );
    // Nothing of the refused requests was stored; a plain write works.
    let listed = root
        .list_object_versions()
        .bucket(BUCKET)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.versions().len(), 1, "only the source exists");
    sent(put_with().send().await).unwrap();
    assert_eq!(
        post_form(&server, keys, "ckpt/plain-form").await.status,
        204
    );

    // With the permissions, the same requests pass.
    let locker = r#"{"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Action": ["s3:PutObjectRetention", "s3:PutObjectLegalHold"],
        "Resource": "arn:aws:s3:::data/*"}]}"#;
    add_policy(&server, dir.path(), "locker", locker);
    admin_ok(&server, &["policy", "attach", "writer", "locker"]);
    let held = put_with()
        .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
        .send()
        .await;
    sent(held).unwrap();
    let form = post_form_with(
        &server,
        keys,
        "ckpt/form",
        &[("x-amz-object-lock-legal-hold", "ON")],
    )
    .await;
    assert_eq!(form.status, 204, "{}", form.text());
}
