//! Bucket operations against the real server: create, head, list, delete, and their errors.

mod common;

use common::*;

/// One server for the whole file: bucket tests use unique names and do not interfere.

#[tokio::test]
async fn create_head_list_delete_bucket() {
    let client = server().client();
    let bucket = unique_bucket("lifecycle");

    create_bucket(&client, &bucket).await;
    ok(
        client.head_bucket().bucket(&bucket).send().await,
        "HeadBucket after create",
    );

    let list = ok(client.list_buckets().send().await, "ListBuckets");
    let found = list
        .buckets()
        .iter()
        .find(|b| b.name() == Some(bucket.as_str()))
        .unwrap_or_else(|| panic!("ListBuckets does not show {bucket}: {list:?}"));
    assert!(
        found.creation_date().is_some(),
        "ListBuckets entry has no CreationDate: {found:?}"
    );

    ok(
        client.delete_bucket().bucket(&bucket).send().await,
        "DeleteBucket",
    );
    assert_s3_status(
        client.head_bucket().bucket(&bucket).send().await,
        404,
        "HeadBucket after delete",
    );
    let list = ok(
        client.list_buckets().send().await,
        "ListBuckets after delete",
    );
    assert!(
        !list
            .buckets()
            .iter()
            .any(|b| b.name() == Some(bucket.as_str())),
        "ListBuckets still shows deleted {bucket}"
    );
}

#[tokio::test]
async fn list_buckets_shows_every_bucket() {
    let client = server().client();
    let names: Vec<String> = (0..3)
        .map(|i| unique_bucket(&format!("sorted{i}")))
        .collect();
    for n in &names {
        create_bucket(&client, n).await;
    }
    let list = ok(client.list_buckets().send().await, "ListBuckets");
    let listed: Vec<String> = list
        .buckets()
        .iter()
        .filter_map(|b| b.name().map(str::to_owned))
        .collect();
    for n in &names {
        assert!(listed.contains(n), "ListBuckets misses {n}: {listed:?}");
    }
}

/// In us-east-1 (this server's region) S3 answers the re-creation of one's own bucket with
/// 200 and changes nothing; other regions answer 409 BucketAlreadyOwnedByYou.
#[tokio::test]
async fn re_creating_ones_own_bucket_in_us_east_1_is_200() {
    let client = server().client();
    let bucket = unique_bucket("twice");
    create_bucket(&client, &bucket).await;
    put(&client, &bucket, "k", b"still here").await;
    ok(
        client.create_bucket().bucket(&bucket).send().await,
        "second CreateBucket",
    );
    // The bucket is still there, with its objects, and usable.
    assert_object(&client, &bucket, "k", b"still here").await;
}

