//! POST Object: a browser form upload. The form's fields stand for the headers of the
//! equivalent PUT and its `file` field is the body. The HTTP request itself is anonymous: a
//! POST policy signed inside the form authorizes it, and this handler verifies that.

use std::borrow::Cow;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::Stream;
use multer::{Field, Multipart};
use time::OffsetDateTime;

use super::object::{customer_of, new_object_acl, put_options, refuse_unsupported};
use super::{object_key, Request};
use crate::api::auth::sigv4::{self, CredentialScope};
use crate::api::auth::{Identity, Keyring};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::post_policy::{
    missing_field, FormFields, LengthRange, PolicySignature, PostPolicy,
};
use crate::api::router::{Endpoint, Query};
use crate::api::{headers, xml, xml_response};
use crate::body::TrailerSlot;
use crate::object::BucketName;

/// S3's limit on the form before the file: field names and values.
const MAX_FORM_FIELDS: usize = 20 << 10;
/// Largest file, as for a single PUT.
const MAX_FILE_SIZE: u64 = 5 << 30;

/// Form fields that steer the upload or sign it; none of them is an object header.
const CONTROL_FIELDS: &[&str] = &[
    "key",
    "bucket",
    "policy",
    "success_action_status",
    "success_action_redirect",
    "redirect",
    "x-amz-algorithm",
    "x-amz-credential",
    "x-amz-date",
    "x-amz-signature",
    "x-amz-security-token",
    "awsaccesskeyid",
    "signature",
];
/// Form fields passed to the PUT path as the headers of the same name (besides `x-amz-*`).
const HEADER_FIELDS: &[&str] = &[
    "content-type",
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "expires",
    "content-md5",
];

pub async fn post_object(request: Request<'_>, bucket: &BucketName) -> Result<Response, S3Error> {
    let boundary = headers::header(request.headers, "content-type")
        .and_then(|v| multer::parse_boundary(v).ok())
        .ok_or_else(|| S3Error::from_code(S3ErrorCode::MalformedPOSTRequest))?;
    let mut multipart = Multipart::new(request.body, boundary);

    let (mut form, file) = read_form(&mut multipart).await?;
    let file = file.ok_or_else(|| {
        S3Error::new(
            S3ErrorCode::InvalidArgument,
            "POST requires exactly one file upload per request.",
        )
    })?;
    form.expand_filename(file.file_name());
    // The bucket of the URL is an input the policy must allow, like any field.
    form.set("bucket", bucket.as_str());
    let key = form
        .get("key")
        .ok_or_else(|| missing_field("key"))?
        .to_string();
    let (range, identity) = authorize(&request.state.keyring, &form, OffsetDateTime::now_utc())?;
    // From here the upload is the PUT the form describes: its signer (or nobody, without a
    // policy) must be allowed that PUT, with what its fields set (ACL, retention, tags).
    let put_headers = put_headers(&form)?;
    let key_name = object_key(&key)?;
    let put = Endpoint::PutObject {
        bucket: bucket.clone(),
        key: key_name.clone(),
    };
    let info = crate::api::permissions::RequestInfo {
        headers: &put_headers,
        query: &request.query,
        source_ip: request.source_ip,
        secure: request.state.tls,
    };
    crate::api::permissions::authorize(
        &request.state.store,
        &request.state.iam,
        &identity,
        &put,
        &info,
    )
    .await?;

    let put = Request {
        state: request.state,
        headers: &put_headers,
        query: Query::default(),
        body: Box::pin(FileBody::new(file, range)),
        trailers: Arc::new(TrailerSlot::default()),
        decoded_length: None,
        signed_for_region: None,
        identity: identity.clone(),
        source_ip: request.source_ip,
    };
    refuse_unsupported(&put)?;
    let mut options = put_options(&put)?;
    options.acl = new_object_acl(&put, bucket).await?;
    super::lock::check_retention(put.state, options.lock.retention.as_ref())?;
    let customer = customer_of(&options);
    let record = put
        .state
        .store
        .put_object(bucket, &key_name, put.body, options)
        .await?;
    skip_rest(multipart).await;
    let mut response = success(request.headers, &form, bucket.as_str(), &key, &record.etag);
    super::versioning::set_written_version(response.headers_mut(), &record);
    crate::api::sse::response_headers(
        record.sse.as_ref(),
        customer.as_deref(),
        response.headers_mut(),
    );
    Ok(response)
}

