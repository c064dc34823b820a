//! AWS Signature Version 4 as pure functions: parsing the signed parameters, building the
//! canonical request and the string to sign, deriving the signing key, comparing signatures.
//! Nothing here looks at a clock or a keyring; `authenticate` in the parent module does.

use axum::http::{HeaderMap, Method};
use hmac::{Hmac, Mac};
use percent_encoding::percent_decode;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use time::format_description::FormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime};

/// The only signing algorithm Strata accepts.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// Hex SHA-256 of the empty string: the body hash of bodiless requests and a fixed line of the
/// chunk string to sign.
pub const EMPTY_SHA256_HEX: &str =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// The service every credential scope must name.
pub const SERVICE: &str = "s3";
/// The last component of every credential scope.
const TERMINATOR: &str = "aws4_request";

const AMZ_DATE: &[FormatItem<'static>] =
    format_description!("[year][month][day]T[hour][minute][second]Z");
const SCOPE_DATE: &[FormatItem<'static>] = format_description!("[year][month][day]");

/// The `<access key>/<date>/<region>/<service>/aws4_request` credential of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialScope {
    pub access_key: String,
    /// `YYYYMMDD`, which must be the day of the request timestamp.
    pub date: String,
    pub region: String,
    pub service: String,
}

impl CredentialScope {
    /// Parses the credential; `None` when it does not have the five components.
    pub fn parse(credential: &str) -> Option<Self> {
        // The access key is everything before the last four components, so a key containing
        // `/` still parses.
        let mut parts = credential.rsplitn(5, '/');
        let terminator = parts.next()?;
        let service = parts.next()?;
        let region = parts.next()?;
        let date = parts.next()?;
        let access_key = parts.next()?;
        let valid_date = date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit());
        if terminator != TERMINATOR || !valid_date || access_key.is_empty() || region.is_empty() {
            return None;
        }
        Some(Self {
            access_key: access_key.to_owned(),
            date: date.to_owned(),
            region: region.to_owned(),
            service: service.to_owned(),
        })
    }

    /// `<date>/<region>/<service>/aws4_request`, the scope line of the string to sign.
    pub fn scope(&self) -> String {
        format!(
            "{}/{}/{}/{TERMINATOR}",
            self.date, self.region, self.service
        )
    }
}

/// The parts of an `Authorization: AWS4-HMAC-SHA256 ...` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationHeader {
    /// The raw `Credential=` value, parsed later so that its errors can be told apart.
    pub credential: String,
    /// `SignedHeaders=` exactly as sent (`;`-separated, lower case).
    pub signed_headers: String,
    pub signature: String,
}

impl AuthorizationHeader {
    /// Parses the header value; `None` when it is not a well-formed SigV4 header.
    pub fn parse(value: &str) -> Option<Self> {
        let rest = value.strip_prefix(ALGORITHM)?;
        if !rest.starts_with(' ') {
            return None;
        }
        let (mut credential, mut signed_headers, mut signature) = (None, None, None);
        for part in rest.split(',') {
            let (key, val) = part.trim().split_once('=')?;
            let slot = match key {
                "Credential" => &mut credential,
                "SignedHeaders" => &mut signed_headers,
                "Signature" => &mut signature,
                _ => return None,
            };
            if slot.replace(val.trim().to_owned()).is_some() {
                return None;
            }
        }
        Some(Self {
            credential: credential?,
            signed_headers: signed_headers.filter(|s| !s.is_empty())?,
            signature: signature?,
        })
    }
}

/// Parses an ISO 8601 basic timestamp (`20130524T000000Z`).
pub fn parse_amz_date(value: &str) -> Option<OffsetDateTime> {
    PrimitiveDateTime::parse(value, AMZ_DATE)
        .ok()
        .map(PrimitiveDateTime::assume_utc)
}

