//! Property tests over everything an unauthenticated client can make the server parse: the
//! router, SigV4 and SigV2 headers and query strings, `aws-chunked` bodies and trailers, XML
//! request documents, ACL documents and grant headers, `Range` and conditional headers, POST
//! forms and policies, lifecycle rules and bucket policies. Arbitrary and near-miss input must
//! never panic, and garbage must get an S3 error. `PROPTEST_CASES` sets the cases per
//! property (256 by default).

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use bytes::Bytes;
use futures::StreamExt;
use proptest::prelude::*;

use super::auth::{self, Authenticated, Credentials, Identity, Keyring, PayloadCheck};
use super::{acl, headers, post_policy, router, xml};
use crate::body::TrailerSlot;

/// Pieces of the documents and headers the parsers expect, so that garbage often comes
/// close to something valid and reaches deep into them.
const TOKENS: &[&str] = &[
    "<",
    ">",
    "</",
    "/>",
    "=",
    "\"",
    "&amp;",
    "&#x0;",
    "<![CDATA[",
    "]]>",
    "<!DOCTYPE x [",
    "<?xml version=\"1.0\"?>",
    "<Part>",
    "</Part>",
    "<PartNumber>",
    "</PartNumber>",
    "<ETag>",
    "</ETag>",
    "<CompleteMultipartUpload>",
    "</CompleteMultipartUpload>",
    "<Delete>",
    "</Delete>",
    "<Object>",
    "<Key>",
    "</Key>",
    "<Quiet>",
    "true",
    "<Tagging>",
    "<TagSet>",
    "<Tag>",
    "<Value>",
    "<Rule>",
    "<Status>",
    "Enabled",
    "<Expiration>",
    "<Days>",
    "</Days>",
    "<Date>",
    "2030-01-01T00:00:00Z",
    "<Filter>",
    "<Prefix>",
    "<And>",
    "<AccessControlPolicy>",
    "<Owner>",
    "<ID>",
    "<Grant>",
    "<Grantee xsi:type=\"Group\">",
    "<URI>",
    "<Permission>",
    "READ",
    "FULL_CONTROL",
    "<VersioningConfiguration>",
    "<ObjectLockConfiguration>",
    "<Retention>",
    "<Mode>",
    "GOVERNANCE",
    "<RetainUntilDate>",
    "AWS4-HMAC-SHA256",
    "Credential=",
    "SignedHeaders=",
    "Signature=",
    "/",
    ",",
    ";",
    " ",
    "\n",
    "\r\n",
    "aws4_request",
    "s3",
    "us-east-1",
    "20300101",
    "host",
    "x-amz-date",
    "0",
    "1",
    "-1",
    "18446744073709551615",
    "99999999999999999999",
    "bytes=",
    "-",
    "*",
    "W/\"",
    "{",
    "}",
    "[",
    "]",
    ":",
    "\"expiration\"",
    "\"conditions\"",
    "\"eq\"",
    "\"starts-with\"",
    "$key",
    "content-length-range",
    "chunk-signature=",
    "ffffffffffffffff",
    "7fffffff",
    "400;",
    "x-amz-checksum-crc32:",
    "AAAAAA==",
    "%",
    "%2F",
    "%FF",
    "?",
    "&",
    "uploadId",
    "partNumber",
    "versionId",
    "acl",
    "tagging",
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Signature",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Date",
    "AWSAccessKeyId",
    "Expires",
    "Signature",
    "AWS ",
    "id=",
    "uri=",
    "emailAddress=",
    "http://acs.amazonaws.com/groups/global/AllUsers",
];

/// A string of tokens and random characters.
fn near_miss() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => prop::sample::select(TOKENS).prop_map(str::to_string),
        1 => ".{0,12}",
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// Arbitrary bytes, or bytes of a near miss.
fn garbage_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        near_miss().prop_map(String::into_bytes),
    ]
}

fn keyring() -> Keyring {
    Keyring::new(
        Credentials {
            access_key: "fuzz-access".into(),
            secret_key: "fuzz-secret-0123456789".into(),
        },
        "us-east-1",
    )
}

/// Headers from name/value pairs, skipping what HTTP itself would refuse.
fn header_map(pairs: &[(String, String)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            map.append(name, value);
        }
    }
    map
}

fn header_pairs() -> impl Strategy<Value = Vec<(String, String)>> {
    let name = prop_oneof![
        prop::sample::select(
            &[
                "authorization",
                "x-amz-date",
                "date",
                "x-amz-content-sha256",
                "x-amz-decoded-content-length",
                "content-encoding",
                "x-amz-trailer",
                "host",
                "range",
                "if-match",
                "if-none-match",
                "if-modified-since",
                "if-unmodified-since",
                "x-amz-copy-source",
                "x-amz-copy-source-range",
                "x-amz-acl",
                "x-amz-grant-read",
                "x-amz-tagging",
                "x-amz-object-lock-retain-until-date",
                "content-md5",
                "x-amz-checksum-crc32",
                "content-type",
            ][..]
        )
        .prop_map(str::to_string),
        "[a-z-]{1,20}",
    ];
    prop::collection::vec((name, near_miss()), 0..8)
}

fn methods() -> impl Strategy<Value = Method> {
    prop::sample::select(vec![
        Method::GET,
        Method::PUT,
        Method::POST,
        Method::DELETE,
        Method::HEAD,
        Method::OPTIONS,
    ])
}

