//! Tests of request authentication against AWS's published examples.

use super::*;
use axum::http::{HeaderName, HeaderValue};
use futures::StreamExt;
use S3ErrorCode::*;

const AK: &str = "AKIAIOSFODNN7EXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
/// Request time of the AWS examples, and of the requests signed by [`signed_request`].
const T_AWS: &str = "20130524T000000Z";
const T_OWN: &str = "20240101T120000Z";

fn uri(s: &str) -> Uri {
    s.parse().expect("valid uri")
}

fn header_map(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("name");
        map.append(name, HeaderValue::from_str(value).expect("value"));
    }
    map
}

fn check(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    now: &str,
) -> Result<Option<Authenticated>, S3Error> {
    let root = Credentials {
        access_key: AK.into(),
        secret_key: SECRET.into(),
    };
    let now = sigv4::parse_amz_date(now).expect("valid date");
    let keyring = Keyring::new(root, "us-east-1");
    // The domain of AWS's virtual-hosted examples.
    authenticate(
        method,
        uri,
        headers,
        &keyring,
        Some("s3.amazonaws.com"),
        now,
    )
}

fn accepted(method: &Method, uri: &Uri, headers: &HeaderMap, now: &str) -> Authenticated {
    check(method, uri, headers, now)
        .expect("accepted")
        .expect("not anonymous")
}

fn refused(method: &Method, uri: &Uri, headers: &HeaderMap, now: &str) -> S3ErrorCode {
    check(method, uri, headers, now).expect_err("refused").code
}

/// Signs all `headers` the way an SDK would, for `region` and `secret`.
fn sign(method: &Method, uri: &Uri, headers: &mut HeaderMap, region: &str, secret: &str) {
    let mut names: Vec<&str> = headers.keys().map(|k| k.as_str()).collect();
    names.sort_unstable();
    let signed = names.join(";");
    let date = &T_OWN[..8];
    let creq = CanonicalRequest {
        method,
        uri: &sigv4::canonical_uri(uri.path()),
        query: &sigv4::canonical_query(uri.query().unwrap_or(""), None),
        headers,
        signed_headers: &signed,
        authority: None,
        payload_hash: headers[X_AMZ_CONTENT_SHA256].to_str().expect("ascii"),
    };
    let scope = format!("{date}/{region}/s3/aws4_request");
    let key = sigv4::signing_key(secret, date, region, "s3");
    let sig = sigv4::sign(
        &key,
        &sigv4::string_to_sign(T_OWN, &scope, &creq.to_bytes()),
    );
    let value = format!(
        "{} Credential={AK}/{scope}, SignedHeaders={signed}, Signature={sig}",
        sigv4::ALGORITHM
    );
    headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&value).expect("ascii"),
    );
}

fn signed_request(path: &str, extra: &[(&str, &str)], payload: &str) -> (Uri, HeaderMap) {
    let uri = uri(path);
    let mut headers = header_map(&[
        ("host", "localhost:9000"),
        (X_AMZ_DATE, T_OWN),
        (X_AMZ_CONTENT_SHA256, payload),
    ]);
    headers.extend(header_map(extra));
    sign(&Method::PUT, &uri, &mut headers, "us-east-1", SECRET);
    (uri, headers)
}

fn read(body: ByteStream) -> Result<Vec<u8>, S3Error> {
    futures::executor::block_on(body.fold(Ok(Vec::new()), |acc, item| async move {
        let mut acc = acc?;
        acc.extend_from_slice(&item.map_err(|e| S3Error::from_io(&e).expect("S3 error"))?);
        Ok(acc)
    }))
}

fn body_of(pieces: &[&[u8]]) -> ByteStream {
    let pieces: Vec<_> = pieces
        .iter()
        .map(|p| Ok(Bytes::copy_from_slice(p)))
        .collect();
    Box::pin(futures::stream::iter(pieces))
}