/// Formats a timestamp as `20130524T000000Z`, the form the string to sign uses.
pub fn format_amz_date(at: OffsetDateTime) -> String {
    let utc = at.to_offset(time::UtcOffset::UTC);
    utc.format(AMZ_DATE)
        .expect("a four-digit year always formats")
}

/// The `YYYYMMDD` day of a timestamp, as the credential scope must name it.
pub fn scope_date(at: OffsetDateTime) -> String {
    let utc = at.to_offset(time::UtcOffset::UTC);
    utc.format(SCOPE_DATE)
        .expect("a four-digit year always formats")
}

/// AWS URI encoding: the unreserved bytes `A-Za-z0-9-_.~` stay, every other byte becomes
/// `%XX` (upper-case hex); `/` stays only when `encode_slash` is false.
pub fn uri_encode(input: &[u8], encode_slash: bool) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(input.len());
    for &b in input {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else if b == b'/' && !encode_slash {
            out.push('/');
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
    out
}

/// The canonical URI as S3 clients sign it: the path exactly as it arrived in the request
/// target (S3 does not double-encode), `/` when empty.
pub fn canonical_uri(raw_path: &str) -> String {
    if raw_path.is_empty() {
        "/".to_owned()
    } else {
        raw_path.to_owned()
    }
}

/// The path decoded and re-encoded with AWS's rules. A client that sent a byte raw which AWS
/// encoding escapes (`$`, `:`, `@`, ...) or used lower-case hex still signed this form; both
/// forms decode to the same key, so accepting either grants nothing more.
pub fn normalized_uri(raw_path: &str) -> String {
    let decoded: Vec<u8> = percent_decode(raw_path.as_bytes()).collect();
    canonical_uri(&uri_encode(&decoded, false))
}

/// Decodes one query component: `+` means space, as S3 and the SDKs read it.
fn decode_query_component(raw: &str) -> Vec<u8> {
    let spaced = raw.replace('+', " ");
    percent_decode(spaced.as_bytes()).collect()
}

/// The query parameters, decoded, in request order (`key` without `=` has an empty value).
pub fn query_pairs(raw_query: &str) -> Vec<(String, String)> {
    raw_query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (
                String::from_utf8_lossy(&decode_query_component(key)).into_owned(),
                String::from_utf8_lossy(&decode_query_component(value)).into_owned(),
            )
        })
        .collect()
}

/// The canonical query string: every parameter decoded then AWS-encoded, sorted by encoded key
/// then value, `key=value` joined by `&`. A parameter named `exclude` (the presigned
/// `X-Amz-Signature`) is left out.
pub fn canonical_query(raw_query: &str, exclude: Option<&str>) -> String {
    let mut pairs: Vec<(String, String)> = raw_query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = decode_query_component(key);
            if exclude.is_some_and(|name| name.as_bytes() == key.as_slice()) {
                return None;
            }
            let value = decode_query_component(value);
            Some((uri_encode(&key, true), uri_encode(&value, true)))
        })
        .collect();
    pairs.sort();
    let mut out = String::new();
    for (i, (key, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(key);
        out.push('=');
        out.push_str(value);
    }
    out
}

/// Trims a header value and collapses runs of spaces, as the canonical form requires.
fn normalize_header_value(value: &[u8], out: &mut Vec<u8>) {
    let trimmed = value.trim_ascii();
    let mut last_space = false;
    for &b in trimmed {
        let space = b == b' ' || b == b'\t';
        if space && last_space {
            continue;
        }
        out.push(if space { b' ' } else { b });
        last_space = space;
    }
}