proptest! {
    #[test]
    fn the_router_and_authentication_take_any_request(
        method in methods(),
        path in near_miss(),
        query in near_miss(),
        pairs in header_pairs(),
    ) {
        let Ok(uri) = format!("/{}?{}", path.replace(' ', "%20"), query.replace(' ', "%20"))
            .parse::<Uri>()
        else {
            return Ok(());
        };
        let headers = header_map(&pairs);
        let _ = router::parse(&method, &uri, &headers, Some("s3.example.com"));
        let now = time::OffsetDateTime::now_utc();
        if let Ok(Some(auth)) = auth::authenticate(&method, &uri, &headers, &keyring(), None, now) {
            // Only a valid signature gets here; garbage never does.
            prop_assert!(auth.access_key == "fuzz-access");
        }
    }

    #[test]
    fn aws_chunked_bodies_and_trailers_are_decoded_or_refused(
        body in garbage_bytes(),
        cut in 1usize..64,
        decoded_length in prop::option::of(0u64..4096),
    ) {
        let pieces: Vec<Result<Bytes, std::io::Error>> = body
            .chunks(cut)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let authenticated = Authenticated {
            access_key: "fuzz-access".into(),
            identity: Identity::Root,
            payload: PayloadCheck::UnsignedChunks,
            decoded_length,
            foreign_region: None,
        };
        let trailers = Arc::new(TrailerSlot::default());
        let raw: crate::body::ByteStream = Box::pin(futures::stream::iter(pieces));
        let mut decoded = auth::verified_body(raw, &authenticated, trailers);
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut total = 0usize;
        runtime.block_on(async {
            while let Some(piece) = decoded.next().await {
                match piece {
                    Ok(bytes) => total += bytes.len(),
                    Err(_) => break,
                }
            }
        });
        // What comes out is never more than what went in.
        prop_assert!(total <= body.len());
    }

    #[test]
    fn xml_request_documents_parse_or_are_refused(body in garbage_bytes()) {
        let _ = xml::parse::<xml::CompleteMultipartUpload>(&body);
        let _ = xml::parse::<xml::Delete>(&body);
        let _ = xml::parse::<xml::Tagging>(&body);
        let _ = xml::parse::<xml::CorsConfiguration>(&body);
        let _ = xml::parse::<xml::VersioningConfiguration>(&body);
        let _ = xml::parse::<xml::ObjectLockConfiguration>(&body);
        let _ = xml::parse::<xml::Retention>(&body);
        let _ = xml::parse::<xml::LegalHold>(&body);
        let _ = xml::parse::<xml::CreateBucketConfiguration>(&body);
        let text = String::from_utf8_lossy(&body);
        let _ = crate::lifecycle::LifecycleConfig::from_xml(&text);
        let _ = crate::lifecycle::LifecycleConfig::from_json(&text);
        let _ = crate::iam::Policy::parse(&text, crate::iam::PolicyKind::Bucket("b"));
        let _ = crate::iam::Policy::parse(&text, crate::iam::PolicyKind::Identity);
        let accounts = acl::Accounts::for_tests(&[("owner", "root")]);
        let _ = acl::from_xml(&body, "owner", &accounts);
    }

    #[test]
    fn object_headers_parse_or_are_refused(pairs in header_pairs()) {
        let headers = header_map(&pairs);
        let _ = headers::byte_range(&headers);
        let _ = headers::write_condition(&headers);
        let _ = headers::object_lock(&headers);
        let _ = headers::tags(&headers);
        let _ = headers::user_metadata(&headers);
        let _ = headers::content_md5(&headers);
        let _ = headers::checksum_algorithm(&headers);
        let _ = headers::storage_class(&headers);
        let _ = headers::check_conditions(&headers, "etag", std::time::SystemTime::UNIX_EPOCH);
        let _ = headers::check_copy_source_conditions(&headers, "etag", std::time::SystemTime::now());
        let accounts = acl::Accounts::for_tests(&[("owner", "root")]);
        let _ = acl::from_headers(&headers, ("owner", "owner"), &accounts);
    }

    #[test]
    fn post_policies_and_forms_parse_or_are_refused(
        policy in near_miss(),
        fields in prop::collection::vec((near_miss(), near_miss()), 0..8),
    ) {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(&policy);
        let mut form = post_policy::FormFields::default();
        for (name, value) in &fields {
            form.push(name, value);
        }
        form.push("policy", &encoded);
        form.expand_filename(Some(&policy));
        let _ = post_policy::PolicySignature::from_form(&form);
        for text in [&encoded, &policy] {
            if let Ok(parsed) = post_policy::PostPolicy::parse(text) {
                let _ = parsed.check(&form, time::OffsetDateTime::now_utc());
            }
        }
    }
}

#[test]
fn garbage_gets_s3_errors() {
    let garbage = b"<CompleteMultipartUpload><Part><PartNumber>x";
    let err = xml::parse::<xml::CompleteMultipartUpload>(garbage).unwrap_err();
    assert_eq!(err.code, super::error::S3ErrorCode::MalformedXML);
    let err = post_policy::PostPolicy::parse("not base64 !").unwrap_err();
    assert_eq!(err.code.status().as_u16(), 400);
    let mut range = HeaderMap::new();
    range.insert("range", "bytes=99999999999999999999-".parse().unwrap());
    assert_eq!(
        headers::byte_range(&range),
        None,
        "an unreadable range is ignored, as on S3"
    );
}