/// AWS's "GET Object" example (`sig-v4-header-based-auth.html`).
fn aws_get_object() -> HeaderMap {
    header_map(&[
        ("host", "examplebucket.s3.amazonaws.com"),
        ("range", "bytes=0-9"),
        (X_AMZ_CONTENT_SHA256, sigv4::EMPTY_SHA256_HEX),
        (X_AMZ_DATE, T_AWS),
        ("authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"),
    ])
}

#[test]
fn aws_get_object_example_authenticates_and_checks_the_body_digest() {
    let auth = accepted(
        &Method::GET,
        &uri("/test.txt"),
        &aws_get_object(),
        "20130524T001459Z",
    );
    assert_eq!(auth.access_key, AK);
    assert!(matches!(auth.payload, PayloadCheck::Sha256(_)));
    let slot = Arc::new(TrailerSlot::default());
    assert_eq!(
        read(verified_body(body_of(&[]), &auth, slot.clone())).expect("ok"),
        b""
    );
    let err = read(verified_body(body_of(&[b"x"]), &auth, slot)).expect_err("digest");
    assert_eq!(err.code, XAmzContentSHA256Mismatch);
}

#[test]
fn header_auth_refusals_use_aws_codes() {
    let (get, path, headers) = (&Method::GET, &uri("/test.txt"), aws_get_object());
    assert_eq!(
        refused(get, path, &headers, "20130524T001501Z"),
        RequestTimeTooSkewed
    );
    assert_eq!(
        refused(get, path, &headers, "20130523T234459Z"),
        RequestTimeTooSkewed
    );
    assert_eq!(
        refused(&Method::PUT, path, &headers, T_AWS),
        SignatureDoesNotMatch
    );
    let edits: [(&str, Option<&'static str>, S3ErrorCode); 3] = [
        (X_AMZ_CONTENT_SHA256, None, InvalidRequest),
        (X_AMZ_DATE, None, AccessDenied),
        ("x-amz-meta-unsigned", Some("1"), AccessDenied),
    ];
    for (name, value, want) in edits {
        let mut h = headers.clone();
        match value {
            Some(value) => h.insert(name, HeaderValue::from_static(value)),
            None => h.remove(name),
        };
        assert_eq!(refused(get, path, &h, T_AWS), want, "{name}");
    }
    let scope = "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request";
    let cases = [
        (
            "AWS AKIAIOSFODNN7EXAMPLE:c2lnbmF0dXJl".to_owned(),
            SignatureDoesNotMatch,
        ),
        ("AWS AKIAIOSFODNN7EXAMPLE".to_owned(), InvalidArgument),
        ("AWS NOBODY:c2lnbmF0dXJl".to_owned(), InvalidAccessKeyId),
        ("Bearer token".to_owned(), InvalidArgument),
        (
            format!("AWS4-HMAC-SHA256 {scope}"),
            AuthorizationHeaderMalformed,
        ),
        (
            format!("AWS4-HMAC-SHA256 {scope},SignedHeaders=host"),
            AuthorizationHeaderMalformed,
        ),
        (
            format!("AWS4-HMAC-SHA256 {scope}x,SignedHeaders=host,Signature=0"),
            AuthorizationHeaderMalformed,
        ),
        (
            format!(
                "AWS4-HMAC-SHA256 {},SignedHeaders=host,Signature=0",
                scope.replace("0524", "0523")
            ),
            AuthorizationHeaderMalformed,
        ),
        (
            format!(
                "AWS4-HMAC-SHA256 {},SignedHeaders=host,Signature=0",
                scope.replace("/s3/", "/ec2/")
            ),
            AuthorizationHeaderMalformed,
        ),
        (
            format!(
                "AWS4-HMAC-SHA256 {},SignedHeaders=host,Signature=0",
                scope.replace("AKIA", "NOBODY")
            ),
            InvalidAccessKeyId,
        ),
    ];
    for (value, want) in cases {
        let mut h = headers.clone();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&value).expect("ascii"),
        );
        assert_eq!(refused(get, path, &h, T_AWS), want, "{value}");
    }
}

