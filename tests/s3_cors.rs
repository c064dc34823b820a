//! CORS as AWS S3 documents it: PutBucketCors / GetBucketCors / DeleteBucketCors (`?cors`),
//! the configuration rules S3 refuses, browsers' unsigned preflight `OPTIONS` requests
//! answered from the bucket's rules (first matching rule wins), and the `Access-Control-*`
//! headers on actual (signed) requests that carry an `Origin`.

mod common;

use aws_sdk_s3::types::{CorsConfiguration, CorsRule};
use aws_sdk_s3::Client;
use common::*;

const APP: &str = "https://app.example.com";
const OTHER: &str = "https://random.example.org";

fn strings(v: &[&str]) -> Option<Vec<String>> {
    (!v.is_empty()).then(|| v.iter().map(|s| s.to_string()).collect())
}

fn rule(
    id: Option<&str>,
    origins: &[&str],
    methods: &[&str],
    headers: &[&str],
    expose: &[&str],
    max_age: Option<i32>,
) -> CorsRule {
    CorsRule::builder()
        .set_id(id.map(str::to_owned))
        .set_allowed_origins(Some(origins.iter().map(|s| s.to_string()).collect()))
        .set_allowed_methods(Some(methods.iter().map(|s| s.to_string()).collect()))
        .set_allowed_headers(strings(headers))
        .set_expose_headers(strings(expose))
        .set_max_age_seconds(max_age)
        .build()
        .expect("CORS rule")
}

/// The two rules most tests use: the app origin with PUT and some headers, then anyone with
/// GET only.
fn app_rules() -> Vec<CorsRule> {
    vec![
        rule(
            Some("app"),
            &[APP],
            &["GET", "PUT", "HEAD"],
            &["content-type", "x-amz-*"],
            &["ETag", "x-amz-request-id"],
            Some(3000),
        ),
        rule(Some("public"), &["*"], &["GET"], &[], &[], Some(60)),
    ]
}

async fn put_cors(client: &Client, bucket: &str, rules: Vec<CorsRule>) {
    ok(
        client
            .put_bucket_cors()
            .bucket(bucket)
            .cors_configuration(
                CorsConfiguration::builder()
                    .set_cors_rules(Some(rules))
                    .build()
                    .expect("CORS configuration"),
            )
            .send()
            .await,
        &format!("PutBucketCors {bucket}"),
    );
}

/// An unsigned browser preflight `OPTIONS /bucket/key`.
async fn preflight(
    bucket: &str,
    key: &str,
    origin: Option<&str>,
    method: Option<&str>,
    request_headers: Option<&str>,
) -> RawResponse {
    let mut headers = Vec::new();
    if let Some(origin) = origin {
        headers.push(("Origin".to_string(), origin.to_string()));
    }
    if let Some(method) = method {
        headers.push((
            "Access-Control-Request-Method".to_string(),
            method.to_string(),
        ));
    }
    if let Some(h) = request_headers {
        headers.push(("Access-Control-Request-Headers".to_string(), h.to_string()));
    }
    raw_send(
        "OPTIONS",
        &server().url(&format!("/{bucket}/{}", url_encode_key(key))),
        &headers,
        vec![],
    )
    .await
}