/// The canonical headers block: `name:value\n` for every signed header, in the order of
/// `signed_headers`. Repeated headers are joined with `,`. `host` falls back to `authority`
/// because HTTP/2 carries it in the `:authority` pseudo-header. A signed header missing from
/// the request signs as empty, which can only fail the comparison.
pub fn canonical_headers(
    headers: &HeaderMap,
    signed_headers: &[&str],
    authority: Option<&str>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    for &name in signed_headers {
        out.extend_from_slice(name.as_bytes());
        out.push(b':');
        let mut values = headers.get_all(name).iter().peekable();
        if values.peek().is_none() && name == "host" {
            if let Some(authority) = authority {
                normalize_header_value(authority.as_bytes(), &mut out);
            }
        }
        let mut first = true;
        for value in values {
            if !first {
                out.push(b',');
            }
            first = false;
            normalize_header_value(value.as_bytes(), &mut out);
        }
        out.push(b'\n');
    }
    out
}

/// The inputs of one canonical request.
pub struct CanonicalRequest<'a> {
    pub method: &'a Method,
    /// Already in canonical form (see [`canonical_uri`]).
    pub uri: &'a str,
    /// Already in canonical form (see [`canonical_query`]).
    pub query: &'a str,
    pub headers: &'a HeaderMap,
    /// The `SignedHeaders` list as sent.
    pub signed_headers: &'a str,
    /// `:authority` of the request, used for `host` when no Host header came.
    pub authority: Option<&'a str>,
    /// The `x-amz-content-sha256` value (or `UNSIGNED-PAYLOAD` for presigned URLs).
    pub payload_hash: &'a str,
}

impl CanonicalRequest<'_> {
    /// The canonical request bytes (header values may be any bytes, so not a `String`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let names: Vec<&str> = self.signed_headers.split(';').collect();
        let mut out = Vec::with_capacity(512);
        for part in [self.method.as_str(), self.uri, self.query] {
            out.extend_from_slice(part.as_bytes());
            out.push(b'\n');
        }
        out.extend_from_slice(&canonical_headers(self.headers, &names, self.authority));
        out.push(b'\n');
        out.extend_from_slice(self.signed_headers.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(self.payload_hash.as_bytes());
        out
    }
}

/// Lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// The string to sign of a request.
pub fn string_to_sign(amz_date: &str, scope: &str, canonical_request: &[u8]) -> String {
    format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request)
    )
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// The signing key: HMAC chain over date, region, service and `aws4_request`.
pub fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> [u8; 32] {
    let k_secret = format!("AWS4{secret}");
    let k_date = hmac_sha256(k_secret.as_bytes(), date.as_bytes());
    let k_region = hmac_sha256(&k_date, region.as_bytes());
    let k_service = hmac_sha256(&k_region, service.as_bytes());
    hmac_sha256(&k_service, TERMINATOR.as_bytes())
}

/// The lower-case hex signature of `string_to_sign`.
pub fn sign(key: &[u8; 32], string_to_sign: &str) -> String {
    hex::encode(hmac_sha256(key, string_to_sign.as_bytes()))
}