#[test]
fn wrong_region_names_the_expected_one() {
    let (uri, mut headers) = signed_request("/b/k", &[], UNSIGNED_PAYLOAD);
    sign(&Method::PUT, &uri, &mut headers, "eu-west-1", SECRET);
    let err = check(&Method::PUT, &uri, &headers, T_OWN).expect_err("region");
    assert_eq!(err.code, AuthorizationHeaderMalformed);
    assert!(err
        .message
        .ends_with("the region 'eu-west-1' is wrong; expecting 'us-east-1'"));
    assert!(err.to_xml().contains("<Region>us-east-1</Region>"));
    sign(
        &Method::PUT,
        &uri,
        &mut headers,
        "us-east-1",
        "not-the-secret",
    );
    assert_eq!(
        refused(&Method::PUT, &uri, &headers, T_OWN),
        SignatureDoesNotMatch
    );
}

#[test]
fn path_signed_in_aws_encoding_matches_a_raw_path() {
    let (signed_uri, headers) = signed_request("/b/a%24b%3Ac", &[], UNSIGNED_PAYLOAD);
    let put = &Method::PUT;
    assert!(matches!(
        accepted(put, &signed_uri, &headers, T_OWN).payload,
        PayloadCheck::Unverified
    ));
    accepted(put, &uri("/b/a$b:c"), &headers, T_OWN);
    assert_eq!(
        refused(put, &uri("/b/a$b:d"), &headers, T_OWN),
        SignatureDoesNotMatch
    );
}

#[test]
fn aws_chunked_example_seed_signature_and_body() {
    // `sigv4-streaming.html`: PUT of 64 KiB + 1 KiB of 'a' in signed chunks.
    let headers = header_map(&[
        ("host", "s3.amazonaws.com"),
        (X_AMZ_DATE, T_AWS),
        ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        (X_AMZ_CONTENT_SHA256, STREAMING_SIGNED),
        ("content-encoding", "aws-chunked"),
        (X_AMZ_DECODED_CONTENT_LENGTH, "66560"),
        ("content-length", "66824"),
        ("authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"),
    ]);
    let (put, path) = (&Method::PUT, &uri("/examplebucket/chunkObject.txt"));
    let auth = accepted(put, path, &headers, T_AWS);
    assert!(matches!(auth.payload, PayloadCheck::SignedChunks(_)));
    assert_eq!(auth.decoded_length, Some(66_560));
    let a = vec![b'a'; 65_536];
    let body = body_of(&[
        b"10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n",
        &a,
        b"\r\n400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n",
        &a[..1024],
        b"\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n",
    ]);
    let decoded = read(verified_body(body, &auth, Arc::new(TrailerSlot::default())));
    assert_eq!(decoded.expect("verifies"), vec![b'a'; 66_560]);
    let mut unsigned_length = headers.clone();
    unsigned_length.insert(
        X_AMZ_DECODED_CONTENT_LENGTH,
        HeaderValue::from_static("66561"),
    );
    assert_eq!(
        refused(put, path, &unsigned_length, T_AWS),
        SignatureDoesNotMatch
    );
}

/// Regression: MinIO CVE-2025-31489 accepted unsigned-trailer uploads without checking the
/// header signature at all.
#[test]
fn unsigned_trailer_mode_still_verifies_the_seed_signature() {
    let extra = [
        (X_AMZ_DECODED_CONTENT_LENGTH, "5"),
        ("x-amz-trailer", "x-amz-checksum-crc32"),
    ];
    let (uri, mut headers) = signed_request("/b/k", &extra, STREAMING_UNSIGNED_TRAILER);
    let auth = accepted(&Method::PUT, &uri, &headers, T_OWN);
    assert!(matches!(auth.payload, PayloadCheck::UnsignedChunks));
    let slot = Arc::new(TrailerSlot::default());
    let body = body_of(&[
        b"5\r\nhel",
        b"lo\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n",
    ]);
    assert_eq!(
        read(verified_body(body, &auth, slot.clone())).expect("decodes"),
        b"hello"
    );
    assert_eq!(slot.get("x-amz-checksum-crc32"), Some("NhCmhg=="));

    let value = headers[header::AUTHORIZATION].to_str().expect("ascii");
    let forged = format!("{}0", &value[..value.len() - 1]);
    headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&forged).expect("ascii"),
    );
    assert_eq!(
        refused(&Method::PUT, &uri, &headers, T_OWN),
        SignatureDoesNotMatch
    );
}