/// A comma-separated header value as lower-cased items.
fn list(value: Option<String>) -> Vec<String> {
    value
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Asserts a refused preflight: 403 AccessForbidden and no `Access-Control-Allow-*`.
#[track_caller]
fn assert_forbidden(resp: &RawResponse, what: &str) {
    assert_eq!(
        (resp.status, resp.xml_element("Code").as_deref()),
        (403, Some("AccessForbidden")),
        "{what}: {}",
        resp.text()
    );
    for name in [
        "access-control-allow-origin",
        "access-control-allow-methods",
        "access-control-allow-headers",
    ] {
        assert_eq!(
            resp.header(name),
            None,
            "{what}: {name} on a refused preflight"
        );
    }
}

// ---- the configuration ----

#[tokio::test]
async fn cors_configuration_put_get_replace_delete() {
    let (client, bucket) = new_bucket("corsconf").await;
    assert_s3_error(
        client.get_bucket_cors().bucket(&bucket).send().await,
        404,
        "NoSuchCORSConfiguration",
        "GetBucketCors before any PutBucketCors",
    );

    put_cors(&client, &bucket, app_rules()).await;
    let got = ok(
        client.get_bucket_cors().bucket(&bucket).send().await,
        "GetBucketCors",
    );
    assert_eq!(got.cors_rules(), app_rules().as_slice(), "rules round-trip");

    // A PUT replaces the whole configuration.
    let replacement = vec![rule(
        None,
        &["https://*.example.net"],
        &["POST", "DELETE"],
        &["*"],
        &[],
        None,
    )];
    put_cors(&client, &bucket, replacement.clone()).await;
    let got = ok(
        client.get_bucket_cors().bucket(&bucket).send().await,
        "GetBucketCors after replace",
    );
    assert_eq!(got.cors_rules(), replacement.as_slice());

    ok(
        client.delete_bucket_cors().bucket(&bucket).send().await,
        "DeleteBucketCors",
    );
    assert_s3_error(
        client.get_bucket_cors().bucket(&bucket).send().await,
        404,
        "NoSuchCORSConfiguration",
        "GetBucketCors after DeleteBucketCors",
    );
    ok(
        client.delete_bucket_cors().bucket(&bucket).send().await,
        "DeleteBucketCors without a configuration",
    );
}

#[tokio::test]
async fn cors_wire_format_and_status_codes() {
    let (_, bucket) = new_bucket("corswire").await;
    let signer = Signer::test();
    let url = server().url(&format!("/{bucket}?cors"));
    let body = "<CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                <CORSRule><AllowedOrigin>https://app.example.com</AllowedOrigin>\
                <AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT</AllowedMethod>\
                <AllowedHeader>*</AllowedHeader><ExposeHeader>ETag</ExposeHeader>\
                <MaxAgeSeconds>3000</MaxAgeSeconds></CORSRule></CORSConfiguration>";
    let resp = signed_send(&signer, "PUT", &url, &[], body.as_bytes().to_vec()).await;
    assert_eq!(resp.status, 200, "PutBucketCors status: {}", resp.text());
    let resp = signed_send(&signer, "GET", &url, &[], vec![]).await;
    assert_eq!(resp.status, 200, "GetBucketCors: {}", resp.text());
    let xml = resp.text();
    assert!(xml.contains("<CORSConfiguration"), "{xml}");
    assert_eq!(xml_elements(&xml, "AllowedOrigin"), vec![APP], "{xml}");
    assert_eq!(
        xml_elements(&xml, "AllowedMethod"),
        vec!["GET", "PUT"],
        "{xml}"
    );
    assert_eq!(xml_elements(&xml, "AllowedHeader"), vec!["*"], "{xml}");
    assert_eq!(xml_elements(&xml, "ExposeHeader"), vec!["ETag"], "{xml}");
    assert_eq!(xml_elements(&xml, "MaxAgeSeconds"), vec!["3000"], "{xml}");
    let resp = signed_send(&signer, "DELETE", &url, &[], vec![]).await;
    assert_eq!(resp.status, 204, "DeleteBucketCors status: {}", resp.text());
}

#[tokio::test]
async fn invalid_cors_configurations_are_refused() {
    let (client, bucket) = new_bucket("corsbad").await;
    put_cors(&client, &bucket, app_rules()).await;

    let cases = [
        (
            "method PATCH",
            rule(None, &["*"], &["GET", "PATCH"], &[], &[], None),
        ),
        (
            "two wildcards in an origin",
            rule(None, &["https://*.*.example.com"], &["GET"], &[], &[], None),
        ),
    ];
    for (what, bad) in cases {
        assert_s3_error(
            client
                .put_bucket_cors()
                .bucket(&bucket)
                .cors_configuration(
                    CorsConfiguration::builder()
                        .cors_rules(app_rules()[0].clone())
                        .cors_rules(bad)
                        .build()
                        .unwrap(),
                )
                .send()
                .await,
            400,
            "InvalidRequest",
            &format!("PutBucketCors with {what}"),
        );
    }

    let signer = Signer::test();
    let url = server().url(&format!("/{bucket}?cors"));
    for body in [
        "not xml at all",
        "<CORSConfiguration></CORSConfiguration>",
        "<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule>\
         </CORSConfiguration>",
        "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>",
    ] {
        let resp = signed_send(&signer, "PUT", &url, &[], body.as_bytes().to_vec()).await;
        assert_eq!(
            (resp.status, resp.xml_element("Code").as_deref()),
            (400, Some("MalformedXML")),
            "PutBucketCors with body {body:?}: {}",
            resp.text()
        );
    }

    // Nothing refused replaced the configuration.
    let got = ok(
        client.get_bucket_cors().bucket(&bucket).send().await,
        "GetBucketCors after refused PUTs",
    );
    assert_eq!(got.cors_rules(), app_rules().as_slice());
}

#[tokio::test]
async fn cors_of_a_missing_bucket() {
    let client = server().client();
    let missing = unique_bucket("no-such-bucket");
    assert_s3_error(
        client.get_bucket_cors().bucket(&missing).send().await,
        404,
        "NoSuchBucket",
        "GetBucketCors of a missing bucket",
    );
    assert_s3_error(
        client
            .put_bucket_cors()
            .bucket(&missing)
            .cors_configuration(
                CorsConfiguration::builder()
                    .set_cors_rules(Some(app_rules()))
                    .build()
                    .unwrap(),
            )
            .send()
            .await,
        404,
        "NoSuchBucket",
        "PutBucketCors of a missing bucket",
    );
    assert_s3_error(
        client.delete_bucket_cors().bucket(&missing).send().await,
        404,
        "NoSuchBucket",
        "DeleteBucketCors of a missing bucket",
    );
}

#[tokio::test]
async fn a_recreated_bucket_has_no_cors_configuration() {
    let (client, bucket) = new_bucket("corsrecreate").await;
    put_cors(&client, &bucket, app_rules()).await;
    ok(
        client.delete_bucket().bucket(&bucket).send().await,
        "DeleteBucket",
    );
    create_bucket(&client, &bucket).await;
    assert_s3_error(
        client.get_bucket_cors().bucket(&bucket).send().await,
        404,
        "NoSuchCORSConfiguration",
        "GetBucketCors of a re-created bucket",
    );
    let resp = preflight(&bucket, "k", Some(APP), Some("GET"), None).await;
    assert_forbidden(&resp, "preflight to a re-created bucket");
}

#[tokio::test]
async fn cors_configuration_survives_a_restart() {
    let server = TestServer::start();
    let client = server.client();
    let bucket = unique_bucket("corsrestart");
    create_bucket(&client, &bucket).await;
    put_cors(&client, &bucket, app_rules()).await;
    server.restart();
    let client = server.client();
    let got = ok(
        client.get_bucket_cors().bucket(&bucket).send().await,
        "GetBucketCors after restart",
    );
    assert_eq!(got.cors_rules(), app_rules().as_slice());
    let resp = raw_send(
        "OPTIONS",
        &server.url(&format!("/{bucket}/k")),
        &hdrs(&[("origin", APP), ("access-control-request-method", "PUT")]),
        vec![],
    )
    .await;
    assert_eq!(resp.status, 200, "preflight after restart: {}", resp.text());
    assert_eq!(
        resp.header("access-control-allow-origin").as_deref(),
        Some(APP)
    );
}

// ---- preflight ----

#[tokio::test]
async fn preflight_allowed_by_a_rule() {
    let (client, bucket) = new_bucket("preflight").await;
    put_cors(&client, &bucket, app_rules()).await;

    // The object need not exist: a preflight only evaluates the rules.
    let resp = preflight(
        &bucket,
        "uploads/new file.bin",
        Some(APP),
        Some("PUT"),
        Some("Content-Type, X-Amz-Meta-Owner"),
    )
    .await;
    assert_eq!(resp.status, 200, "preflight: {}", resp.text());
    assert_eq!(
        resp.header("access-control-allow-origin").as_deref(),
        Some(APP),
        "Access-Control-Allow-Origin is the request's origin"
    );
    let methods = list(resp.header("access-control-allow-methods"));
    assert!(
        methods.contains(&"put".to_string()),
        "Allow-Methods {methods:?}"
    );
    let headers = list(resp.header("access-control-allow-headers"));
    for h in ["content-type", "x-amz-meta-owner"] {
        assert!(
            headers.contains(&h.to_string()),
            "Allow-Headers {headers:?} lacks {h}"
        );
    }
    assert_eq!(
        resp.header("access-control-max-age").as_deref(),
        Some("3000")
    );
    let expose = list(resp.header("access-control-expose-headers"));
    assert_eq!(expose, vec!["etag", "x-amz-request-id"], "Expose-Headers");
}

#[tokio::test]
async fn preflight_uses_the_first_matching_rule_and_star_origin() {
    let (client, bucket) = new_bucket("preflightorder").await;
    put_cors(&client, &bucket, app_rules()).await;

    // The app origin's GET matches the first rule (its max age), not the catch-all.
    let resp = preflight(&bucket, "k", Some(APP), Some("GET"), None).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        resp.header("access-control-allow-origin").as_deref(),
        Some(APP)
    );
    assert_eq!(
        resp.header("access-control-max-age").as_deref(),
        Some("3000")
    );

    // Any other origin's GET matches the `*` rule: Access-Control-Allow-Origin is `*`.
    let resp = preflight(&bucket, "k", Some(OTHER), Some("GET"), None).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        resp.header("access-control-allow-origin").as_deref(),
        Some("*")
    );
    assert!(list(resp.header("access-control-allow-methods")).contains(&"get".to_string()));
    assert_eq!(resp.header("access-control-max-age").as_deref(), Some("60"));
    assert_eq!(
        resp.header("access-control-expose-headers"),
        None,
        "the `*` rule exposes no headers"
    );
}

