//! POST Object: browser form uploads authorized by a signed POST policy, sent as real
//! multipart/form-data requests to the shared server. Policies and signatures are built here
//! the way AWS documents them (HMAC-SHA256 of the base64 policy with the SigV4 signing key).

mod common;

use base64::Engine as _;
use common::*;
use hmac::{Hmac, Mac};
use reqwest::multipart::{Form, Part};
use serde_json::{json, Value};
use sha2::Sha256;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Duration, OffsetDateTime};

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// A policy for `conditions` (plus the three signing fields, as SDKs add them) expiring at
/// `expiration`, and the signed form fields that carry it.
fn signed_fields(
    conditions: Vec<Value>,
    expiration: OffsetDateTime,
    secret: &str,
) -> Vec<(String, String)> {
    let now = OffsetDateTime::now_utc();
    let date = now
        .format(format_description!("[year][month][day]"))
        .unwrap();
    let amz_date = now
        .format(format_description!(
            "[year][month][day]T[hour][minute][second]Z"
        ))
        .unwrap();
    let credential = format!("{ACCESS_KEY}/{date}/{REGION}/s3/aws4_request");
    let mut conditions = conditions;
    conditions.extend([
        json!({"x-amz-algorithm": "AWS4-HMAC-SHA256"}),
        json!({"x-amz-credential": credential}),
        json!({"x-amz-date": amz_date}),
    ]);
    let policy = json!({
        "expiration": expiration.format(&Rfc3339).unwrap(),
        "conditions": conditions,
    });
    let policy = base64::engine::general_purpose::STANDARD.encode(policy.to_string());
    let mut key = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    for part in [REGION, "s3", "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let signature = hex::encode(hmac(&key, policy.as_bytes()));
    [
        ("x-amz-algorithm", "AWS4-HMAC-SHA256".to_string()),
        ("x-amz-credential", credential),
        ("x-amz-date", amz_date),
        ("policy", policy),
        ("x-amz-signature", signature),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn in_an_hour() -> OffsetDateTime {
    OffsetDateTime::now_utc() + Duration::hours(1)
}

/// One upload form: fields in order, then the file, then fields after it.
struct Upload {
    fields: Vec<(String, String)>,
    file: Option<(String, Vec<u8>)>,
    after_file: Vec<(String, String)>,
}

impl Upload {
    /// A form whose policy allows the bucket and exactly `fields` with their values, signed
    /// with the server's secret.
    fn allowing(bucket: &str, fields: &[(&str, &str)], data: &[u8]) -> Upload {
        let mut conditions = vec![json!({ "bucket": bucket })];
        conditions.extend(
            fields
                .iter()
                .map(|(k, v)| json!(["eq", format!("${k}"), v])),
        );
        Upload::with_policy(fields, conditions, in_an_hour(), data)
    }

    fn with_policy(
        fields: &[(&str, &str)],
        conditions: Vec<Value>,
        expiration: OffsetDateTime,
        data: &[u8],
    ) -> Upload {
        let mut all: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        all.extend(signed_fields(conditions, expiration, SECRET_KEY));
        Upload {
            fields: all,
            file: Some(("upload.bin".to_string(), data.to_vec())),
            after_file: Vec::new(),
        }
    }

    fn set(&mut self, name: &str, value: &str) {
        match self.fields.iter_mut().find(|(k, _)| k == name) {
            Some((_, v)) => *v = value.to_string(),
            None => self.fields.push((name.to_string(), value.to_string())),
        }
    }

    async fn post(self, bucket: &str) -> RawResponse {
        let mut form = Form::new();
        for (name, value) in self.fields {
            form = form.text(name, value);
        }
        if let Some((file_name, data)) = self.file {
            let part = Part::bytes(data)
                .file_name(file_name)
                .mime_str("application/octet-stream")
                .unwrap();
            form = form.part("file", part);
        }
        for (name, value) in self.after_file {
            form = form.text(name, value);
        }
        // Redirects are answered, not followed: the test checks where they point.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let response = http
            .post(server().url(&format!("/{bucket}")))
            .multipart(form)
            .send()
            .await
            .expect("POST reached the server");
        RawResponse {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response.bytes().await.unwrap().to_vec(),
        }
    }
}

/// Text of an XML element with the five XML escapes undone.
fn element(response: &RawResponse, tag: &str) -> Option<String> {
    response.xml_element(tag).map(|text| {
        text.replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    })
}

#[track_caller]
fn assert_error(response: &RawResponse, status: u16, code: &str, what: &str) {
    assert_eq!(
        (response.status, response.xml_element("Code").as_deref()),
        (status, Some(code)),
        "{what}: {}",
        response.text()
    );
}

async fn assert_absent(client: &aws_sdk_s3::Client, bucket: &str, key: &str) {
    assert_s3_status(
        client.head_object().bucket(bucket).key(key).send().await,
        404,
        &format!("{key} must not be stored"),
    );
}

#[tokio::test]
async fn default_answer_is_204_and_the_object_is_stored() {
    let (client, bucket) = new_bucket("post-204").await;
    let data = payload(300 * KIB + 5, 1);
    let response = Upload::allowing(&bucket, &[("key", "plain.bin")], &data)
        .post(&bucket)
        .await;
    assert_eq!(response.status, 204, "{}", response.text());
    assert!(response.body.is_empty());
    assert_eq!(
        response.header("etag").as_deref(),
        Some(quoted_md5(&data).as_str())
    );
    let location = response.header("location").unwrap();
    assert!(
        location.ends_with(&format!("/{bucket}/plain.bin")),
        "{location}"
    );
    assert_object(&client, &bucket, "plain.bin", &data).await;
}

#[tokio::test]
async fn status_201_answers_with_the_post_response_document() {
    let (client, bucket) = new_bucket("post-201").await;
    let data = b"created".to_vec();
    let fields = [("key", "docs/a b.txt"), ("success_action_status", "201")];
    let response = Upload::allowing(&bucket, &fields, &data)
        .post(&bucket)
        .await;
    assert_eq!(response.status, 201, "{}", response.text());
    assert_eq!(
        response.header("content-type").as_deref(),
        Some("application/xml")
    );
    assert_eq!(element(&response, "Bucket"), Some(bucket.clone()));
    assert_eq!(element(&response, "Key").as_deref(), Some("docs/a b.txt"));
    assert_eq!(element(&response, "ETag"), Some(quoted_md5(&data)));
    let location = element(&response, "Location").unwrap();
    assert!(
        location.ends_with(&format!("/{bucket}/docs/a%20b.txt")),
        "{location}"
    );
    assert_object(&client, &bucket, "docs/a b.txt", &data).await;

    // 200 is an empty answer; an unknown status falls back to 204.
    for (asked, got) in [("200", 200), ("404", 204)] {
        let fields = [("key", "status.txt"), ("success_action_status", asked)];
        let response = Upload::allowing(&bucket, &fields, b"x").post(&bucket).await;
        assert_eq!(response.status, got, "status {asked}: {}", response.text());
        assert!(response.body.is_empty());
    }
}

#[tokio::test]
async fn redirect_is_a_303_with_bucket_key_and_etag() {
    let (client, bucket) = new_bucket("post-303").await;
    let data = b"redirected".to_vec();
    let target = "http://app.example/done?from=form";
    let fields = [
        ("key", "r/1.txt"),
        ("success_action_redirect", target),
        ("success_action_status", "201"),
    ];
    let response = Upload::allowing(&bucket, &fields, &data)
        .post(&bucket)
        .await;
    assert_eq!(response.status, 303, "{}", response.text());
    let etag = md5_hex(&data);
    assert_eq!(
        response.header("location"),
        Some(format!(
            "{target}&bucket={bucket}&key=r%2F1.txt&etag=%22{etag}%22"
        ))
    );
    assert_object(&client, &bucket, "r/1.txt", &data).await;

    // The older `redirect` field works the same way.
    let fields = [("key", "r/2.txt"), ("redirect", "https://app.example/ok")];
    let response = Upload::allowing(&bucket, &fields, &data)
        .post(&bucket)
        .await;
    assert_eq!(response.status, 303, "{}", response.text());
    assert!(response
        .header("location")
        .unwrap()
        .starts_with("https://app.example/ok?bucket="));
}

#[tokio::test]
async fn key_prefix_with_filename_and_stored_headers() {
    let (client, bucket) = new_bucket("post-meta").await;
    let data = b"<html>hello</html>".to_vec();
    let conditions = vec![
        json!({ "bucket": bucket }),
        json!(["starts-with", "$key", "user/alice/"]),
        json!(["starts-with", "$Content-Type", "text/"]),
        json!({"x-amz-meta-owner": "alice"}),
        json!(["starts-with", "$Cache-Control", ""]),
        json!(["starts-with", "$Content-Disposition", "inline"]),
        json!([
            "eq",
            "$tagging",
            "<Tagging><TagSet><Tag><Key>team</Key><Value>web</Value></Tag></TagSet></Tagging>"
        ]),
    ];
    let fields = [
        ("key", "user/alice/${filename}"),
        ("Content-Type", "text/html"),
        ("X-Amz-Meta-Owner", "alice"),
        ("Cache-Control", "max-age=60"),
        ("Content-Disposition", "inline; filename=\"page.html\""),
        (
            "tagging",
            "<Tagging><TagSet><Tag><Key>team</Key><Value>web</Value></Tag></TagSet></Tagging>",
        ),
        ("x-ignore-submit", "Upload"),
    ];
    let mut upload = Upload::with_policy(&fields, conditions, in_an_hour(), &data);
    upload.file = Some(("C:\\Users\\alice\\page.html".to_string(), data.clone()));
    let response = upload.post(&bucket).await;
    assert_eq!(response.status, 204, "{}", response.text());

    let got = ok(
        client
            .get_object()
            .bucket(&bucket)
            .key("user/alice/page.html")
            .send()
            .await,
        "GET the posted object",
    );
    assert_eq!(got.content_type(), Some("text/html"));
    assert_eq!(got.cache_control(), Some("max-age=60"));
    assert_eq!(
        got.content_disposition(),
        Some("inline; filename=\"page.html\"")
    );
    assert_eq!(
        got.metadata()
            .and_then(|m| m.get("owner"))
            .map(String::as_str),
        Some("alice")
    );
    assert_eq!(got.tag_count(), Some(1));
    let body = got.body.collect().await.unwrap().into_bytes();
    assert_same_bytes(&body, &data, "posted object");
}

#[tokio::test]
async fn content_length_range_is_enforced_and_nothing_is_stored() {
    let (client, bucket) = new_bucket("post-range").await;
    let conditions = |min: u64, max: u64| {
        vec![
            json!({ "bucket": bucket }),
            json!(["starts-with", "$key", "sized/"]),
            json!(["content-length-range", min, max]),
        ]
    };
    // Larger than the maximum: refused while it streams (3 MiB against 1 MiB).
    let big = payload(3 * MIB, 7);
    let upload = Upload::with_policy(
        &[("key", "sized/big")],
        conditions(0, MIB as u64),
        in_an_hour(),
        &big,
    );
    let response = upload.post(&bucket).await;
    assert_error(&response, 400, "EntityTooLarge", "3 MiB against max 1 MiB");
    assert_absent(&client, &bucket, "sized/big").await;

    // Smaller than the minimum: refused at its end.
    let upload = Upload::with_policy(
        &[("key", "sized/small")],
        conditions(10, 100),
        in_an_hour(),
        b"tiny",
    );
    let response = upload.post(&bucket).await;
    assert_error(&response, 400, "EntityTooSmall", "4 bytes against min 10");
    assert_absent(&client, &bucket, "sized/small").await;

    // Exactly the bounds are allowed.
    for (key, len) in [("sized/min", 10), ("sized/max", 100)] {
        let data = payload(len, len as u64);
        let upload = Upload::with_policy(&[("key", key)], conditions(10, 100), in_an_hour(), &data);
        let response = upload.post(&bucket).await;
        assert_eq!(response.status, 204, "{key}: {}", response.text());
        assert_object(&client, &bucket, key, &data).await;
    }
}

#[tokio::test]
async fn expired_policy_is_denied() {
    let (client, bucket) = new_bucket("post-expired").await;
    let conditions = vec![json!({ "bucket": bucket }), json!({"key": "late"})];
    let past = OffsetDateTime::now_utc() - Duration::minutes(1);
    let response = Upload::with_policy(&[("key", "late")], conditions, past, b"x")
        .post(&bucket)
        .await;
    assert_error(&response, 403, "AccessDenied", "expired policy");
    assert_eq!(
        element(&response, "Message").as_deref(),
        Some("Invalid according to Policy: Policy expired.")
    );
    assert_absent(&client, &bucket, "late").await;
}

/// A condition object names exactly one field, as on S3: `{}` is a malformed policy
/// (400 `InvalidPolicyDocument`), not a condition nothing fails; nothing is stored.
#[tokio::test]
async fn an_empty_condition_is_a_malformed_policy() {
    let (client, bucket) = new_bucket("post-empty-condition").await;
    for extra in [json!({}), json!({"key": "odd", "acl": "private"})] {
        let conditions = vec![json!({ "bucket": bucket }), json!({"key": "odd"}), extra];
        let upload = Upload::with_policy(&[("key", "odd")], conditions, in_an_hour(), b"x");
        let response = upload.post(&bucket).await;
        assert_error(
            &response,
            400,
            "InvalidPolicyDocument",
            "a malformed condition",
        );
        assert_absent(&client, &bucket, "odd").await;
    }
}

#[tokio::test]
async fn bad_signatures_do_not_match() {
    let (client, bucket) = new_bucket("post-sig").await;
    // The signature of another secret.
    let mut upload = Upload::allowing(&bucket, &[("key", "forged")], b"x");
    let conditions = vec![json!({ "bucket": bucket }), json!({"key": "forged"})];
    for (name, value) in signed_fields(conditions, in_an_hour(), "not-the-secret") {
        upload.set(&name, &value);
    }
    let response = upload.post(&bucket).await;
    assert_error(&response, 403, "SignatureDoesNotMatch", "wrong secret");

    // A policy changed after signing.
    let mut upload = Upload::allowing(&bucket, &[("key", "forged")], b"x");
    let wider = json!({"expiration": in_an_hour().format(&Rfc3339).unwrap(), "conditions": [
        {"bucket": bucket}, ["starts-with", "$key", ""]]});
    upload.set(
        "policy",
        &base64::engine::general_purpose::STANDARD.encode(wider.to_string()),
    );
    let response = upload.post(&bucket).await;
    assert_error(&response, 403, "SignatureDoesNotMatch", "edited policy");

    // An unknown access key.
    let mut upload = Upload::allowing(&bucket, &[("key", "forged")], b"x");
    let credential = upload
        .fields
        .iter()
        .find(|(k, _)| k == "x-amz-credential")
        .unwrap()
        .1
        .replacen(ACCESS_KEY, "nobody", 1);
    upload.set("x-amz-credential", &credential);
    let response = upload.post(&bucket).await;
    assert_error(&response, 403, "InvalidAccessKeyId", "unknown key");
    assert_absent(&client, &bucket, "forged").await;

    // No policy at all is an anonymous upload, which no bucket here accepts.
    let upload = Upload {
        fields: vec![("key".into(), "anon".into())],
        file: Some(("a".into(), b"x".to_vec())),
        after_file: Vec::new(),
    };
    assert_error(
        &upload.post(&bucket).await,
        403,
        "AccessDenied",
        "no policy",
    );
    assert_absent(&client, &bucket, "anon").await;
}

#[tokio::test]
async fn violated_conditions_are_denied() {
    let (client, bucket) = new_bucket("post-cond").await;
    let (_, other) = new_bucket("post-cond-other").await;

    // A policy for another bucket.
    let conditions = vec![
        json!({ "bucket": other }),
        json!(["starts-with", "$key", ""]),
    ];
    let response = Upload::with_policy(&[("key", "k")], conditions, in_an_hour(), b"x")
        .post(&bucket)
        .await;
    assert_error(&response, 403, "AccessDenied", "wrong bucket");
    assert_eq!(
        element(&response, "Message"),
        Some(format!(
            "Invalid according to Policy: Policy Condition failed: [\"eq\", \"$bucket\", \"{other}\"]"
        ))
    );

    // A key outside the allowed prefix.
    let conditions = vec![
        json!({ "bucket": bucket }),
        json!(["starts-with", "$key", "uploads/"]),
    ];
    let response = Upload::with_policy(&[("key", "admin/x")], conditions, in_an_hour(), b"x")
        .post(&bucket)
        .await;
    assert_error(&response, 403, "AccessDenied", "wrong prefix");
    assert_absent(&client, &bucket, "admin/x").await;
}

#[tokio::test]
async fn fields_outside_the_policy_are_denied() {
    let (client, bucket) = new_bucket("post-extra").await;
    let mut upload = Upload::allowing(&bucket, &[("key", "extra")], b"x");
    upload.set("x-amz-meta-sneaky", "1");
    let response = upload.post(&bucket).await;
    assert_error(&response, 403, "AccessDenied", "extra field");
    assert_eq!(
        element(&response, "Message").as_deref(),
        Some("Invalid according to Policy: Extra input fields: x-amz-meta-sneaky")
    );
    assert_absent(&client, &bucket, "extra").await;

    // A policy that does not name the bucket leaves it an extra input.
    let conditions = vec![json!({"key": "extra"})];
    let response = Upload::with_policy(&[("key", "extra")], conditions, in_an_hour(), b"x")
        .post(&bucket)
        .await;
    assert_error(&response, 403, "AccessDenied", "no bucket condition");
}

#[tokio::test]
async fn the_file_must_come_last_and_be_there() {
    let (client, bucket) = new_bucket("post-order").await;
    // Fields after the file are ignored, even one the policy does not allow...
    let mut upload = Upload::allowing(&bucket, &[("key", "ordered")], b"data");
    upload.after_file = vec![("x-amz-meta-late".into(), "ignored".into())];
    let response = upload.post(&bucket).await;
    assert_eq!(response.status, 204, "{}", response.text());
    let head = ok(
        client
            .head_object()
            .bucket(&bucket)
            .key("ordered")
            .send()
            .await,
        "HEAD",
    );
    assert!(head.metadata().is_none_or(|m| m.is_empty()));

    // ...so a key sent after the file is missing.
    let mut upload = Upload::allowing(&bucket, &[("key", "too-late")], b"data");
    upload.fields.retain(|(k, _)| k != "key");
    upload.after_file = vec![("key".into(), "too-late".into())];
    let response = upload.post(&bucket).await;
    assert_error(&response, 400, "InvalidArgument", "key after file");
    assert_eq!(
        element(&response, "Message").as_deref(),
        Some(
            "Bucket POST must contain a field named 'key'.  If it is specified, please check \
             the order of the fields."
        )
    );
    assert_absent(&client, &bucket, "too-late").await;

    // A form without a file.
    let mut upload = Upload::allowing(&bucket, &[("key", "no-file")], b"");
    upload.file = None;
    let response = upload.post(&bucket).await;
    assert_error(&response, 400, "InvalidArgument", "no file");
    assert_absent(&client, &bucket, "no-file").await;

    // A body that is not multipart/form-data at all.
    let response = reqwest::Client::new()
        .post(server().url(&format!("/{bucket}")))
        .header("content-type", "multipart/form-data; boundary=xyz")
        .body("this is not a form")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let text = response.text().await.unwrap();
    assert!(text.contains("<Code>MalformedPOSTRequest</Code>"), "{text}");
}

/// A form's `x-amz-checksum-*` field is checked against the file as a PUT's header is: a
/// right one is stored and reported, a wrong one is BadDigest and stores nothing.
#[tokio::test]
async fn a_checksum_field_is_checked_and_stored() {
    use sha2::Digest;
    let (client, bucket) = new_bucket("post-checksum").await;
    let data = payload(200 * KIB + 3, 4);
    let sha256 = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(&data));
    let fields = [
        ("key", "summed.bin"),
        ("x-amz-checksum-sha256", sha256.as_str()),
    ];
    let response = Upload::allowing(&bucket, &fields, &data)
        .post(&bucket)
        .await;
    assert_eq!(response.status, 204, "{}", response.text());
    let head = client
        .head_object()
        .bucket(&bucket)
        .key("summed.bin")
        .checksum_mode(aws_sdk_s3::types::ChecksumMode::Enabled)
        .send()
        .await
        .unwrap();
    assert_eq!(head.checksum_sha256(), Some(sha256.as_str()));

    let other = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(b"other"));
    let fields = [
        ("key", "wrong.bin"),
        ("x-amz-checksum-sha256", other.as_str()),
    ];
    let response = Upload::allowing(&bucket, &fields, &data)
        .post(&bucket)
        .await;
    assert_error(&response, 400, "BadDigest", "a wrong checksum field");
    assert_absent(&client, &bucket, "wrong.bin").await;
}