#[test]
fn payload_header_values_are_checked() {
    let cases = [
        (STREAMING_SIGNED_TRAILER, MissingContentLength),
        ("not-a-digest", InvalidArgument),
        ("STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", NotImplemented),
    ];
    for (payload, want) in cases {
        let (uri, headers) = signed_request("/b/k", &[], payload);
        assert_eq!(
            refused(&Method::PUT, &uri, &headers, T_OWN),
            want,
            "{payload}"
        );
    }
}

/// AWS's presigned URL example (`sigv4-query-string-auth.html`), valid for 86400 s.
const PRESIGNED: &str = "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256\
    &X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request\
    &X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host\
    &X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";

#[test]
fn aws_presigned_example_and_its_lifetime() {
    let (get, presigned) = (&Method::GET, &uri(PRESIGNED));
    let headers = header_map(&[("host", "examplebucket.s3.amazonaws.com")]);
    for now in [T_AWS, "20130523T235000Z", "20130525T000000Z"] {
        let auth = accepted(get, presigned, &headers, now);
        assert!(matches!(auth.payload, PayloadCheck::Unverified), "{now}");
    }
    let late = [
        ("20130525T000001Z", "Request has expired"),
        ("20130523T234459Z", "Request is not valid yet"),
    ];
    for (now, message) in late {
        let err = check(get, presigned, &headers, now).expect_err("refused");
        assert_eq!((err.code, err.message.as_ref()), (AccessDenied, message));
    }
    let tampered = uri(&PRESIGNED.replace("test.txt", "test.txu"));
    assert_eq!(
        refused(get, &tampered, &headers, T_AWS),
        SignatureDoesNotMatch
    );
    let mut both = headers.clone();
    both.insert(
        header::AUTHORIZATION,
        HeaderValue::from_static("AWS4-HMAC-SHA256 x"),
    );
    assert_eq!(refused(get, presigned, &both, T_AWS), InvalidArgument);
    let mut unsigned = headers.clone();
    unsigned.insert("x-amz-acl", HeaderValue::from_static("public-read"));
    assert_eq!(refused(get, presigned, &unsigned, T_AWS), AccessDenied);
}

#[test]
fn presigned_parameter_errors() {
    let headers = header_map(&[("host", "examplebucket.s3.amazonaws.com")]);
    let cases = [
        (
            "X-Amz-Expires=86400&",
            "",
            AuthorizationQueryParametersError,
        ),
        (
            "Expires=86400",
            "Expires=604801",
            AuthorizationQueryParametersError,
        ),
        (
            "Expires=86400",
            "Expires=-1",
            AuthorizationQueryParametersError,
        ),
        (
            "Expires=86400",
            "Expires=1d",
            AuthorizationQueryParametersError,
        ),
        (
            "AWS4-HMAC-SHA256",
            "AWS4-HMAC-SHA1",
            AuthorizationQueryParametersError,
        ),
        ("us-east-1", "eu-west-1", AuthorizationQueryParametersError),
        (
            "Date=20130524T000000Z",
            "Date=2013-05-24",
            AuthorizationQueryParametersError,
        ),
        (
            "Date=20130524T000000Z",
            "Date=20130525T000000Z",
            AuthorizationQueryParametersError,
        ),
        ("AKIAIOSFODNN7EXAMPLE", "NOBODY", InvalidAccessKeyId),
    ];
    for (from, to, want) in cases {
        let presigned = uri(&PRESIGNED.replace(from, to));
        assert_eq!(
            refused(&Method::GET, &presigned, &headers, T_AWS),
            want,
            "{from} -> {to}"
        );
    }
}