#[tokio::test]
async fn preflight_refused_when_no_rule_allows_it() {
    let (client, bucket) = new_bucket("preflightdeny").await;
    put_cors(&client, &bucket, app_rules()).await;

    let cases = [
        ("other origin, PUT", OTHER, "PUT", None),
        ("app origin, DELETE", APP, "DELETE", None),
        (
            "app origin, PUT with authorization",
            APP,
            "PUT",
            Some("authorization"),
        ),
        (
            "app origin, GET with a header no rule allows",
            APP,
            "GET",
            Some("x-custom-header"),
        ),
        (
            "other origin, GET with a header",
            OTHER,
            "GET",
            Some("content-type"),
        ),
    ];
    for (what, origin, method, headers) in cases {
        let resp = preflight(&bucket, "k", Some(origin), Some(method), headers).await;
        assert_forbidden(&resp, what);
    }

    // Origins match exactly, or with the rule's one wildcard.
    let (client, wild) = new_bucket("preflightwild").await;
    put_cors(
        &client,
        &wild,
        vec![rule(
            None,
            &["https://*.example.net"],
            &["GET"],
            &[],
            &[],
            None,
        )],
    )
    .await;
    for origin in ["https://a.example.net", "https://a.b.example.net"] {
        let resp = preflight(&wild, "k", Some(origin), Some("GET"), None).await;
        assert_eq!(resp.status, 200, "{origin}: {}", resp.text());
        assert_eq!(
            resp.header("access-control-allow-origin").as_deref(),
            Some(origin),
            "a wildcard rule answers with the request's origin"
        );
    }
    for origin in [
        "http://a.example.net",
        "https://example.net",
        "https://a.example.org",
    ] {
        let resp = preflight(&wild, "k", Some(origin), Some("GET"), None).await;
        assert_forbidden(
            &resp,
            &format!("origin {origin} against https://*.example.net"),
        );
    }
}

