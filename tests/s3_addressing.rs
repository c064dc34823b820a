//! How requests name buckets and what storage class objects get.
//!
//! Virtual-hosted-style addressing: with `--domain DOMAIN` (or `STRATA_DOMAIN`) the server
//! serves `http://BUCKET.DOMAIN:PORT/key`, the bucket named by the `Host` header, besides
//! path-style `http://HOST:PORT/BUCKET/key`. No DNS is needed: requests go to 127.0.0.1 with
//! the `Host` header a client would send to `BUCKET.DOMAIN` (the AWS SDK through an
//! interceptor that only changes where the signed request is sent; raw requests signed over
//! the `Host` they carry).
//!
//! Storage classes: `x-amz-storage-class: REDUCED_REDUNDANCY` is kept and reported by HEAD,
//! GET and the listings; STANDARD is the default; other classes are `InvalidStorageClass`.

mod common;

use std::sync::{Arc, Mutex};

use aws_sdk_s3::config::interceptors::BeforeTransmitInterceptorContextMut;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::{
    BehaviorVersion, ConfigBag, Credentials, Intercept, Region, RuntimeComponents,
};
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::types::{
    CompletedMultipartUpload, CompletedPart, CorsConfiguration, CorsRule, ObjectStorageClass,
    StorageClass,
};
use aws_sdk_s3::Client;
use common::*;

const DOMAIN: &str = "s3.local.test";

// ---- virtual-hosted style ----

/// Sends every request to `127.0.0.1:port`, keeping the `Host` the SDK addressed (and
/// signed), and records `METHOD HOST/PATH?QUERY` of each.
#[derive(Debug)]
struct ToLoopback {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Intercept for ToLoopback {
    fn name(&self) -> &'static str {
        "ToLoopback"
    }

    fn modify_before_transmit(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let request = context.request_mut();
        let uri: http::Uri = request.uri().parse()?;
        let authority = uri
            .authority()
            .ok_or("request URI has no host")?
            .to_string();
        let path = uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| "/".into());
        self.seen
            .lock()
            .unwrap()
            .push(format!("{} {authority}{path}", request.method()));
        request.headers_mut().insert("host", authority);
        request.set_uri(format!("http://127.0.0.1:{}{path}", self.port))?;
        Ok(())
    }
}

/// An SDK client that addresses buckets virtual-hosted style under `http://DOMAIN:port`,
/// its requests sent to 127.0.0.1, and the list of requests it sent.
fn vhost_client(port: u16) -> (Client, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let config = vhost_config(port)
        .interceptor(ToLoopback {
            port,
            seen: seen.clone(),
        })
        .build();
    (Client::from_conf(config), seen)
}

/// Virtual-hosted-style client configuration (for presigning: nothing is sent).
fn vhost_config(port: u16) -> aws_sdk_s3::config::Builder {
    aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .region(Region::new(REGION))
        .endpoint_url(format!("http://{DOMAIN}:{port}"))
        .force_path_style(false)
        .credentials_provider(Credentials::new(
            ACCESS_KEY,
            SECRET_KEY,
            None,
            None,
            "strata-tests",
        ))
        .retry_config(RetryConfig::standard().with_max_attempts(1))
}

fn port_of(server: &TestServer) -> u16 {
    server
        .addr()
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .expect("server port")
}

fn domain_server() -> TestServer {
    TestServer::start_with(ServerOptions {
        extra_args: vec!["--domain".into(), DOMAIN.into()],
        ..Default::default()
    })
}

/// A signed request sent to the server's address with `Host: host`.
async fn send_to_host(
    server: &TestServer,
    host: &str,
    method: &str,
    path_and_query: &str,
    extra: &[(&str, &str)],
    body: &[u8],
) -> RawResponse {
    let mut headers = hdrs(&[("host", host)]);
    headers.extend(hdrs(extra));
    signed_send(
        &Signer::test(),
        method,
        &server.url(path_and_query),
        &headers,
        body.to_vec(),
    )
    .await
}