#[test]
fn anonymous_and_sigv2_requests() {
    let (get, headers) = (&Method::GET, header_map(&[("host", "h")]));
    for path in ["/", "/b/k?list-type=2&prefix=a", "/b/k?Signature=x"] {
        assert!(check(get, &uri(path), &headers, T_OWN)
            .expect("anonymous")
            .is_none());
    }
    let v2 = uri("/b/k?AWSAccessKeyId=AK&Expires=1&Signature=x");
    assert_eq!(refused(get, &v2, &headers, T_OWN), AccessDenied, "expired");
}

/// The SigV2 examples of AWS's "Signing and Authenticating REST Requests" (virtual-hosted).
#[test]
fn aws_sigv2_examples_authenticate() {
    let get = Method::GET;
    let host = ("host", "johnsmith.s3.amazonaws.com");
    let at = "20070327T193642Z";
    let headers = header_map(&[
        host,
        ("date", "Tue, 27 Mar 2007 19:36:42 +0000"),
        (
            "authorization",
            "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
        ),
    ]);
    let signed = accepted(&get, &uri("/photos/puppy.jpg"), &headers, at);
    assert_eq!(signed.identity, Identity::Root);
    assert!(matches!(signed.payload, PayloadCheck::Unverified));
    // Another object, a day later, an unknown key: each refused with AWS's code.
    assert_eq!(
        refused(&get, &uri("/photos/kitten.jpg"), &headers, at),
        SignatureDoesNotMatch
    );
    assert_eq!(
        refused(
            &get,
            &uri("/photos/puppy.jpg"),
            &headers,
            "20070328T193642Z"
        ),
        RequestTimeTooSkewed
    );
    let no_date = header_map(&[host, ("authorization", "AWS AKIAIOSFODNN7EXAMPLE:x")]);
    assert_eq!(
        refused(&get, &uri("/photos/puppy.jpg"), &no_date, at),
        AccessDenied
    );
    // A date before the epoch, or an empty one, is no date: refused, not "skewed".
    for date in [
        "Tue, 07 Jul 1950 21:53:04 +0000",
        "Tue, 07 Jul 1950 21:53:04 GMT",
        "",
    ] {
        let dated = header_map(&[
            host,
            ("date", date),
            ("authorization", "AWS AKIAIOSFODNN7EXAMPLE:x"),
        ]);
        assert_eq!(
            refused(&get, &uri("/photos/puppy.jpg"), &dated, at),
            AccessDenied,
            "{date:?}"
        );
    }

    let presigned = uri("/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE\
         &Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D&Expires=1175139620");
    let hosted = header_map(&[host]);
    accepted(&get, &presigned, &hosted, at);
    // Expires is 2007-03-29T03:40:20Z.
    assert_eq!(
        refused(&get, &presigned, &hosted, "20070329T034021Z"),
        AccessDenied
    );
    let tampered = uri(&presigned.to_string().replace("puppy", "kitten"));
    assert_eq!(refused(&get, &tampered, &hosted, at), SignatureDoesNotMatch);
    // A host outside the domain is path style: `/photos/...` is then bucket `photos`, not
    // the object the signature names, so the signature does not cover it.
    let elsewhere = header_map(&[("host", "johnsmith.example.net")]);
    assert_eq!(
        refused(&get, &presigned, &elsewhere, at),
        SignatureDoesNotMatch
    );
}

