//! CORS as S3 does it: a bucket's rules decide which browser origins may call it. The first
//! rule that matches the origin, the method and every requested header applies.

use axum::http::{HeaderMap, HeaderValue};

use super::error::{S3Error, S3ErrorCode};
use super::xml;
use crate::object::CorsRule;

/// Most rules a bucket's CORS configuration may hold, as in S3.
const MAX_RULES: usize = 100;
const METHODS: &[&str] = &["GET", "PUT", "HEAD", "POST", "DELETE"];

/// Checks a PutBucketCors document against S3's rules and turns it into stored rules.
pub fn validate(config: xml::CorsConfiguration) -> Result<Vec<CorsRule>, S3Error> {
    if config.rules.is_empty() || config.rules.len() > MAX_RULES {
        return Err(S3Error::from_code(S3ErrorCode::MalformedXML));
    }
    let invalid = |message: String| S3Error::new(S3ErrorCode::InvalidRequest, message);
    config
        .rules
        .into_iter()
        .map(|rule| {
            if rule.allowed_origins.is_empty() || rule.allowed_methods.is_empty() {
                return Err(S3Error::from_code(S3ErrorCode::MalformedXML));
            }
            if let Some(method) = rule
                .allowed_methods
                .iter()
                .find(|m| !METHODS.contains(&m.as_str()))
            {
                return Err(invalid(format!(
                    "Found unsupported HTTP method in CORS config. Unsupported method is {method}"
                )));
            }
            let patterns = [
                ("AllowedOrigin", &rule.allowed_origins),
                ("AllowedHeader", &rule.allowed_headers),
            ];
            for (element, values) in patterns {
                if let Some(pattern) = values.iter().find(|p| p.matches('*').count() > 1) {
                    return Err(invalid(format!(
                        "{element} \"{pattern}\" can not have more than one wildcard."
                    )));
                }
            }
            Ok(CorsRule {
                id: rule.id,
                allowed_origins: rule.allowed_origins,
                allowed_methods: rule.allowed_methods,
                allowed_headers: rule.allowed_headers,
                expose_headers: rule.expose_headers,
                max_age_seconds: rule.max_age_seconds,
            })
        })
        .collect()
}

/// The stored rules as a GetBucketCors document.
pub fn to_xml(rules: &[CorsRule]) -> xml::CorsConfiguration {
    xml::CorsConfiguration {
        xmlns: (),
        rules: rules
            .iter()
            .map(|r| xml::CorsRule {
                id: r.id.clone(),
                allowed_headers: r.allowed_headers.clone(),
                allowed_methods: r.allowed_methods.clone(),
                allowed_origins: r.allowed_origins.clone(),
                expose_headers: r.expose_headers.clone(),
                max_age_seconds: r.max_age_seconds,
            })
            .collect(),
    }
}

/// `pattern` with at most one `*` standing for any run of characters.
fn wildcard_match(pattern: &str, value: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == value,
        Some((head, tail)) => {
            value.len() >= head.len() + tail.len()
                && value.starts_with(head)
                && value.ends_with(tail)
        }
    }
}

/// The first rule that allows `origin` to use `method` with every header in `headers`.
pub fn matching_rule<'r>(
    rules: &'r [CorsRule],
    origin: &str,
    method: &str,
    headers: &[String],
) -> Option<&'r CorsRule> {
    rules.iter().find(|rule| {
        rule.allowed_origins
            .iter()
            .any(|o| wildcard_match(o, origin))
            && rule.allowed_methods.iter().any(|m| m == method)
            && headers.iter().all(|h| {
                rule.allowed_headers
                    .iter()
                    .any(|a| wildcard_match(&a.to_ascii_lowercase(), &h.to_ascii_lowercase()))
            })
    })
}

/// The headers a browser asks to send in a preflight, lower-cased.
pub fn requested_headers(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all("access-control-request-headers")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect()
}