#[tokio::test]
async fn preflight_without_configuration_or_origin() {
    let (client, bucket) = new_bucket("preflightnone").await;
    let resp = preflight(&bucket, "k", Some(APP), Some("GET"), None).await;
    assert_forbidden(&resp, "bucket without CORS");

    put_cors(&client, &bucket, app_rules()).await;
    let resp = preflight(&bucket, "k", None, Some("GET"), None).await;
    assert_eq!(
        (resp.status, resp.xml_element("Code").as_deref()),
        (400, Some("BadRequest")),
        "preflight without Origin: {}",
        resp.text()
    );
    assert_eq!(resp.header("access-control-allow-origin"), None);

    let resp = preflight(&bucket, "k", Some(APP), Some("GET"), None).await;
    assert_eq!(resp.status, 200, "{}", resp.text());

    ok(
        client.delete_bucket_cors().bucket(&bucket).send().await,
        "DeleteBucketCors",
    );
    let resp = preflight(&bucket, "k", Some(APP), Some("GET"), None).await;
    assert_forbidden(&resp, "after DeleteBucketCors");
}

// ---- actual requests ----

/// A signed request to `/bucket/key` with an `Origin` header (or none).
async fn with_origin(
    method: &str,
    bucket: &str,
    key: &str,
    origin: Option<&str>,
    body: &[u8],
) -> RawResponse {
    let headers = match origin {
        Some(o) => hdrs(&[("origin", o)]),
        None => vec![],
    };
    signed_send(
        &Signer::test(),
        method,
        &server().url(&format!("/{bucket}/{key}")),
        &headers,
        body.to_vec(),
    )
    .await
}