/// A browser's CORS preflight of a presigned URL carries the URL's query string, signed for
/// another method: it is answered unauthenticated, as every preflight is, never refused.
#[test]
fn a_preflight_of_a_presigned_url_is_not_authenticated() {
    let options = Method::OPTIONS;
    let headers = header_map(&[
        ("host", "localhost:9000"),
        ("origin", "https://app.example"),
        ("access-control-request-method", "PUT"),
    ]);
    let v2 = sigv2_presigned(&Method::PUT, "/b/k", 1_704_110_400 + 3600);
    let v4 = "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20240101%2Fus-east-1\
              %2Fs3%2Faws4_request&X-Amz-Date=20240101T120000Z&X-Amz-Expires=3600\
              &X-Amz-SignedHeaders=host&X-Amz-Signature=00";
    for url in [
        v2.as_str(),
        v4,
        "/b/k?AWSAccessKeyId=AK&Expires=1&Signature=x",
    ] {
        let outcome = check(&options, &uri(url), &headers, T_OWN);
        assert!(outcome.expect("not refused").is_none(), "{url}");
    }
    // The same URL signed for PUT still authenticates a PUT, and not a GET.
    accepted(&Method::PUT, &uri(&v2), &headers, T_OWN);
    assert_eq!(
        refused(&Method::GET, &uri(&v2), &headers, T_OWN),
        SignatureDoesNotMatch
    );
}

/// A SigV2 presigned URL for `method path`, expiring at `expires` (Unix seconds).
fn sigv2_presigned(method: &Method, path: &str, expires: i64) -> String {
    let to_sign = sigv2::string_to_sign(method, "", "", &expires.to_string(), "", path);
    let signature = sigv2::sign(SECRET, &to_sign);
    let signature =
        percent_encoding::utf8_percent_encode(&signature, percent_encoding::NON_ALPHANUMERIC);
    format!("{path}?AWSAccessKeyId={AK}&Expires={expires}&Signature={signature}")
}

/// SigV2 does not sign `?publicAccessBlock` and the like: a URL presigned for
/// `DELETE /bucket` must not become "remove Block Public Access". Those operations take
/// SigV4 only, as on AWS; and a SigV2 URL lives at most 7 days, as a SigV4 one does.
#[test]
fn sigv2_refuses_operations_it_does_not_sign_and_lifetimes_over_a_week() {
    let delete = Method::DELETE;
    let headers = header_map(&[("host", "localhost:9000")]);
    // 2024-01-01T12:00:00Z, the time of T_OWN, plus an hour.
    let in_an_hour = 1_704_110_400 + 3600;
    let url = sigv2_presigned(&delete, "/b", in_an_hour);
    accepted(&delete, &uri(&url), &headers, T_OWN);
    for selector in [
        "publicAccessBlock",
        "ownershipControls",
        "encryption",
        "policyStatus",
        "attributes",
    ] {
        let rewritten = uri(&format!("{url}&{selector}"));
        assert_eq!(
            refused(&delete, &rewritten, &headers, T_OWN),
            InvalidRequest,
            "{selector}"
        );
    }
    // A signed sub-resource still changes what is signed, so a rewrite is refused.
    let rewritten = uri(&format!("{url}&policy"));
    assert_eq!(
        refused(&delete, &rewritten, &headers, T_OWN),
        SignatureDoesNotMatch
    );

    let week = 604_800;
    let at_a_week = sigv2_presigned(&delete, "/b", 1_704_110_400 + week);
    accepted(&delete, &uri(&at_a_week), &headers, T_OWN);
    let beyond = sigv2_presigned(&delete, "/b", 1_704_110_400 + week + 1);
    assert_eq!(
        refused(&delete, &uri(&beyond), &headers, T_OWN),
        AccessDenied
    );
}

/// A SigV4 request dated by `Date` instead of `x-amz-date`, in every form clients write it.
#[test]
fn sigv4_takes_a_date_header_in_any_rfc_2822_form() {
    for date in [
        "Mon, 01 Jan 2024 12:00:00 GMT",
        "Mon, 01 Jan 2024 12:00:00 +0000",
        "Mon, 01 Jan 2024 12:00:00 -0000",
        "Mon, 01 Jan 2024 13:00:00 +0100",
    ] {
        let uri = uri("/b/k");
        let mut headers = header_map(&[
            ("host", "localhost:9000"),
            ("date", date),
            (X_AMZ_CONTENT_SHA256, UNSIGNED_PAYLOAD),
        ]);
        sign(&Method::PUT, &uri, &mut headers, "us-east-1", SECRET);
        accepted(&Method::PUT, &uri, &headers, T_OWN);
    }
}