#[tokio::test]
async fn sdk_virtual_hosted_style_and_path_style_on_one_server() {
    let server = domain_server();
    let port = port_of(&server);
    let (vhost, seen) = vhost_client(port);
    let path_style = server.client();
    let bucket = unique_bucket("vhost-sdk");
    let bucket_host = format!("{bucket}.{DOMAIN}:{port}");

    create_bucket(&vhost, &bucket).await;
    let key = "dir/a file+name.txt";
    let data = payload(300 * KIB, 7);
    let etag = put(&vhost, &bucket, key, &data).await;
    assert_eq!(etag, quoted_md5(&data));
    assert_object(&vhost, &bucket, key, &data).await;
    put(&vhost, &bucket, "dir/sub/deeper", b"deep").await;
    put(&vhost, &bucket, "top", b"top").await;

    {
        let seen = seen.lock().unwrap();
        let create = seen.first().expect("requests were sent");
        assert_eq!(
            create,
            &format!("PUT {bucket_host}/"),
            "CreateBucket went to the bucket's host"
        );
        assert!(
            seen.iter()
                .any(|r| r.starts_with(&format!("PUT {bucket_host}/dir/a%20file%2Bname.txt"))),
            "PutObject did not address {bucket_host}: {seen:?}"
        );
        assert!(
            seen.iter().all(|r| !r.contains(&format!("/{bucket}/"))),
            "a request used path style: {seen:?}"
        );
    }

    let listed = ok(
        vhost
            .list_objects_v2()
            .bucket(&bucket)
            .prefix("dir/")
            .delimiter("/")
            .send()
            .await,
        "ListObjectsV2 (virtual-hosted)",
    );
    assert_eq!(listed.name(), Some(bucket.as_str()));
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, vec![key]);
    let prefixes: Vec<&str> = listed
        .common_prefixes()
        .iter()
        .filter_map(|p| p.prefix())
        .collect();
    assert_eq!(prefixes, vec!["dir/sub/"]);
    assert_eq!(
        list_all_keys(&vhost, &bucket, None).await,
        vec![key, "dir/sub/deeper", "top"]
    );

    // Path style on the same server sees the same bucket and objects, and the other way round.
    assert_object(&path_style, &bucket, key, &data).await;
    put(
        &path_style,
        &bucket,
        "from-path-style",
        b"written path-style",
    )
    .await;
    assert_eq!(
        get(&vhost, &bucket, "from-path-style").await,
        b"written path-style"
    );
    let names: Vec<String> = ok(vhost.list_buckets().send().await, "ListBuckets")
        .buckets()
        .iter()
        .filter_map(|b| b.name().map(str::to_owned))
        .collect();
    assert!(
        names.contains(&bucket),
        "ListBuckets on the bare domain: {names:?}"
    );

    // A presigned virtual-hosted URL works too.
    let presigner = Client::from_conf(vhost_config(port).build());
    let presigned = presigner
        .get_object()
        .bucket(&bucket)
        .key("top")
        .presigned(PresigningConfig::expires_in(std::time::Duration::from_secs(300)).unwrap())
        .await
        .expect("presign");
    let url: http::Uri = presigned.uri().parse().unwrap();
    assert_eq!(
        url.authority().map(|a| a.as_str()),
        Some(bucket_host.as_str())
    );
    let resp = raw_send(
        "GET",
        &server.url(url.path_and_query().unwrap().as_str()),
        &hdrs(&[("host", &bucket_host)]),
        vec![],
    )
    .await;
    assert_eq!(
        resp.status,
        200,
        "presigned virtual-hosted GET: {}",
        resp.text()
    );
    assert_eq!(resp.body, b"top");

    // A multipart upload virtual-hosted style.
    let parts = [payload(5 * MIB, 21), payload(100 * KIB, 22)];
    let etag = multipart_put(&vhost, &bucket, "multi", &[&parts[0], &parts[1]]).await;
    assert_eq!(etag, multipart_etag(&[&parts[0], &parts[1]]));
    assert_object(&path_style, &bucket, "multi", &parts.concat()).await;

    // Delete objects (one by one and in a batch) and the bucket virtual-hosted style.
    for k in [key, "dir/sub/deeper"] {
        ok(
            vhost.delete_object().bucket(&bucket).key(k).send().await,
            "DeleteObject (virtual-hosted)",
        );
    }
    let batch = aws_sdk_s3::types::Delete::builder()
        .set_objects(Some(
            ["top", "from-path-style", "multi"]
                .iter()
                .map(|k| {
                    aws_sdk_s3::types::ObjectIdentifier::builder()
                        .key(*k)
                        .build()
                        .unwrap()
                })
                .collect(),
        ))
        .build()
        .unwrap();
    let deleted = ok(
        vhost
            .delete_objects()
            .bucket(&bucket)
            .delete(batch)
            .send()
            .await,
        "DeleteObjects (virtual-hosted)",
    );
    assert_eq!(deleted.deleted().len(), 3, "{:?}", deleted.errors());
    assert_eq!(
        list_all_keys(&path_style, &bucket, None).await,
        Vec::<String>::new()
    );
    ok(
        vhost.delete_bucket().bucket(&bucket).send().await,
        "DeleteBucket (virtual-hosted)",
    );
    assert_s3_status(
        path_style.head_bucket().bucket(&bucket).send().await,
        404,
        "HeadBucket after a virtual-hosted DeleteBucket",
    );
}