/// Compares a computed hex signature with the one the client sent, in constant time.
pub fn signatures_match(computed_hex: &str, provided_hex: &str) -> bool {
    let (Ok(computed), Ok(provided)) = (hex::decode(computed_hex), hex::decode(provided_hex))
    else {
        return false;
    };
    computed.len() == 32 && bool::from(computed.ct_eq(&provided))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const DATE: &str = "20130524T000000Z";
    const SCOPE: &str = "20130524/us-east-1/s3/aws4_request";

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    /// Signs one request of the AWS S3 SigV4 examples ("sig-v4-header-based-auth").
    fn example_signature(
        method: Method,
        raw_path: &str,
        raw_query: &str,
        extra: &[(&'static str, &'static str)],
        signed_headers: &str,
        payload_hash: &'static str,
    ) -> String {
        let mut map = headers(extra);
        map.insert(
            "host",
            HeaderValue::from_static("examplebucket.s3.amazonaws.com"),
        );
        map.insert("x-amz-date", HeaderValue::from_static(DATE));
        map.insert(
            "x-amz-content-sha256",
            HeaderValue::from_static(payload_hash),
        );
        let uri = canonical_uri(raw_path);
        let query = canonical_query(raw_query, None);
        let creq = CanonicalRequest {
            method: &method,
            uri: &uri,
            query: &query,
            headers: &map,
            signed_headers,
            authority: None,
            payload_hash,
        };
        let key = signing_key(SECRET, "20130524", "us-east-1", "s3");
        sign(&key, &string_to_sign(DATE, SCOPE, &creq.to_bytes()))
    }

    #[test]
    fn aws_example_get_object_with_range() {
        let sig = example_signature(
            Method::GET,
            "/test.txt",
            "",
            &[("range", "bytes=0-9")],
            "host;range;x-amz-content-sha256;x-amz-date",
            EMPTY_SHA256_HEX,
        );
        assert_eq!(
            sig,
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn aws_example_put_object() {
        let body_hash = sha256_hex(b"Welcome to Amazon S3.");
        assert_eq!(
            body_hash,
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
        );
        let sig = example_signature(
            Method::PUT,
            "/test%24file.text",
            "",
            &[
                ("date", "Fri, 24 May 2013 00:00:00 GMT"),
                ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ],
            "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
        );
        assert_eq!(
            sig,
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
        );
    }

    #[test]
    fn aws_example_get_bucket_lifecycle() {
        let sig = example_signature(
            Method::GET,
            "/",
            "lifecycle",
            &[],
            "host;x-amz-content-sha256;x-amz-date",
            EMPTY_SHA256_HEX,
        );
        assert_eq!(
            sig,
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
        );
    }

    #[test]
    fn aws_example_list_objects() {
        let sig = example_signature(
            Method::GET,
            "/",
            "prefix=J&max-keys=2",
            &[],
            "host;x-amz-content-sha256;x-amz-date",
            EMPTY_SHA256_HEX,
        );
        assert_eq!(
            sig,
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
        );
    }

    #[test]
    fn aws_example_presigned_url() {
        let query = "X-Amz-Algorithm=AWS4-HMAC-SHA256\
            &X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request\
            &X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host\
            &X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
        let canonical = canonical_query(query, Some("X-Amz-Signature"));
        assert!(!canonical.contains("X-Amz-Signature"));
        let map = headers(&[("host", "examplebucket.s3.amazonaws.com")]);
        let creq = CanonicalRequest {
            method: &Method::GET,
            uri: "/test.txt",
            query: &canonical,
            headers: &map,
            signed_headers: "host",
            authority: None,
            payload_hash: "UNSIGNED-PAYLOAD",
        };
        let key = signing_key(SECRET, "20130524", "us-east-1", "s3");
        let sig = sign(&key, &string_to_sign(DATE, SCOPE, &creq.to_bytes()));
        assert_eq!(
            sig,
            "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
        );
    }

    #[test]
    fn uri_encoding_follows_aws_rules() {
        let cases: &[(&[u8], bool, &str)] = &[
            (b"a b", true, "a%20b"),
            (b"a+b", true, "a%2Bb"),
            (b"a/b", false, "a/b"),
            (b"a/b", true, "a%2Fb"),
            (b"A-z_0.9~", true, "A-z_0.9~"),
            (b"$!'()*=&", true, "%24%21%27%28%29%2A%3D%26"),
            ("ключ".as_bytes(), true, "%D0%BA%D0%BB%D1%8E%D1%87"),
            (&[0xff, 0x00], true, "%FF%00"),
        ];
        for (input, encode_slash, want) in cases {
            assert_eq!(uri_encode(input, *encode_slash), *want);
        }
    }

    #[test]
    fn canonical_query_decodes_sorts_and_reencodes() {
        let cases = [
            ("", ""),
            ("acl", "acl="),
            ("b=2&a=x+y&a=%2B&c=", "a=%2B&a=x%20y&b=2&c="),
            (
                "prefix=photos%2f2024&delimiter=/",
                "delimiter=%2F&prefix=photos%2F2024",
            ),
            ("k=%7e&&k2=a%20b", "k=~&k2=a%20b"),
            ("X-Amz-Signature=abc&x=1", "x=1"),
        ];
        for (raw, want) in cases {
            assert_eq!(
                canonical_query(raw, Some("X-Amz-Signature")),
                want,
                "query {raw:?}"
            );
        }
    }

    #[test]
    fn normalized_uri_reencodes_what_clients_leave_raw() {
        assert_eq!(normalized_uri("/b/a$b:c@d"), "/b/a%24b%3Ac%40d");
        assert_eq!(normalized_uri("/b/%7euser/a%2bb"), "/b/~user/a%2Bb");
        assert_eq!(normalized_uri(""), "/");
    }

    #[test]
    fn header_values_are_trimmed_and_collapsed() {
        let map = headers(&[
            ("x-amz-meta-a", "  one   two  "),
            ("x-amz-meta-b", "1"),
            ("x-amz-meta-b", " 2 "),
        ]);
        let block = canonical_headers(&map, &["host", "x-amz-meta-a", "x-amz-meta-b"], Some("h:9"));
        assert_eq!(block, b"host:h:9\nx-amz-meta-a:one two\nx-amz-meta-b:1,2\n");
    }

    #[test]
    fn authorization_header_parses_with_and_without_spaces() {
        let compact = "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request,\
                       SignedHeaders=host;x-amz-date,Signature=abcd";
        let spaced = "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, \
                      SignedHeaders=host;x-amz-date, Signature=abcd";
        for value in [compact, spaced] {
            let parsed = AuthorizationHeader::parse(value).expect("parses");
            assert_eq!(parsed.signed_headers, "host;x-amz-date");
            assert_eq!(parsed.signature, "abcd");
        }
        for bad in [
            "AWS4-HMAC-SHA256",
            "AWS4-HMAC-SHA256Credential=a,SignedHeaders=h,Signature=s",
            "AWS4-HMAC-SHA256 Credential=a,SignedHeaders=h",
            "AWS4-HMAC-SHA256 Credential=a,SignedHeaders=h,Signature=s,Signature=t",
            "AWS4-HMAC-SHA256 Credential=a,SignedHeaders=h,Signature=s,Extra=1",
            "AWS AKIA:sig",
        ] {
            assert_eq!(AuthorizationHeader::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn credential_scope_parses_five_components() {
        let scope = CredentialScope::parse("AKIA/20130524/us-east-1/s3/aws4_request").expect("ok");
        assert_eq!(scope.access_key, "AKIA");
        assert_eq!(scope.scope(), SCOPE);
        let slashed = CredentialScope::parse("a/b/20130524/eu/s3/aws4_request").expect("ok");
        assert_eq!(slashed.access_key, "a/b");
        for bad in [
            "AKIA/20130524/us-east-1/s3",
            "AKIA/20130524/us-east-1/s3/aws5_request",
            "AKIA/2013052/us-east-1/s3/aws4_request",
            "/20130524/us-east-1/s3/aws4_request",
            "AKIA/20130524//s3/aws4_request",
        ] {
            assert_eq!(CredentialScope::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn amz_dates_round_trip() {
        let at = parse_amz_date(DATE).expect("valid");
        assert_eq!(format_amz_date(at), DATE);
        assert_eq!(scope_date(at), "20130524");
        assert!(parse_amz_date("2013-05-24T00:00:00Z").is_none());
        assert!(parse_amz_date("20130524T000000").is_none());
    }

    #[test]
    fn signature_comparison_needs_exact_hex() {
        let sig = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
        assert!(signatures_match(sig, sig));
        assert!(signatures_match(sig, &sig.to_uppercase()));
        assert!(!signatures_match(sig, &sig[..62]));
        assert!(!signatures_match(sig, "zz"));
        assert!(!signatures_match(sig, &sig.replace('f', "e")));
    }
}
