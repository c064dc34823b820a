//! AWS SDK helpers: error inspection, assertions and common operations.

use std::fmt::Debug;

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::Client;

use super::payload::assert_same_bytes;

/// HTTP status of a failed SDK call (None if no response arrived).
pub fn status_of<E>(err: &SdkError<E, HttpResponse>) -> Option<u16> {
    err.raw_response().map(|r| r.status().as_u16())
}

/// S3 error code of a failed SDK call.
pub fn code_of<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> Option<String> {
    err.code().map(str::to_owned)
}

/// One-line description of a failed SDK call: status, code, message, start of the body.
pub fn describe<E: Debug>(err: &SdkError<E, HttpResponse>) -> String {
    match err.raw_response() {
        Some(raw) => {
            let body = raw
                .body()
                .bytes()
                .map(|b| String::from_utf8_lossy(&b[..b.len().min(400)]).into_owned())
                .unwrap_or_default();
            let source = match err {
                SdkError::ServiceError(e) => format!("{:?}", e.err()),
                other => format!("{other:?}"),
            };
            format!(
                "HTTP {} ; error {} ; body {body:?}",
                raw.status().as_u16(),
                truncate(&source, 400)
            )
        }
        None => format!("no HTTP response: {}", truncate(&format!("{err:?}"), 600)),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Asserts the call failed with `status` and S3 error `code`.
#[track_caller]
pub fn assert_s3_error<T: Debug, E: ProvideErrorMetadata + Debug>(
    res: Result<T, SdkError<E, HttpResponse>>,
    status: u16,
    code: &str,
    what: &str,
) {
    match res {
        Ok(v) => panic!(
            "{what}: expected {status} {code}, got success: {}",
            truncate(&format!("{v:?}"), 300)
        ),
        Err(e) => {
            let got_status = status_of(&e);
            let got_code = code_of(&e);
            assert!(
                got_status == Some(status) && got_code.as_deref() == Some(code),
                "{what}: expected {status} {code}, got status {got_status:?} code {got_code:?}: {}",
                describe(&e)
            );
        }
    }
}

/// Asserts the call failed with HTTP `status` (for HEAD, whose errors have no body).
#[track_caller]
pub fn assert_s3_status<T: Debug, E: Debug>(
    res: Result<T, SdkError<E, HttpResponse>>,
    status: u16,
    what: &str,
) {
    match res {
        Ok(v) => panic!(
            "{what}: expected HTTP {status}, got success: {}",
            truncate(&format!("{v:?}"), 300)
        ),
        Err(e) => {
            assert_eq!(
                status_of(&e),
                Some(status),
                "{what}: expected HTTP {status}: {}",
                describe(&e)
            );
        }
    }
}

/// Unwraps an SDK result with a readable message (status, code, body).
#[track_caller]
pub fn ok<T, E: ProvideErrorMetadata + Debug>(
    res: Result<T, SdkError<E, HttpResponse>>,
    what: &str,
) -> T {
    match res {
        Ok(v) => v,
        Err(e) => panic!("{what}: failed: {}", describe(&e)),
    }
}

pub async fn create_bucket(client: &Client, bucket: &str) {
    ok(
        client.create_bucket().bucket(bucket).send().await,
        &format!("CreateBucket {bucket}"),
    );
}

/// PUT from memory; returns the ETag.
pub async fn put(client: &Client, bucket: &str, key: &str, data: &[u8]) -> String {
    let out = ok(
        client
            .put_object()
            .bucket(bucket)
            .key(key)
            .body(data.to_vec().into())
            .send()
            .await,
        &format!("PutObject {bucket}/{key} ({} bytes)", data.len()),
    );
    out.e_tag().unwrap_or_default().to_string()
}

/// Appends `data` at `offset` (`x-amz-write-offset-bytes`); returns the ETag.
pub async fn append(
    client: &Client,
    bucket: &str,
    key: &str,
    offset: usize,
    data: &[u8],
) -> String {
    let out = ok(
        client
            .put_object()
            .bucket(bucket)
            .key(key)
            .write_offset_bytes(offset as i64)
            .body(data.to_vec().into())
            .send()
            .await,
        &format!(
            "append to {bucket}/{key} at {offset} ({} bytes)",
            data.len()
        ),
    );
    out.e_tag().unwrap_or_default().to_string()
}

/// GET the whole body.
pub async fn get(client: &Client, bucket: &str, key: &str) -> Vec<u8> {
    let out = ok(
        client.get_object().bucket(bucket).key(key).send().await,
        &format!("GetObject {bucket}/{key}"),
    );
    match out.body.collect().await {
        Ok(b) => b.into_bytes().to_vec(),
        Err(e) => panic!("GetObject {bucket}/{key}: body read failed: {e:?}"),
    }
}

/// GET and HEAD `key` and assert byte-identical content and matching Content-Length.
pub async fn assert_object(client: &Client, bucket: &str, key: &str, want: &[u8]) {
    let head = ok(
        client.head_object().bucket(bucket).key(key).send().await,
        &format!("HeadObject {bucket}/{key}"),
    );
    assert_eq!(
        head.content_length(),
        Some(want.len() as i64),
        "HeadObject {bucket}/{key}: Content-Length"
    );
    let out = ok(
        client.get_object().bucket(bucket).key(key).send().await,
        &format!("GetObject {bucket}/{key}"),
    );
    assert_eq!(
        out.content_length(),
        Some(want.len() as i64),
        "GetObject {bucket}/{key}: Content-Length"
    );
    let body = match out.body.collect().await {
        Ok(b) => b.into_bytes(),
        Err(e) => panic!("GetObject {bucket}/{key}: body read failed: {e:?}"),
    };
    assert_same_bytes(&body, want, &format!("GetObject {bucket}/{key}"));
}

/// Uploads `parts` as one multipart object; returns the CompleteMultipartUpload ETag.
pub async fn multipart_put(client: &Client, bucket: &str, key: &str, parts: &[&[u8]]) -> String {
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    let create = ok(
        client
            .create_multipart_upload()
            .bucket(bucket)
            .key(key)
            .send()
            .await,
        "CreateMultipartUpload",
    );
    let upload_id = create.upload_id().expect("upload id").to_string();
    let mut completed = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let n = i as i32 + 1;
        let out = ok(
            client
                .upload_part()
                .bucket(bucket)
                .key(key)
                .upload_id(&upload_id)
                .part_number(n)
                .body(part.to_vec().into())
                .send()
                .await,
            &format!("UploadPart {n}"),
        );
        completed.push(
            CompletedPart::builder()
                .part_number(n)
                .e_tag(out.e_tag().unwrap_or_default())
                .build(),
        );
    }
    let out = ok(
        client
            .complete_multipart_upload()
            .bucket(bucket)
            .key(key)
            .upload_id(&upload_id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(completed))
                    .build(),
            )
            .send()
            .await,
        "CompleteMultipartUpload",
    );
    out.e_tag().unwrap_or_default().to_string()
}

