//! The S3 protocol: SigV4 and its payload forms ([`auth`], which the front door in
//! `crate::server` calls before anything costs), routing, the permissions each operation
//! needs, XML and S3 errors. [`serve`] turns a request into a typed [`router::Endpoint`],
//! has `crate::iam` decide whether its caller may make it, calls the object layer and
//! renders the answer. It knows nothing of shards or drives, nor of the admin API.

pub mod acl;
pub mod auth;
mod cors;
mod encoded_words;
pub mod error;
#[cfg(test)]
mod fuzz_tests;
mod handlers;
pub(crate) mod headers;
pub mod permissions;
mod post_policy;
pub mod router;
pub mod sse;
mod xml;

use std::sync::Arc;

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use crate::body::{ByteStream, TrailerSlot};
use crate::object::ObjectStore;
use error::{S3Error, S3ErrorCode};

/// What every S3 request handler can reach.
pub struct S3State {
    pub store: Arc<ObjectStore>,
    pub keyring: auth::Keyring,
    /// Name shown as the owner of buckets and objects (the root user).
    pub owner: String,
    /// The Object Ownership of a bucket created without one (`--default-object-ownership`).
    pub default_ownership: crate::object::acl::ObjectOwnership,
    /// Host name under which `bucket.DOMAIN` addresses a bucket (virtual-hosted style).
    pub domain: Option<String>,
    /// Users and policies (the keyring looks users' keys up there too).
    pub iam: Arc<crate::iam::Iam>,
    /// The longest retention a request may set (`STRATA_MAX_RETENTION_DAYS`).
    pub max_retention_days: Option<u32>,
    /// Whether the server serves HTTPS (`aws:SecureTransport`).
    pub tls: bool,
    /// Whether SSE-C keys are taken: over HTTPS, or plain HTTP when the operator allows it
    /// (`STRATA_SSE_C_ALLOW_HTTP`, for loopback and tests).
    pub sse_c_allowed: bool,
    /// How long a lifecycle day lasts (for `x-amz-expiration`).
    pub lifecycle_day: std::time::Duration,
    /// Buckets' lifecycle rules, parsed (for `x-amz-expiration`).
    pub lifecycle_configs: crate::object::ParsedByRevision<crate::lifecycle::LifecycleConfig>,
}

impl S3State {
    /// The canonical ID of the owner of every bucket (the root user), as listings show it.
    pub fn owner_id(&self) -> String {
        crate::iam::canonical_id(&self.owner)
    }
}

/// Refuses a request that names the owner it expects of the bucket it addresses
/// (`x-amz-expected-bucket-owner`) or of a copy's source bucket
/// (`x-amz-source-expected-bucket-owner`) when that bucket has another; a bucket that does
/// not exist is left to the handler to answer.
async fn owners_as_expected(state: &S3State, parts: &Parts) -> Result<(), S3Error> {
    let addressed = router::bucket_and_key(&parts.uri, &parts.headers, state.domain.as_deref())
        .ok()
        .map(|(bucket, _)| bucket);
    let source = router::copy_source(&parts.headers).map(|source| source.bucket);
    let expected = [
        ("x-amz-expected-bucket-owner", addressed),
        ("x-amz-source-expected-bucket-owner", source),
    ];
    for (header, bucket) in expected {
        let Some(id) = headers::header(&parts.headers, header) else {
            continue;
        };
        let Some(name) = bucket.and_then(|b| crate::object::BucketName::parse(&b).ok()) else {
            continue;
        };
        let owner = match state.store.bucket(&name).await {
            Ok(record) => acl::bucket_owner(state, &record.settings),
            Err(crate::object::ObjectError::NoSuchBucket) => continue,
            Err(e) => return Err(e.into()),
        };
        if id.trim() != owner {
            return Err(S3Error::from_code(S3ErrorCode::AccessDenied));
        }
    }
    Ok(())
}

/// Answers an S3 request whose signature the front door checked (`auth` is `None` for an
/// unsigned one): routes it, authorises it and calls its handler. Returns the operation's
/// name with the answer.
pub async fn serve(
    state: &S3State,
    parts: &Parts,
    raw: ByteStream,
    auth: Option<auth::Authenticated>,
) -> (&'static str, Result<Response, S3Error>) {
    let endpoint = match router::parse(
        &parts.method,
        &parts.uri,
        &parts.headers,
        state.domain.as_deref(),
    ) {
        Ok(endpoint) => endpoint,
        Err(err) if auth.is_some() => return ("NotImplemented", Err(err)),
        // Unsigned requests learn nothing of what the server implements.
        Err(_) => {
            return (
                "Anonymous",
                Err(S3Error::from_code(S3ErrorCode::AccessDenied)),
            )
        }
    };
    let auth = auth.unwrap_or_else(auth::Authenticated::anonymous);
    let query = router::Query::parse(parts.uri.query());
    let source_ip = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|connected| connected.0.ip());
    // Every request is authorised, signed or not, except those that authenticate themselves
    // (a CORS preflight, a POST Object form).
    if !endpoint.is_anonymous() {
        let info = permissions::RequestInfo {
            headers: &parts.headers,
            query: &query,
            source_ip,
            secure: state.tls,
        };
        if let Err(err) =
            permissions::authorize(&state.store, &state.iam, &auth.identity, &endpoint, &info).await
        {
            return (endpoint.name(), Err(err));
        }
    }
    if let Err(err) = owners_as_expected(state, parts).await {
        return (endpoint.name(), Err(err));
    }
    let trailers = Arc::new(TrailerSlot::default());
    let body = auth::verified_body(raw, &auth, trailers.clone());
    let request = handlers::Request {
        state,
        headers: &parts.headers,
        query,
        body,
        trailers,
        decoded_length: auth.decoded_length,
        signed_for_region: auth.foreign_region.clone(),
        identity: auth.identity.clone(),
        source_ip,
    };
    let name = endpoint.name();
    (name, handlers::call(endpoint, request).await)
}

/// The bucket and `Origin` of a browser's actual (not preflight) request to a bucket.
pub fn browser_request(
    state: &S3State,
    method: &axum::http::Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> Option<(String, String)> {
    let origin = headers.get("origin")?.to_str().ok()?;
    if method == axum::http::Method::OPTIONS {
        return None;
    }
    let (bucket, _) = router::bucket_and_key(uri, headers, state.domain.as_deref()).ok()?;
    (!bucket.is_empty()).then(|| (bucket, origin.to_string()))
}

/// The CORS headers the bucket's rules give a browser's actual request, if any rule allows it.
pub async fn cors_headers(
    state: &S3State,
    bucket: &str,
    origin: &str,
    method: &str,
) -> Option<axum::http::HeaderMap> {
    let name = crate::object::BucketName::parse(bucket).ok()?;
    let record = state.store.bucket(&name).await.ok()?;
    let rules = record.settings.cors.as_ref()?;
    let rule = cors::matching_rule(rules, origin, method, &[])?;
    Some(cors::allow_headers(rule, origin, None))
}

/// A 200 response with an XML document.
fn xml_response(body: String) -> Response {
    ([("content-type", "application/xml")], Body::from(body)).into_response()
}