/// Reads the fields before `file`; returns them and the `file` field, whose data is left
/// unread for the store to stream (`None` when the form has no file).
async fn read_form(
    multipart: &mut Multipart<'static>,
) -> Result<(FormFields, Option<Field<'static>>), S3Error> {
    let mut form = FormFields::default();
    let mut size = 0;
    while let Some(mut field) = multipart.next_field().await.map_err(form_error)? {
        let name = field
            .name()
            .ok_or_else(|| S3Error::from_code(S3ErrorCode::MalformedPOSTRequest))?
            .to_string();
        if name.eq_ignore_ascii_case("file") {
            return Ok((form, Some(field)));
        }
        size += name.len();
        let mut value = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(form_error)? {
            size += chunk.len();
            if size > MAX_FORM_FIELDS {
                return Err(S3Error::from_code(
                    S3ErrorCode::MaxPostPreDataLengthExceededError,
                ));
            }
            value.extend_from_slice(&chunk);
        }
        // Forms and policies are UTF-8.
        let value = String::from_utf8(value)
            .map_err(|_| S3Error::from_code(S3ErrorCode::MalformedPOSTRequest))?;
        form.push(&name, &value);
    }
    Ok((form, None))
}

/// A body that ends early is incomplete (or carries the reason it failed); anything else
/// the parser rejects is not well-formed multipart/form-data.
fn form_error(err: multer::Error) -> S3Error {
    match err {
        multer::Error::StreamReadFailed(cause) => cause
            .downcast_ref::<std::io::Error>()
            .and_then(S3Error::from_io)
            .unwrap_or_else(|| S3Error::from_code(S3ErrorCode::IncompleteBody)),
        _ => S3Error::from_code(S3ErrorCode::MalformedPOSTRequest),
    }
}

/// Verifies the policy signature and checks the form against the policy; returns the file
/// sizes it allows and who signed it. A form without a policy is an anonymous upload, which
/// only a bucket policy allowing anyone to put objects accepts.
fn authorize(
    keyring: &Keyring,
    form: &FormFields,
    now: OffsetDateTime,
) -> Result<(LengthRange, Identity), S3Error> {
    let Some(encoded) = form.get("policy") else {
        let any = LengthRange {
            min: 0,
            max: u64::MAX,
        };
        return Ok((any, Identity::Anonymous));
    };
    let signature = PolicySignature::from_form(form)?;
    let (secret, identity) = match &signature {
        PolicySignature::V4 { credential, .. } => secret_for(keyring, credential)?,
        PolicySignature::V2 { access_key, .. } => keyring
            .lookup(access_key)
            .ok_or_else(|| S3Error::from_code(S3ErrorCode::InvalidAccessKeyId))?,
    };
    signature.verify(encoded, &secret)?;
    Ok((PostPolicy::parse(encoded)?.check(form, now)?, identity))
}

/// The secret of a credential signed for this server's region and S3, and whose it is.
fn secret_for<'k>(
    keyring: &'k Keyring,
    credential: &CredentialScope,
) -> Result<(Cow<'k, str>, Identity), S3Error> {
    let scope_error = |detail: String| {
        S3Error::new(
            S3ErrorCode::InvalidArgument,
            format!("Error parsing the X-Amz-Credential parameter; {detail}"),
        )
    };
    if credential.region != keyring.region() {
        let (got, want) = (&credential.region, keyring.region());
        return Err(scope_error(format!(
            "the region '{got}' is wrong; expecting '{want}'"
        )));
    }
    if credential.service != sigv4::SERVICE {
        let service = &credential.service;
        return Err(scope_error(format!(
            "incorrect service \"{service}\". This endpoint belongs to \"s3\"."
        )));
    }
    keyring
        .lookup(&credential.access_key)
        .ok_or_else(|| S3Error::from_code(S3ErrorCode::InvalidAccessKeyId))
}