/// Lists every key of `bucket` (following continuation tokens).
pub async fn list_all_keys(client: &Client, bucket: &str, prefix: Option<&str>) -> Vec<String> {
    let mut keys = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let out = ok(
            client
                .list_objects_v2()
                .bucket(bucket)
                .set_prefix(prefix.map(str::to_owned))
                .set_continuation_token(token.clone())
                .send()
                .await,
            &format!("ListObjectsV2 {bucket}"),
        );
        for o in out.contents() {
            keys.push(o.key().unwrap_or_default().to_string());
        }
        match out.next_continuation_token() {
            Some(t) if out.is_truncated() == Some(true) => token = Some(t.to_string()),
            _ => break,
        }
    }
    keys
}

/// The server a test file shares between its tests (one per test binary).
pub fn server() -> &'static super::TestServer {
    static SERVER: std::sync::OnceLock<super::TestServer> = std::sync::OnceLock::new();
    SERVER.get_or_init(super::TestServer::start)
}

/// A fresh bucket on the shared server, and a client for it.
pub async fn new_bucket(prefix: &str) -> (Client, String) {
    let client = server().client();
    let bucket = super::unique_bucket(prefix);
    create_bucket(&client, &bucket).await;
    (client, bucket)
}

/// PUT; returns the `x-amz-version-id` answered, if any.
pub async fn put_version(client: &Client, bucket: &str, key: &str, data: &[u8]) -> Option<String> {
    let out = ok(
        client
            .put_object()
            .bucket(bucket)
            .key(key)
            .body(data.to_vec().into())
            .send()
            .await,
        &format!("PutObject {bucket}/{key}"),
    );
    out.version_id().map(str::to_string)
}

/// PUT in a versioning-enabled bucket; returns the new version's id.
pub async fn put_new_version(client: &Client, bucket: &str, key: &str, data: &[u8]) -> String {
    put_version(client, bucket, key, data)
        .await
        .unwrap_or_else(|| panic!("PutObject {bucket}/{key}: no x-amz-version-id"))
}

/// Puts a bucket's versioning state (Enabled or Suspended).
pub async fn set_versioning(
    client: &Client,
    bucket: &str,
    status: aws_sdk_s3::types::BucketVersioningStatus,
) {
    ok(
        client
            .put_bucket_versioning()
            .bucket(bucket)
            .versioning_configuration(
                aws_sdk_s3::types::VersioningConfiguration::builder()
                    .status(status.clone())
                    .build(),
            )
            .send()
            .await,
        &format!("PutBucketVersioning {bucket} {status:?}"),
    );
}

/// `client`, giving up on a connection after 2 s and on an operation (retries included)
/// after `operation`.
pub fn giving_up_after(client: &Client, operation: std::time::Duration) -> Client {
    let timeouts = aws_sdk_s3::config::timeout::TimeoutConfig::builder()
        .connect_timeout(std::time::Duration::from_secs(2))
        .operation_timeout(operation)
        .build();
    Client::from_conf(
        client
            .config()
            .to_builder()
            .timeout_config(timeouts)
            .build(),
    )
}