#[tokio::test]
async fn raw_virtual_hosted_requests_name_the_bucket_in_the_host() {
    let server = domain_server();
    let port = port_of(&server);
    // A dotted bucket name works virtual-hosted style over HTTP too.
    for bucket in [
        unique_bucket("vhost-raw"),
        format!("dotted.{}", unique_bucket("vh")),
    ] {
        let host = format!("{bucket}.{DOMAIN}:{port}");

        let resp = send_to_host(&server, &host, "PUT", "/", &[], b"").await;
        assert_eq!(resp.status, 200, "CreateBucket via {host}: {}", resp.text());
        let resp = send_to_host(&server, &host, "HEAD", "/", &[], b"").await;
        assert_eq!(resp.status, 200, "HeadBucket via {host}");

        let resp = send_to_host(&server, &host, "PUT", "/notes/today.txt", &[], b"hello").await;
        assert_eq!(resp.status, 200, "PutObject via {host}: {}", resp.text());
        assert_eq!(resp.header("etag"), Some(quoted_md5(b"hello")));

        let resp = send_to_host(&server, &host, "GET", "/notes/today.txt", &[], b"").await;
        assert_eq!(resp.status, 200, "GetObject via {host}: {}", resp.text());
        assert_eq!(resp.body, b"hello");

        let resp = send_to_host(
            &server,
            &host,
            "GET",
            "/?list-type=2&prefix=notes/",
            &[],
            b"",
        )
        .await;
        assert_eq!(
            resp.status,
            200,
            "ListObjectsV2 via {host}: {}",
            resp.text()
        );
        assert_eq!(resp.xml_element("Name").as_deref(), Some(bucket.as_str()));
        assert_eq!(xml_elements(&resp.text(), "Key"), vec!["notes/today.txt"]);

        // The same object path-style, by address and by the bare domain.
        let addr = server.addr();
        for path_host in [addr.as_str(), &format!("{DOMAIN}:{port}")] {
            let resp = send_to_host(
                &server,
                path_host,
                "GET",
                &format!("/{bucket}/notes/today.txt"),
                &[],
                b"",
            )
            .await;
            assert_eq!(
                resp.status,
                200,
                "path-style GET with Host {path_host}: {}",
                resp.text()
            );
            assert_eq!(resp.body, b"hello");
        }

        // Subresources address the Host's bucket too.
        let tagging = "<Tagging><TagSet><Tag><Key>via</Key><Value>vhost</Value></Tag>\
                       </TagSet></Tagging>";
        let resp = send_to_host(
            &server,
            &host,
            "PUT",
            "/notes/today.txt?tagging",
            &[],
            tagging.as_bytes(),
        )
        .await;
        assert_eq!(
            resp.status,
            200,
            "PutObjectTagging via {host}: {}",
            resp.text()
        );
        let tags = ok(
            server
                .client()
                .get_object_tagging()
                .bucket(&bucket)
                .key("notes/today.txt")
                .send()
                .await,
            "GetObjectTagging path-style",
        );
        assert_eq!(tags.tag_set().len(), 1);
        assert_eq!(tags.tag_set()[0].key(), "via");

        let resp = send_to_host(&server, &host, "DELETE", "/notes/today.txt", &[], b"").await;
        assert_eq!(resp.status, 204, "DeleteObject via {host}");
        let resp = send_to_host(&server, &host, "GET", "/notes/today.txt", &[], b"").await;
        assert_eq!(
            (resp.status, resp.xml_element("Code").as_deref()),
            (404, Some("NoSuchKey")),
            "GET after delete via {host}: {}",
            resp.text()
        );
    }
}