/// The form as the headers of the equivalent PUT: content headers and `x-amz-*` fields as
/// they are, `acl` as `x-amz-acl` and the `tagging` XML document as `x-amz-tagging`.
fn put_headers(form: &FormFields) -> Result<HeaderMap, S3Error> {
    let mut out = HeaderMap::new();
    for (name, value) in form.iter() {
        let (name, value) = match name {
            "acl" => ("x-amz-acl", value.to_string()),
            "tagging" => ("x-amz-tagging", tagging_query(value)?),
            n if CONTROL_FIELDS.contains(&n) => continue,
            n if HEADER_FIELDS.contains(&n) || n.starts_with("x-amz-") => (n, value.to_string()),
            // Anything else (a submit button, `x-ignore-*`) is not part of the object.
            _ => continue,
        };
        let invalid = || {
            S3Error::new(
                S3ErrorCode::InvalidArgument,
                format!("The form field {name} is not valid as a header."),
            )
        };
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
        let value = HeaderValue::from_bytes(value.as_bytes()).map_err(|_| invalid())?;
        out.insert(header, value);
    }
    Ok(out)
}

/// The `tagging` field (a `<Tagging>` document) in the `k=v&...` form of `x-amz-tagging`,
/// whose checks then apply as for a PUT.
fn tagging_query(document: &str) -> Result<String, S3Error> {
    let tagging: xml::Tagging = xml::parse(document.as_bytes())?;
    Ok(headers::tagging_value(&tagging.into_pairs()))
}

/// The `file` field as the object's body. It fails as soon as the file outgrows the policy's
/// `content-length-range` and at its end if it is too small, so the store never commits a
/// file the policy does not allow.
struct FileBody {
    field: Field<'static>,
    range: LengthRange,
    size: u64,
    done: bool,
}

impl FileBody {
    fn new(field: Field<'static>, range: LengthRange) -> Self {
        let max = range.max.min(MAX_FILE_SIZE);
        Self {
            field,
            range: LengthRange { max, ..range },
            size: 0,
            done: false,
        }
    }

    fn fail(&mut self, err: S3Error) -> Poll<Option<std::io::Result<Bytes>>> {
        self.done = true;
        Poll::Ready(Some(Err(err.into_io())))
    }
}

impl Stream for FileBody {
    type Item = std::io::Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.field).poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                this.size += chunk.len() as u64;
                if this.size > this.range.max {
                    return this.fail(S3Error::new(
                        S3ErrorCode::EntityTooLarge,
                        "Your proposed upload exceeds the maximum allowed size",
                    ));
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(err))) => this.fail(form_error(err)),
            Poll::Ready(None) if this.size < this.range.min => this.fail(S3Error::new(
                S3ErrorCode::EntityTooSmall,
                "Your proposed upload is smaller than the minimum allowed size",
            )),
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Reads what follows the file (S3 ignores fields after it) so that the connection can
/// carry the next request; a tail longer than the form limit is left to the connection.
async fn skip_rest(mut multipart: Multipart<'static>) {
    let mut left = MAX_FORM_FIELDS;
    while let Ok(Some(mut field)) = multipart.next_field().await {
        while let Ok(Some(chunk)) = field.chunk().await {
            match left.checked_sub(chunk.len()) {
                Some(rest) => left = rest,
                None => return,
            }
        }
    }
}