#[tokio::test]
async fn invalid_bucket_names_are_rejected() {
    let client = server().client();
    let long = "a".repeat(64);
    let cases: &[(&str, &str)] = &[
        ("ab", "shorter than 3 characters"),
        (&long, "longer than 63 characters"),
        ("Uppercase-bucket", "uppercase letters"),
        ("under_score", "underscore"),
        ("-leading-hyphen", "starts with a hyphen"),
        ("trailing-hyphen-", "ends with a hyphen"),
        (".leading-dot", "starts with a period"),
        ("trailing-dot.", "ends with a period"),
        ("double..dots", "two adjacent periods"),
        ("192.168.5.4", "formatted as an IPv4 address"),
        ("bang!bucket", "punctuation"),
    ];
    let mut failures = Vec::new();
    for (name, why) in cases {
        match client.create_bucket().bucket(*name).send().await {
            Ok(_) => failures.push(format!("{name:?} ({why}): accepted")),
            Err(e) => {
                let (s, c) = (status_of(&e), code_of(&e));
                if s != Some(400) || c.as_deref() != Some("InvalidBucketName") {
                    failures.push(format!(
                        "{name:?} ({why}): got status {s:?} code {c:?}, want 400 InvalidBucketName"
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "bad bucket names:\n{}",
        failures.join("\n")
    );
}

#[tokio::test]
async fn reserved_bucket_name_prefixes_and_suffixes_are_rejected() {
    // AWS naming rules: reserved prefixes `xn--`, `sthree-`, and suffixes `-s3alias`, `--ol-s3`.
    let client = server().client();
    let cases = [
        "xn--bucket",
        "sthree-bucket",
        "bucket-s3alias",
        "bucket--ol-s3",
    ];
    let mut failures = Vec::new();
    for name in cases {
        match client.create_bucket().bucket(name).send().await {
            Ok(_) => failures.push(format!("{name:?}: accepted")),
            Err(e) => {
                let (s, c) = (status_of(&e), code_of(&e));
                if s != Some(400) || c.as_deref() != Some("InvalidBucketName") {
                    failures.push(format!("{name:?}: got status {s:?} code {c:?}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "reserved bucket names:\n{}",
        failures.join("\n")
    );
}

#[tokio::test]
async fn valid_edge_case_bucket_names_are_accepted() {
    let client = server().client();
    // 3 and 63 characters, periods and hyphens inside, leading digit. Unique per run because
    // each test file has its own server and fresh drives.
    let name63 = format!("x{}", "7".repeat(62));
    let cases = [
        "abc".to_string(),
        name63,
        "my.bucket-with.dots".to_string(),
        "9lives".to_string(),
    ];
    for name in &cases {
        ok(
            client.create_bucket().bucket(name).send().await,
            &format!("CreateBucket {name:?}"),
        );
        ok(
            client.head_bucket().bucket(name).send().await,
            &format!("HeadBucket {name:?}"),
        );
        put(&client, name, "obj", b"x").await;
        assert_object(&client, name, "obj", b"x").await;
    }
}

#[tokio::test]
async fn operations_on_missing_bucket_are_no_such_bucket() {
    let client = server().client();
    let bucket = unique_bucket("missing");

    assert_s3_status(
        client.head_bucket().bucket(&bucket).send().await,
        404,
        "HeadBucket",
    );
    assert_s3_error(
        client.get_object().bucket(&bucket).key("k").send().await,
        404,
        "NoSuchBucket",
        "GetObject",
    );
    assert_s3_error(
        client
            .put_object()
            .bucket(&bucket)
            .key("k")
            .body(b"data".to_vec().into())
            .send()
            .await,
        404,
        "NoSuchBucket",
        "PutObject",
    );
    assert_s3_error(
        client.list_objects_v2().bucket(&bucket).send().await,
        404,
        "NoSuchBucket",
        "ListObjectsV2",
    );
    assert_s3_error(
        client.delete_bucket().bucket(&bucket).send().await,
        404,
        "NoSuchBucket",
        "DeleteBucket",
    );
    assert_s3_error(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key("k")
            .send()
            .await,
        404,
        "NoSuchBucket",
        "CreateMultipartUpload",
    );
    // The failed PUT must not have created the bucket.
    let list = ok(client.list_buckets().send().await, "ListBuckets");
    assert!(
        !list
            .buckets()
            .iter()
            .any(|b| b.name() == Some(bucket.as_str())),
        "a failed PutObject created bucket {bucket}"
    );
}

#[tokio::test]
async fn delete_non_empty_bucket_is_bucket_not_empty() {
    let client = server().client();
    let bucket = unique_bucket("notempty");
    create_bucket(&client, &bucket).await;
    put(&client, &bucket, "dir/obj", b"content").await;

    assert_s3_error(
        client.delete_bucket().bucket(&bucket).send().await,
        409,
        "BucketNotEmpty",
        "DeleteBucket with one object",
    );
    // Nothing was lost by the refused delete.
    assert_object(&client, &bucket, "dir/obj", b"content").await;

    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("dir/obj")
            .send()
            .await,
        "DeleteObject",
    );
    ok(
        client.delete_bucket().bucket(&bucket).send().await,
        "DeleteBucket once empty",
    );
    assert_s3_status(
        client.head_bucket().bucket(&bucket).send().await,
        404,
        "HeadBucket after delete",
    );
}

#[tokio::test]
async fn recreated_bucket_is_empty() {
    let client = server().client();
    let bucket = unique_bucket("recreate");
    create_bucket(&client, &bucket).await;
    put(&client, &bucket, "gone", b"old").await;
    ok(
        client
            .delete_object()
            .bucket(&bucket)
            .key("gone")
            .send()
            .await,
        "DeleteObject",
    );
    ok(
        client.delete_bucket().bucket(&bucket).send().await,
        "DeleteBucket",
    );
    create_bucket(&client, &bucket).await;
    let keys = list_all_keys(&client, &bucket, None).await;
    assert!(keys.is_empty(), "recreated bucket lists old keys: {keys:?}");
    assert_s3_error(
        client.get_object().bucket(&bucket).key("gone").send().await,
        404,
        "NoSuchKey",
        "GetObject in recreated bucket",
    );
}

/// ListBuckets pages: `max-buckets`, `continuation-token` and `prefix`, in name order.
#[tokio::test]
async fn list_buckets_pages_by_max_buckets_and_prefix() {
    let client = server().client();
    let prefix = unique_bucket("pages");
    let mut names: Vec<String> = (0..5).map(|i| format!("{prefix}-{i}")).collect();
    for name in &names {
        create_bucket(&client, name).await;
    }
    names.sort();
    let mut listed = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = ok(
            client
                .list_buckets()
                .prefix(&prefix)
                .max_buckets(2)
                .set_continuation_token(token.clone())
                .send()
                .await,
            "ListBuckets page",
        );
        assert!(page.buckets().len() <= 2);
        assert_eq!(page.prefix(), Some(prefix.as_str()));
        listed.extend(
            page.buckets()
                .iter()
                .filter_map(|b| b.name().map(str::to_string)),
        );
        match page.continuation_token() {
            Some(next) => token = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(listed, names);
    assert_s3_error(
        client.list_buckets().max_buckets(0).send().await,
        400,
        "InvalidArgument",
        "max-buckets=0",
    );
}

/// `x-amz-expected-bucket-owner`: a request that names another owner than the bucket's is
/// refused (403), one that names the right owner (as ListBuckets shows it) goes through.
#[tokio::test]
async fn an_unexpected_bucket_owner_is_refused() {
    let client = server().client();
    let bucket = unique_bucket("owner");
    create_bucket(&client, &bucket).await;
    put(&client, &bucket, "k", b"x").await;
    let listed = ok(client.list_buckets().send().await, "ListBuckets");
    let owner = listed
        .owner()
        .and_then(|o| o.id())
        .expect("owner id")
        .to_string();
    ok(
        client
            .get_object()
            .bucket(&bucket)
            .key("k")
            .expected_bucket_owner(&owner)
            .send()
            .await,
        "GET with the right owner",
    );
    assert_s3_error(
        client
            .get_object()
            .bucket(&bucket)
            .key("k")
            .expected_bucket_owner("111122223333")
            .send()
            .await,
        403,
        "AccessDenied",
        "GET with another owner",
    );
    assert_s3_error(
        client
            .copy_object()
            .bucket(&bucket)
            .key("copy")
            .copy_source(format!("{bucket}/k"))
            .expected_source_bucket_owner("111122223333")
            .send()
            .await,
        403,
        "AccessDenied",
        "copy from a source with another owner",
    );
}

/// ACLs work as on S3's buckets by default (Object Ownership `BucketOwnerEnforced`): the
/// owner-only ACLs are taken, the others refused with S3's errors, never silently ignored.
#[tokio::test]
async fn acls_other_than_the_owners_are_refused_as_s3_refuses_them() {
    use aws_sdk_s3::types::{BucketCannedAcl, ObjectCannedAcl};
    let client = server().client();
    let public = unique_bucket("aclpublic");
    assert_s3_error(
        client
            .create_bucket()
            .bucket(&public)
            .acl(BucketCannedAcl::PublicRead)
            .send()
            .await,
        400,
        "InvalidBucketAclWithObjectOwnership",
        "CreateBucket public-read",
    );
    assert_s3_status(
        client.head_bucket().bucket(&public).send().await,
        404,
        "the refused bucket was not made",
    );
    let bucket = unique_bucket("aclprivate");
    ok(
        client
            .create_bucket()
            .bucket(&bucket)
            .acl(BucketCannedAcl::Private)
            .send()
            .await,
        "CreateBucket private",
    );
    for acl in [
        ObjectCannedAcl::Private,
        ObjectCannedAcl::BucketOwnerFullControl,
    ] {
        ok(
            client
                .put_object()
                .bucket(&bucket)
                .key("owned")
                .acl(acl.clone())
                .body(b"x".to_vec().into())
                .send()
                .await,
            &format!("PUT with {acl:?}"),
        );
    }
    assert_s3_error(
        client
            .put_object()
            .bucket(&bucket)
            .key("public")
            .acl(ObjectCannedAcl::PublicRead)
            .body(b"x".to_vec().into())
            .send()
            .await,
        400,
        "AccessControlListNotSupported",
        "PUT public-read",
    );
    assert_s3_error(
        client
            .put_object()
            .bucket(&bucket)
            .key("granted")
            .grant_read("uri=\"http://acs.amazonaws.com/groups/global/AllUsers\"")
            .body(b"x".to_vec().into())
            .send()
            .await,
        400,
        "AccessControlListNotSupported",
        "PUT with a grant",
    );
}

/// A client of `server` that signs for `region`.
fn client_in(server: &TestServer, region: &str) -> aws_sdk_s3::Client {
    let config = server
        .client()
        .config()
        .to_builder()
        .region(aws_sdk_s3::config::Region::new(region.to_string()))
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// A bucket created with `LocationConstraint` `constraint`.
async fn create_in(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    constraint: &str,
) -> Result<(), aws_sdk_s3::error::SdkError<aws_sdk_s3::operation::create_bucket::CreateBucketError>>
{
    use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration};
    let configuration = CreateBucketConfiguration::builder()
        .location_constraint(BucketLocationConstraint::from(constraint))
        .build();
    (client.create_bucket().bucket(bucket))
        .create_bucket_configuration(configuration)
        .send()
        .await
        .map(drop)
}

/// A request signed for another region is refused as S3 refuses it, naming the region to
/// sign for (`<Region>`, which boto3 and minio-go re-sign with).
async fn assert_refused_for_region(server: &TestServer, signed_for: &str, want: &str) {
    let mut signer = Signer::test();
    signer.region = signed_for.to_string();
    let answer = signed_send(&signer, "GET", &server.url("/"), &[], Vec::new()).await;
    assert_eq!(answer.status, 400, "{}", answer.text());
    assert_eq!(
        answer.xml_element("Code").as_deref(),
        Some("AuthorizationHeaderMalformed")
    );
    assert_eq!(answer.xml_element("Region").as_deref(), Some(want));
}

/// In us-east-1 the server answers as S3's global endpoint: a bucket for any region is
/// created (minio-go's MakeBucket with a region sends one), and lives here.
#[tokio::test]
async fn the_default_region_takes_buckets_for_any_region_and_names_itself_to_re_sign() {
    let server = server();
    let client = server.client();
    let bucket = unique_bucket("eu-bucket");
    create_in(&client, &bucket, "eu-central-1").await.unwrap();
    let head = ok(client.head_bucket().bucket(&bucket).send().await, "HEAD");
    assert_eq!(head.bucket_region(), Some("us-east-1"));
    put(&client, &bucket, "k", b"held here").await;
    assert_object(&client, &bucket, "k", b"held here").await;

    assert_s3_error(
        create_in(&client, &unique_bucket("nowhere"), "Not A Region!").await,
        400,
        "InvalidLocationConstraint",
        "a constraint that names no region",
    );
    assert_refused_for_region(server, "eu-central-1", "us-east-1").await;

    // minio-go's MakeBucket with a region signs for it: taken, as S3's global endpoint
    // takes it; the bucket's other requests are answered with the region to re-sign for.
    let elsewhere = client_in(server, "eu-central-1");
    let signed_there = unique_bucket("signed-there");
    create_in(&elsewhere, &signed_there, "eu-central-1")
        .await
        .unwrap();
    assert_s3_error(
        elsewhere
            .put_object()
            .bucket(&signed_there)
            .key("k")
            .body(b"x".to_vec().into())
            .send()
            .await,
        400,
        "AuthorizationHeaderMalformed",
        "a PUT signed for another region",
    );
    put(&client, &signed_there, "k", b"signed here").await;
    assert_s3_error(
        create_in(&elsewhere, &unique_bucket("mismatch"), "eu-west-3").await,
        400,
        "AuthorizationHeaderMalformed",
        "a bucket for one region signed for another",
    );
}

/// `--region`: the server signs and reports its own region, and as a regional endpoint
/// refuses buckets for another; `strata admin` signs for it too (STRATA_REGION).
#[tokio::test]
async fn a_server_in_another_region_signs_and_reports_it() {
    let server = TestServer::start_with(ServerOptions {
        extra_args: vec!["--region".into(), "eu-west-1".into()],
        ..ServerOptions::default()
    });
    let client = client_in(&server, "eu-west-1");
    let bucket = unique_bucket("regional");
    create_in(&client, &bucket, "eu-west-1").await.unwrap();
    let location = ok(
        client.get_bucket_location().bucket(&bucket).send().await,
        "GetBucketLocation",
    );
    assert_eq!(
        location.location_constraint().map(|c| c.as_str()),
        Some("eu-west-1")
    );
    put(&client, &bucket, "k", b"in eu-west-1").await;
    assert_object(&client, &bucket, "k", b"in eu-west-1").await;

    assert_s3_error(
        create_in(&client, &unique_bucket("elsewhere"), "us-west-2").await,
        400,
        "IllegalLocationConstraintException",
        "a bucket for another region at a regional endpoint",
    );
    assert_refused_for_region(&server, "us-east-1", "eu-west-1").await;
    // A regional endpoint takes no bucket signed for another region.
    assert_s3_error(
        create_in(
            &client_in(&server, "us-west-2"),
            &unique_bucket("x"),
            "us-west-2",
        )
        .await,
        400,
        "AuthorizationHeaderMalformed",
        "a bucket signed for its own region at another region's endpoint",
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["admin", "--endpoint", &server.endpoint(), "info", "--json"])
        .env("STRATA_ROOT_USER", ACCESS_KEY)
        .env("STRATA_ROOT_PASSWORD", SECRET_KEY)
        .env("STRATA_REGION", "eu-west-1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "strata admin info: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