#[tokio::test]
async fn cors_preflight_virtual_hosted_style() {
    let server = domain_server();
    let port = port_of(&server);
    let client = server.client();
    let bucket = unique_bucket("vhost-cors");
    create_bucket(&client, &bucket).await;
    ok(
        client
            .put_bucket_cors()
            .bucket(&bucket)
            .cors_configuration(
                CorsConfiguration::builder()
                    .cors_rules(
                        CorsRule::builder()
                            .allowed_origins("https://app.example.com")
                            .allowed_methods("GET")
                            .build()
                            .unwrap(),
                    )
                    .build()
                    .unwrap(),
            )
            .send()
            .await,
        "PutBucketCors",
    );
    let resp = raw_send(
        "OPTIONS",
        &server.url("/some/key"),
        &hdrs(&[
            ("host", &format!("{bucket}.{DOMAIN}:{port}")),
            ("origin", "https://app.example.com"),
            ("access-control-request-method", "GET"),
        ]),
        vec![],
    )
    .await;
    assert_eq!(
        resp.status,
        200,
        "virtual-hosted preflight: {}",
        resp.text()
    );
    assert_eq!(
        resp.header("access-control-allow-origin").as_deref(),
        Some("https://app.example.com")
    );

    // The actual GET, virtual-hosted, gets the CORS headers of the Host's bucket.
    put(&client, &bucket, "some/key", b"cors").await;
    let host = format!("{bucket}.{DOMAIN}:{port}");
    let resp = send_to_host(
        &server,
        &host,
        "GET",
        "/some/key",
        &[("origin", "https://app.example.com")],
        b"",
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.body, b"cors");
    assert_eq!(
        resp.header("access-control-allow-origin").as_deref(),
        Some("https://app.example.com"),
        "virtual-hosted GET with an allowed Origin"
    );
    let resp = send_to_host(
        &server,
        &host,
        "GET",
        "/some/key",
        &[("origin", "https://other.example.com")],
        b"",
    )
    .await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("access-control-allow-origin"), None);
}

#[tokio::test]
async fn strata_domain_environment_variable_enables_virtual_hosts() {
    let domain = "objects.env.test";
    let server = TestServer::start_with(ServerOptions {
        env: vec![("STRATA_DOMAIN".into(), domain.into())],
        ..Default::default()
    });
    let port = port_of(&server);
    let bucket = unique_bucket("vhost-env");
    let host = format!("{bucket}.{domain}:{port}");
    let resp = send_to_host(&server, &host, "PUT", "/", &[], b"").await;
    assert_eq!(resp.status, 200, "CreateBucket via {host}: {}", resp.text());
    let resp = send_to_host(&server, &host, "PUT", "/k", &[], b"env").await;
    assert_eq!(resp.status, 200, "PutObject via {host}: {}", resp.text());
    assert_eq!(get(&server.client(), &bucket, "k").await, b"env");
}

#[tokio::test]
async fn without_a_domain_the_host_does_not_name_a_bucket() {
    // The shared server has no --domain: `Host: BUCKET.s3.local.test` is just a host name,
    // and `/object-key` names a bucket `object-key`.
    let (client, bucket) = new_bucket("no-vhost").await;
    put(&client, &bucket, "object-key", b"data").await;
    let addr = server().addr();
    let port = addr.rsplit_once(':').unwrap().1;
    let resp = signed_send(
        &Signer::test(),
        "GET",
        &server().url("/object-key"),
        &hdrs(&[("host", &format!("{bucket}.{DOMAIN}:{port}"))]),
        vec![],
    )
    .await;
    assert_eq!(
        (resp.status, resp.xml_element("Code").as_deref()),
        (404, Some("NoSuchBucket")),
        "GET /object-key with a bucket host on a server without --domain: {}",
        resp.text()
    );
}

// ---- storage class ----

async fn head_class(client: &Client, bucket: &str, key: &str) -> Option<StorageClass> {
    ok(
        client.head_object().bucket(bucket).key(key).send().await,
        "HeadObject",
    )
    .storage_class()
    .cloned()
}