/// The answer to a stored upload: a 303 to `success_action_redirect` (or the older
/// `redirect`) when it is a URL, else the empty 204, an empty 200, or the `PostResponse`
/// document with 201, as `success_action_status` asks.
fn success(
    request_headers: &HeaderMap,
    form: &FormFields,
    bucket: &str,
    key: &str,
    etag: &str,
) -> Response {
    let etag = format!("\"{etag}\"");
    let encode = |s: &str| sigv4::uri_encode(s.as_bytes(), true);
    let redirect = form
        .get("success_action_redirect")
        .or_else(|| form.get("redirect"))
        .filter(|url| is_absolute_url(url));
    let location = match redirect {
        Some(url) => {
            let separator = if url.contains('?') { '&' } else { '?' };
            let (b, k, e) = (encode(bucket), encode(key), encode(&etag));
            format!("{url}{separator}bucket={b}&key={k}&etag={e}")
        }
        None => object_url(request_headers, bucket, key),
    };
    let mut response = match (redirect, form.get("success_action_status")) {
        (Some(_), _) => StatusCode::SEE_OTHER.into_response(),
        (None, Some("200")) => StatusCode::OK.into_response(),
        (None, Some("201")) => {
            let document = xml::PostResponse {
                location: location.clone(),
                bucket: bucket.to_string(),
                key: key.to_string(),
                etag: etag.clone(),
            };
            let body = xml::render("PostResponse", &document);
            let mut response = xml_response(body);
            *response.status_mut() = StatusCode::CREATED;
            response
        }
        // S3 answers 204 when the status is absent or not one of its three.
        (None, _) => StatusCode::NO_CONTENT.into_response(),
    };
    let out = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        out.insert("etag", value);
    }
    if let Ok(value) = HeaderValue::from_str(&location) {
        out.insert("location", value);
    }
    response
}

/// Whether a redirect target is an absolute URL S3 would follow; anything else is ignored.
fn is_absolute_url(url: &str) -> bool {
    url.parse::<axum::http::Uri>()
        .is_ok_and(|uri| uri.scheme().is_some() && uri.authority().is_some())
}

