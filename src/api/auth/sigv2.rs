//! AWS Signature Version 2: HMAC-SHA1 over a string to sign built from the verb, three
//! standard headers, the `x-amz-` headers and the resource. boto3 and the aws CLI still use it
//! for presigned URLs and POST forms unless told otherwise, so it is verified here as pure
//! functions, tested on the examples AWS publishes; `super` decides when it applies.

use axum::http::{HeaderMap, Method};
use base64::Engine;
use hmac::{Hmac, Mac};
use subtle::ConstantTimeEq;

/// The query parameters that are part of the resource signed, as clients sign them.
const SUB_RESOURCES: [&str; 37] = [
    "accelerate",
    "acl",
    "analytics",
    "cors",
    "defaultObjectAcl",
    "delete",
    "inventory",
    "legal-hold",
    "lifecycle",
    "location",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "partNumber",
    "policy",
    "replication",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "retention",
    "select",
    "select-type",
    "storageClass",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
];

/// Parameters that pick an operation but are not among the sub-resources SigV2 signs: a
/// signature made for `DELETE /bucket` would also cover `DELETE /bucket?publicAccessBlock`.
/// AWS takes only SigV4 for these operations, and so does this server.
const UNSIGNED_SELECTORS: [&str; 5] = [
    "attributes",
    "encryption",
    "ownershipControls",
    "policyStatus",
    "publicAccessBlock",
];

/// The first parameter of `query` that selects an operation SigV2 cannot sign.
pub fn unsigned_selector(query: &[(String, String)]) -> Option<&str> {
    (query.iter())
        .map(|(name, _)| name.as_str())
        .find(|name| UNSIGNED_SELECTORS.contains(name))
}

/// `CanonicalizedResource`: the path as sent (with `/bucket` in front for a virtual-hosted
/// request), then the sub-resources of the query, sorted, with decoded values.
pub fn canonical_resource(path: &str, query: &[(String, String)]) -> String {
    let mut subs: Vec<&(String, String)> = (query.iter())
        .filter(|(name, _)| SUB_RESOURCES.contains(&name.as_str()))
        .collect();
    subs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = path.to_string();
    for (i, (name, value)) in subs.into_iter().enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        out.push_str(name);
        if !value.is_empty() {
            out.push('=');
            out.push_str(value);
        }
    }
    out
}

/// `CanonicalizedAmzHeaders`: every `x-amz-` header (and, for a presigned URL, query
/// parameter), lower-cased and sorted, repeated values joined with commas, each line ending
/// in a newline.
pub fn canonical_amz_headers<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut headers: Vec<(String, Vec<String>)> = Vec::new();
    for (name, value) in pairs {
        let name = name.to_ascii_lowercase();
        if !name.starts_with("x-amz-") {
            continue;
        }
        let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        match headers.iter_mut().find(|(n, _)| *n == name) {
            Some((_, values)) => values.push(value),
            None => headers.push((name, vec![value])),
        }
    }
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    (headers.into_iter())
        .map(|(name, values)| format!("{name}:{}\n", values.join(",")))
        .collect()
}

/// The string to sign: the verb, `Content-MD5`, `Content-Type`, the date (the `Date`
/// header, empty when `x-amz-date` is sent, or a presigned URL's `Expires`), then the
/// canonical `x-amz-` headers and resource.
pub fn string_to_sign(
    method: &Method,
    content_md5: &str,
    content_type: &str,
    date: &str,
    amz_headers: &str,
    resource: &str,
) -> String {
    format!("{method}\n{content_md5}\n{content_type}\n{date}\n{amz_headers}{resource}")
}

/// The base64 HMAC-SHA1 of `string_to_sign` with the secret key.
pub fn sign(secret: &str, string_to_sign: &str) -> String {
    let mut mac =
        Hmac::<sha1::Sha1>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(string_to_sign.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Compares a computed signature with the one sent, in constant time.
pub fn signatures_match(computed: &str, provided: &str) -> bool {
    computed.len() == provided.len() && bool::from(computed.as_bytes().ct_eq(provided.as_bytes()))
}

/// A header's value as text, or empty.
pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The secret of AWS's examples.
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

    fn query(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        (pairs.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn aws_examples_sign_as_published() {
        // Object GET, object PUT, and a query-string (presigned) GET, from AWS's
        // "Signing and Authenticating REST Requests".
        let get = string_to_sign(
            &Method::GET,
            "",
            "",
            "Tue, 27 Mar 2007 19:36:42 +0000",
            "",
            &canonical_resource("/johnsmith/photos/puppy.jpg", &[]),
        );
        assert_eq!(sign(SECRET, &get), "bWq2s1WEIj+Ydj0vQ697zp+IXMU=");
        let put = string_to_sign(
            &Method::PUT,
            "",
            "image/jpeg",
            "Tue, 27 Mar 2007 21:15:45 +0000",
            "",
            "/johnsmith/photos/puppy.jpg",
        );
        assert_eq!(sign(SECRET, &put), "MyyxeRY7whkBe+bq8fHCL/2kKUg=");
        let presigned = string_to_sign(
            &Method::GET,
            "",
            "",
            "1175139620",
            "",
            "/johnsmith/photos/puppy.jpg",
        );
        assert_eq!(sign(SECRET, &presigned), "NpgCjnDzrM+WFzoENXmpNDUsSn8=");
    }

    #[test]
    fn sub_resources_are_sorted_and_other_parameters_left_out() {
        let q = query(&[
            ("versionId", "v 1"),
            ("prefix", "x"),
            ("acl", ""),
            ("AWSAccessKeyId", "AK"),
        ]);
        assert_eq!(canonical_resource("/b/k", &q), "/b/k?acl&versionId=v 1");
        assert_eq!(canonical_resource("/b/", &[]), "/b/");
    }

    #[test]
    fn amz_headers_are_lower_cased_sorted_and_joined() {
        let pairs = [
            ("X-Amz-Meta-ReviewedBy", "joe@example.com"),
            ("x-amz-meta-reviewedby", "jane@example.com"),
            ("Content-Type", "text/plain"),
            ("x-amz-acl", "public-read"),
            ("x-amz-meta-note", "  two   words "),
        ];
        assert_eq!(
            canonical_amz_headers(pairs.into_iter()),
            "x-amz-acl:public-read\nx-amz-meta-note:two words\n\
             x-amz-meta-reviewedby:joe@example.com,jane@example.com\n"
        );
    }

    #[test]
    fn signatures_compare_whole() {
        assert!(signatures_match("abc=", "abc="));
        assert!(!signatures_match("abc=", "abd="));
        assert!(!signatures_match("abc=", "abc"));
    }
}