/// The `Access-Control-*` headers that tell the browser what `rule` allows. A preflight
/// also gets the allowed headers and max age.
pub fn allow_headers(
    rule: &CorsRule,
    origin: &str,
    preflight_headers: Option<&[String]>,
) -> HeaderMap {
    let mut out = HeaderMap::new();
    let mut set = |name: &'static str, value: String| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            out.insert(name, value);
        }
    };
    let any_origin = rule.allowed_origins.iter().any(|o| o == "*");
    if any_origin {
        set("access-control-allow-origin", "*".into());
    } else {
        set("access-control-allow-origin", origin.into());
        set("access-control-allow-credentials", "true".into());
    }
    set(
        "access-control-allow-methods",
        rule.allowed_methods.join(", "),
    );
    if !rule.expose_headers.is_empty() {
        set(
            "access-control-expose-headers",
            rule.expose_headers.join(", "),
        );
    }
    if let Some(requested) = preflight_headers {
        if !requested.is_empty() {
            set("access-control-allow-headers", requested.join(", "));
        }
        if let Some(max_age) = rule.max_age_seconds {
            set("access-control-max-age", max_age.to_string());
        }
    }
    set(
        "vary",
        "Origin, Access-Control-Request-Headers, Access-Control-Request-Method".into(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(origins: &[&str], methods: &[&str], headers: &[&str]) -> CorsRule {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        CorsRule {
            allowed_origins: strings(origins),
            allowed_methods: strings(methods),
            allowed_headers: strings(headers),
            ..CorsRule::default()
        }
    }

    #[test]
    fn origins_match_exactly_or_by_one_wildcard() {
        assert!(wildcard_match(
            "https://app.example.com",
            "https://app.example.com"
        ));
        assert!(!wildcard_match(
            "https://app.example.com",
            "https://evil.example.com"
        ));
        assert!(wildcard_match(
            "https://*.example.com",
            "https://app.example.com"
        ));
        assert!(!wildcard_match(
            "https://*.example.com",
            "https://example.org"
        ));
        assert!(!wildcard_match(
            "https://*.example.com",
            "https:/.example.com"
        ));
        assert!(wildcard_match("*", "http://anything"));
    }

    #[test]
    fn the_first_rule_allowing_origin_method_and_headers_applies() {
        let rules = vec![
            rule(&["https://a.example"], &["GET"], &[]),
            rule(
                &["https://*.example"],
                &["PUT", "GET"],
                &["content-*", "x-amz-*"],
            ),
        ];
        let none: Vec<String> = vec![];
        let some = vec!["content-type".to_string(), "X-Amz-Date".to_string()];
        let first = matching_rule(&rules, "https://a.example", "GET", &none).unwrap();
        assert_eq!(first.allowed_methods, vec!["GET"]);
        let second = matching_rule(&rules, "https://a.example", "PUT", &some).unwrap();
        assert_eq!(second.allowed_methods, vec!["PUT", "GET"]);
        assert!(matching_rule(&rules, "https://a.example", "DELETE", &none).is_none());
        assert!(matching_rule(&rules, "https://b.other", "GET", &none).is_none());
        let unknown = vec!["authorization".to_string()];
        assert!(matching_rule(&rules, "https://b.example", "PUT", &unknown).is_none());
    }

    #[test]
    fn bad_configurations_are_refused_as_s3_does() {
        let config = |rules| xml::CorsConfiguration { xmlns: (), rules };
        let xml_rule = |methods: &[&str], origins: &[&str]| xml::CorsRule {
            id: None,
            allowed_headers: vec![],
            allowed_methods: methods.iter().map(|s| s.to_string()).collect(),
            allowed_origins: origins.iter().map(|s| s.to_string()).collect(),
            expose_headers: vec![],
            max_age_seconds: None,
        };
        let code = |c| validate(c).unwrap_err().code;
        assert_eq!(code(config(vec![])), S3ErrorCode::MalformedXML);
        assert_eq!(
            code(config(vec![xml_rule(&["PATCH"], &["*"])])),
            S3ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(config(vec![xml_rule(&["GET"], &["https://*.*.example"])])),
            S3ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(config(vec![xml_rule(&[], &["*"])])),
            S3ErrorCode::MalformedXML
        );
        assert!(validate(config(vec![xml_rule(&["GET", "PUT"], &["*"])])).is_ok());
    }
}