async fn listed_classes(
    client: &Client,
    bucket: &str,
) -> Vec<(String, Option<ObjectStorageClass>)> {
    let out = ok(
        client.list_objects_v2().bucket(bucket).send().await,
        "ListObjectsV2",
    );
    out.contents()
        .iter()
        .map(|o| {
            (
                o.key().unwrap_or_default().to_string(),
                o.storage_class().cloned(),
            )
        })
        .collect()
}

/// `x-amz-storage-class` of a raw signed HEAD and GET.
async fn raw_class_headers(bucket: &str, key: &str) -> (Option<String>, Option<String>) {
    let url = server().url(&format!("/{bucket}/{key}"));
    let head = signed_send(&Signer::test(), "HEAD", &url, &[], vec![]).await;
    assert_eq!(head.status, 200, "HEAD {bucket}/{key}");
    let get = signed_send(&Signer::test(), "GET", &url, &[], vec![]).await;
    assert_eq!(get.status, 200, "GET {bucket}/{key}");
    (
        head.header("x-amz-storage-class"),
        get.header("x-amz-storage-class"),
    )
}

#[tokio::test]
async fn reduced_redundancy_is_kept_and_reported() {
    let (client, bucket) = new_bucket("rrs").await;
    let data = payload(2 * MIB + 11, 3);
    ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("rrs")
            .storage_class(StorageClass::ReducedRedundancy)
            .body(data.clone().into())
            .send()
            .await,
        "PutObject REDUCED_REDUNDANCY",
    );
    assert_eq!(
        head_class(&client, &bucket, "rrs").await,
        Some(StorageClass::ReducedRedundancy),
        "HEAD x-amz-storage-class"
    );
    let got = ok(
        client.get_object().bucket(&bucket).key("rrs").send().await,
        "GetObject",
    );
    assert_eq!(got.storage_class(), Some(&StorageClass::ReducedRedundancy));
    assert_eq!(
        raw_class_headers(&bucket, "rrs").await,
        (
            Some("REDUCED_REDUNDANCY".into()),
            Some("REDUCED_REDUNDANCY".into())
        )
    );
    assert_object(&client, &bucket, "rrs", &data).await;

    put(&client, &bucket, "standard", b"s").await;
    assert_eq!(
        listed_classes(&client, &bucket).await,
        vec![
            (
                "rrs".to_string(),
                Some(ObjectStorageClass::ReducedRedundancy)
            ),
            ("standard".to_string(), Some(ObjectStorageClass::Standard)),
        ],
        "ListObjectsV2 StorageClass"
    );
    let v1 = ok(
        client.list_objects().bucket(&bucket).send().await,
        "ListObjects (v1)",
    );
    let v1: Vec<_> = v1
        .contents()
        .iter()
        .map(|o| o.storage_class().cloned())
        .collect();
    assert_eq!(
        v1,
        vec![
            Some(ObjectStorageClass::ReducedRedundancy),
            Some(ObjectStorageClass::Standard)
        ],
        "ListObjects (v1) StorageClass"
    );

    // Overwriting without a class makes a STANDARD object.
    put(&client, &bucket, "rrs", b"now standard").await;
    assert_eq!(head_class(&client, &bucket, "rrs").await, None);
    assert_eq!(
        listed_classes(&client, &bucket).await[0],
        ("rrs".to_string(), Some(ObjectStorageClass::Standard))
    );
}

#[tokio::test]
async fn standard_is_the_default_and_not_reported_on_head() {
    let (client, bucket) = new_bucket("standard").await;
    put(&client, &bucket, "implicit", b"x").await;
    ok(
        client
            .put_object()
            .bucket(&bucket)
            .key("explicit")
            .storage_class(StorageClass::Standard)
            .body(b"y".to_vec().into())
            .send()
            .await,
        "PutObject STANDARD",
    );
    for key in ["implicit", "explicit"] {
        assert_eq!(
            raw_class_headers(&bucket, key).await,
            (None, None),
            "{key}: STANDARD objects carry no x-amz-storage-class"
        );
    }
    assert_eq!(
        listed_classes(&client, &bucket).await,
        vec![
            ("explicit".to_string(), Some(ObjectStorageClass::Standard)),
            ("implicit".to_string(), Some(ObjectStorageClass::Standard)),
        ]
    );
}