#[tokio::test]
async fn actual_requests_with_an_allowed_origin_get_cors_headers() {
    let (client, bucket) = new_bucket("corsactual").await;
    put_cors(&client, &bucket, app_rules()).await;

    let resp = with_origin("PUT", &bucket, "obj", Some(APP), b"browser upload").await;
    assert_eq!(resp.status, 200, "PUT: {}", resp.text());
    assert_eq!(
        resp.header("access-control-allow-origin").as_deref(),
        Some(APP),
        "PUT from an allowed origin"
    );
    assert_eq!(get(&client, &bucket, "obj").await, b"browser upload");

    let resp = with_origin("GET", &bucket, "obj", Some(APP), b"").await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, b"browser upload");
    assert_eq!(
        resp.header("access-control-allow-origin").as_deref(),
        Some(APP),
        "GET from an allowed origin"
    );
    let expose = list(resp.header("access-control-expose-headers"));
    assert!(
        expose.contains(&"etag".to_string()),
        "Expose-Headers {expose:?}"
    );

    let resp = with_origin("HEAD", &bucket, "obj", Some(APP), b"").await;
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.header("access-control-allow-origin").as_deref(),
        Some(APP)
    );

    // Another origin's GET is allowed by the `*` rule.
    let resp = with_origin("GET", &bucket, "obj", Some(OTHER), b"").await;
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.header("access-control-allow-origin").as_deref(),
        Some("*")
    );
}

#[tokio::test]
async fn actual_requests_without_an_allowing_rule_get_no_cors_headers() {
    let (client, bucket) = new_bucket("corsactualdeny").await;
    put(&client, &bucket, "obj", b"data").await;

    // No configuration at all.
    let resp = with_origin("GET", &bucket, "obj", Some(APP), b"").await;
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, b"data", "the request itself is served");
    assert_eq!(
        resp.header("access-control-allow-origin"),
        None,
        "bucket without CORS"
    );

    put_cors(&client, &bucket, app_rules()).await;
    // No Origin: not a CORS request.
    let resp = with_origin("GET", &bucket, "obj", None, b"").await;
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.header("access-control-allow-origin"),
        None,
        "no Origin"
    );
    // An origin allowed to GET but not to PUT or DELETE.
    let resp = with_origin("PUT", &bucket, "obj2", Some(OTHER), b"x").await;
    assert_eq!(
        resp.status,
        200,
        "the PUT itself is served: {}",
        resp.text()
    );
    assert_eq!(
        resp.header("access-control-allow-origin"),
        None,
        "PUT from an origin only allowed GET"
    );
    let resp = with_origin("DELETE", &bucket, "obj2", Some(APP), b"").await;
    assert_eq!(resp.status, 204);
    assert_eq!(
        resp.header("access-control-allow-origin"),
        None,
        "DELETE, which no rule allows"
    );
    assert_eq!(resp.header("access-control-expose-headers"), None);

    // Only the app origin is configured now.
    put_cors(
        &client,
        &bucket,
        vec![rule(None, &[APP], &["GET"], &[], &["ETag"], None)],
    )
    .await;
    let resp = with_origin("GET", &bucket, "obj", Some(OTHER), b"").await;
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.header("access-control-allow-origin"),
        None,
        "origin not allowed"
    );
    assert_eq!(resp.header("access-control-expose-headers"), None);
}

#[tokio::test]
async fn cors_bodies_that_do_not_match_their_digest_are_refused() {
    let (client, bucket) = new_bucket("corsdigest").await;
    put_cors(&client, &bucket, app_rules()).await;
    let body = "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>\
                <AllowedMethod>DELETE</AllowedMethod></CORSRule></CORSConfiguration>";
    let other = b"<CORSConfiguration></CORSConfiguration>";
    let signer = Signer::test();
    let url = server().url(&format!("/{bucket}?cors"));
    let mut wrong = Vec::new();
    for (what, headers) in [
        (
            "Content-MD5",
            hdrs(&[("content-md5", &b64(&md5_bytes(other)))]),
        ),
        (
            "x-amz-checksum-crc32",
            hdrs(&[("x-amz-checksum-crc32", &checksum_b64("CRC32", other))]),
        ),
    ] {
        let resp = signed_send(&signer, "PUT", &url, &headers, body.as_bytes().to_vec()).await;
        let got = (resp.status, resp.xml_element("Code"));
        if got != (400, Some("BadDigest".to_string())) {
            wrong.push(format!("PutBucketCors with a wrong {what}: got {got:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "expected 400 BadDigest:\n{}",
        wrong.join("\n")
    );
    let got = ok(
        client.get_bucket_cors().bucket(&bucket).send().await,
        "GetBucketCors after refused PUTs",
    );
    assert_eq!(got.cors_rules(), app_rules().as_slice());
}