/// The stored object's URL on the host the client used: virtual-hosted when that host names
/// the bucket, else path-style.
fn object_url(request_headers: &HeaderMap, bucket: &str, key: &str) -> String {
    let key = sigv4::uri_encode(key.as_bytes(), false);
    match headers::header(request_headers, "host") {
        Some(host) if host.starts_with(&format!("{bucket}.")) => format!("http://{host}/{key}"),
        Some(host) => format!("http://{host}/{bucket}/{key}"),
        None => format!("/{bucket}/{key}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> FormFields {
        let mut form = FormFields::default();
        for (name, value) in pairs {
            form.push(name, value);
        }
        form
    }

    #[test]
    fn form_fields_become_the_headers_of_a_put() {
        let form = form(&[
            ("key", "k"),
            ("bucket", "b"),
            ("policy", "p"),
            ("Content-Type", "text/plain"),
            ("Cache-Control", "no-cache"),
            ("x-amz-meta-color", "blue"),
            ("x-amz-storage-class", "STANDARD"),
            ("acl", "private"),
            (
                "tagging",
                "<Tagging><TagSet><Tag><Key>a b</Key><Value>1&amp;2</Value></Tag>\
                 <Tag><Key>c</Key><Value></Value></Tag></TagSet></Tagging>",
            ),
            ("x-amz-signature", "s"),
            ("x-ignore-submit", "Upload"),
            ("submit", "Upload"),
        ]);
        let headers = put_headers(&form).unwrap();
        let mut names: Vec<&str> = headers.keys().map(|n| n.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "cache-control",
                "content-type",
                "x-amz-acl",
                "x-amz-meta-color",
                "x-amz-storage-class",
                "x-amz-tagging"
            ]
        );
        assert_eq!(headers["x-amz-tagging"], "a%20b=1%262&c=");
        assert_eq!(headers["content-type"], "text/plain");
    }

    /// The `file` field of a form whose body is `chunks` then, if `open`, never ends.
    async fn file_field(chunks: Vec<&'static str>, open: bool) -> Field<'static> {
        use futures::StreamExt;
        let chunks = chunks
            .into_iter()
            .map(|c| Ok::<_, std::io::Error>(Bytes::from(c)));
        let body = futures::stream::iter(chunks);
        let mut multipart = if open {
            Multipart::new(body.chain(futures::stream::pending()), "B")
        } else {
            Multipart::new(body, "B")
        };
        multipart.next_field().await.unwrap().unwrap()
    }

    const FILE_HEAD: &str =
        "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n";

    async fn first_error(mut body: FileBody) -> S3Error {
        use futures::StreamExt;
        let wait = std::time::Duration::from_secs(5);
        loop {
            match tokio::time::timeout(wait, body.next()).await {
                Ok(Some(Ok(_))) => continue,
                Ok(Some(Err(err))) => return S3Error::from_io(&err).unwrap(),
                Ok(None) => panic!("the file ended without an error"),
                Err(_) => panic!("the file never failed"),
            }
        }
    }

    #[tokio::test]
    async fn a_file_fails_as_soon_as_it_outgrows_the_range() {
        // The body never ends: the error must come from the bytes seen so far.
        let field = file_field(vec![FILE_HEAD, "0123456789abcdefghij"], true).await;
        let range = LengthRange { min: 0, max: 10 };
        let err = first_error(FileBody::new(field, range)).await;
        assert_eq!(err.code, S3ErrorCode::EntityTooLarge);
    }

    #[tokio::test]
    async fn a_file_too_small_fails_at_its_end() {
        let field = file_field(vec![FILE_HEAD, "tiny", "\r\n--B--\r\n"], false).await;
        let range = LengthRange { min: 5, max: 10 };
        let err = first_error(FileBody::new(field, range)).await;
        assert_eq!(err.code, S3ErrorCode::EntityTooSmall);

        use futures::StreamExt;
        let field = file_field(vec![FILE_HEAD, "right", "\r\n--B--\r\n"], false).await;
        let body: Vec<_> = FileBody::new(field, range).collect().await;
        let bytes: Vec<u8> = body.into_iter().flat_map(|c| c.unwrap().to_vec()).collect();
        assert_eq!(bytes, b"right");
    }

    #[test]
    fn bad_tagging_documents_are_malformed_xml() {
        let form = form(&[("tagging", "<Tagging><TagSet>")]);
        assert_eq!(
            put_headers(&form).unwrap_err().code,
            S3ErrorCode::MalformedXML
        );
    }

    #[test]
    fn status_and_redirect_follow_the_form() {
        let mut headers = HeaderMap::new();
        headers.insert("host", "s3.local:9000".parse().unwrap());
        let answer = |pairs: &[(&str, &str)]| success(&headers, &form(pairs), "b", "a/b c", "e1");

        let r = answer(&[]);
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
        assert_eq!(r.headers()["etag"], "\"e1\"");
        assert_eq!(r.headers()["location"], "http://s3.local:9000/b/a/b%20c");
        let mut virtual_host = HeaderMap::new();
        virtual_host.insert("host", "b.s3.local".parse().unwrap());
        let r = success(&virtual_host, &form(&[]), "b", "k", "e1");
        assert_eq!(r.headers()["location"], "http://b.s3.local/k");
        for (asked, got) in [
            ("200", StatusCode::OK),
            ("201", StatusCode::CREATED),
            ("204", StatusCode::NO_CONTENT),
            ("404", StatusCode::NO_CONTENT),
        ] {
            assert_eq!(answer(&[("success_action_status", asked)]).status(), got);
        }

        let r = answer(&[
            ("success_action_redirect", "https://app.example/done?x=1"),
            ("success_action_status", "201"),
        ]);
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        assert_eq!(
            r.headers()["location"],
            "https://app.example/done?x=1&bucket=b&key=a%2Fb%20c&etag=%22e1%22"
        );
        let r = answer(&[("redirect", "http://app.example/ok")]);
        assert_eq!(
            r.headers()["location"],
            "http://app.example/ok?bucket=b&key=a%2Fb%20c&etag=%22e1%22"
        );
        // A redirect S3 cannot interpret is ignored.
        let r = answer(&[("success_action_redirect", "not a url")]);
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
    }
}