#[tokio::test]
async fn unknown_storage_classes_are_refused() {
    let (client, bucket) = new_bucket("badclass").await;
    for class in ["GLACIER_XYZ", "GLACIER"] {
        let key = format!("obj-{class}");
        assert_s3_error(
            client
                .put_object()
                .bucket(&bucket)
                .key(&key)
                .storage_class(StorageClass::from(class))
                .body(b"x".to_vec().into())
                .send()
                .await,
            400,
            "InvalidStorageClass",
            &format!("PutObject with storage class {class}"),
        );
        assert_s3_status(
            client.head_object().bucket(&bucket).key(&key).send().await,
            404,
            &format!("object after a refused {class} PUT"),
        );
        assert_s3_error(
            client
                .create_multipart_upload()
                .bucket(&bucket)
                .key(&key)
                .storage_class(StorageClass::from(class))
                .send()
                .await,
            400,
            "InvalidStorageClass",
            &format!("CreateMultipartUpload with storage class {class}"),
        );
    }
    let uploads = ok(
        client.list_multipart_uploads().bucket(&bucket).send().await,
        "ListMultipartUploads",
    );
    assert!(uploads.uploads().is_empty(), "{:?}", uploads.uploads());
}

#[tokio::test]
async fn multipart_storage_class_from_create_to_the_object() {
    let (client, bucket) = new_bucket("mpuclass").await;
    let key = "big";
    let create = ok(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .storage_class(StorageClass::ReducedRedundancy)
            .send()
            .await,
        "CreateMultipartUpload REDUCED_REDUNDANCY",
    );
    let id = create.upload_id().unwrap().to_string();
    let plain = ok(
        client
            .create_multipart_upload()
            .bucket(&bucket)
            .key("plain")
            .send()
            .await,
        "CreateMultipartUpload",
    );
    let plain_id = plain.upload_id().unwrap().to_string();

    let uploads = ok(
        client.list_multipart_uploads().bucket(&bucket).send().await,
        "ListMultipartUploads",
    );
    let classes: Vec<_> = uploads
        .uploads()
        .iter()
        .map(|u| {
            (
                u.key().unwrap_or_default().to_string(),
                u.storage_class().cloned(),
            )
        })
        .collect();
    assert_eq!(
        classes,
        vec![
            (key.to_string(), Some(StorageClass::ReducedRedundancy)),
            ("plain".to_string(), Some(StorageClass::Standard)),
        ],
        "ListMultipartUploads StorageClass"
    );

    let part1 = payload(5 * MIB, 11);
    let part2 = payload(3 * KIB, 12);
    let e1 = upload_part(&client, &bucket, key, &id, 1, &part1).await;
    let e2 = upload_part(&client, &bucket, key, &id, 2, &part2).await;
    let parts = ok(
        client
            .list_parts()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .send()
            .await,
        "ListParts",
    );
    assert_eq!(
        parts.storage_class(),
        Some(&StorageClass::ReducedRedundancy),
        "ListParts StorageClass"
    );
    ok(
        client
            .complete_multipart_upload()
            .bucket(&bucket)
            .key(key)
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .parts(CompletedPart::builder().part_number(1).e_tag(e1).build())
                    .parts(CompletedPart::builder().part_number(2).e_tag(e2).build())
                    .build(),
            )
            .send()
            .await,
        "CompleteMultipartUpload",
    );
    assert_eq!(
        head_class(&client, &bucket, key).await,
        Some(StorageClass::ReducedRedundancy),
        "HEAD of the completed object"
    );
    assert_eq!(
        listed_classes(&client, &bucket).await,
        vec![(key.to_string(), Some(ObjectStorageClass::ReducedRedundancy))],
        "ListObjectsV2 of the completed object"
    );
    let mut whole = part1;
    whole.extend_from_slice(&part2);
    assert_object(&client, &bucket, key, &whole).await;
    ok(
        client
            .abort_multipart_upload()
            .bucket(&bucket)
            .key("plain")
            .upload_id(&plain_id)
            .send()
            .await,
        "AbortMultipartUpload",
    );
}
