//! The front door: every HTTP request comes in here. Load-balancer probes and Prometheus
//! scrapes are answered first; every other request is authenticated before anything costs
//! (a place under the request limit, its body), then handed to the admin API or to S3. Each
//! answer gets its request id, its log line and its metrics here.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use futures::TryStreamExt;
use tracing::Instrument;

use super::limit;
use crate::admin::{api as admin_api, health};
use crate::api::error::{S3Error, S3ErrorCode};
use crate::api::{self, auth, router};
use crate::body::ByteStream;
use crate::server::metrics::Metrics;

/// The server's one state value: what S3 requests, the admin API and the front door reach.
pub struct AppState {
    pub s3: api::S3State,
    pub admin: admin_api::AdminState,
    /// Request counts and latencies, and the `/metrics` settings.
    pub metrics: Arc<Metrics>,
    /// S3 requests in flight at most (`STRATA_MAX_REQUESTS`); beyond it, `SlowDown`.
    pub limit: limit::RequestLimit,
    /// Unsigned requests in flight at most, apart from signed ones (an eighth as many).
    pub anonymous_limit: limit::RequestLimit,
    /// Whether the root credentials are the public defaults: browsers are then refused.
    pub default_credentials: bool,
}

/// The HTTP service: every request goes through [`handle`].
pub fn router(state: Arc<AppState>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(state)
}

/// A request's blocking drive work started together crosses to the blocking pool together
/// (see [`handoff`](crate::storage::handoff)).
async fn handle(state: State<Arc<AppState>>, request: Request) -> Response {
    crate::storage::handoff::together(serve(state, request)).await
}

async fn serve(State(state): State<Arc<AppState>>, request: Request) -> Response {
    // Load-balancer probes: unsigned, frequent, and kept out of the request log.
    if let Some(probe) = health::probe(&request) {
        let control = state.admin.control.as_deref();
        return health::answer(
            probe,
            &state.admin.deployment,
            state.s3.store.sets(),
            control,
        );
    }
    // Prometheus scrapes: unsigned, answered before S3 routing, kept out of the request log.
    if crate::server::metrics::may_be_scrape(&request) && addresses_metrics(&state, &request) {
        let sources = crate::server::metrics::Sources {
            deployment: &state.admin.deployment,
            healer: &state.admin.healer,
            store: &state.s3.store,
            lifecycle: &state.admin.lifecycle_status,
            drains: &state.admin.drains,
            rebalancing: &state.admin.rebalancing,
        };
        return crate::server::metrics::answer(&state.metrics, sources, request.headers()).await;
    }
    // With the public default credentials, any web page the user opens could sign a form
    // or a request to this server: nothing a browser sends is served.
    if state.default_credentials && from_a_web_page(request.headers()) {
        let refusal = S3Error::new(
            S3ErrorCode::AccessDenied,
            "This server uses its default credentials, so it refuses requests from web pages: \
             set STRATA_ROOT_USER and STRATA_ROOT_PASSWORD.",
        );
        let mut response = refusal.into_response();
        response
            .headers_mut()
            .insert("connection", HeaderValue::from_static("close"));
        return response;
    }
    // The signature is checked before anything costs: a request that fails it takes no
    // place under the limit, and its body is not read (the connection closes).
    let auth = auth::authenticate(
        request.method(),
        request.uri(),
        request.headers(),
        &state.s3.keyring,
        state.s3.domain.as_deref(),
        time::OffsetDateTime::now_utc(),
    );
    answer(&state, request, auth).await
}

/// Answers an S3 request the console makes for the user signed in to it: from here on the
/// path of a request that user signed (the limits, authorisation, log line and metrics),
/// with no signature to check and its body taken as sent.
pub async fn answer_as(
    state: &AppState,
    request: Request,
    identity: auth::Identity,
    access_key: String,
) -> Response {
    let auth = auth::Authenticated {
        access_key,
        identity,
        payload: auth::PayloadCheck::Unverified,
        decoded_length: None,
        foreign_region: None,
    };
    let mut request = request;
    request.extensions_mut().insert(ConsoleCall);
    answer(state, request, Ok(Some(auth))).await
}

/// Marks a request the console made for its signed-in user: no client can set it. The
/// console checked its session's CSRF token and origin, which stand for the header signature
/// the admin API otherwise asks of a request (a browser cannot be made to send either).
#[derive(Clone, Copy)]
struct ConsoleCall;

/// Answers a request whose signature was judged (`auth`).
async fn answer(
    state: &AppState,
    request: Request,
    auth: Result<Option<auth::Authenticated>, S3Error>,
) -> Response {
    let started = Instant::now();
    let request_id = format!("{:016X}", rand::random::<u64>());
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let received = crate::server::metrics::request_bytes(request.headers());
    let (bucket, key) =
        router::bucket_and_key(request.uri(), request.headers(), state.s3.domain.as_deref())
            .unwrap_or_default();
    // Unsigned requests have a small share of the places of their own, so that they cannot
    // take every place from signed ones. Beyond the limit the answer is at once, the body
    // left unread (and the connection closed).
    let permit = match &auth {
        Ok(Some(_)) => state.limit.try_acquire(),
        Ok(None) => state.anonymous_limit.try_acquire(),
        Err(_) => None,
    };
    let mut close_connection = expects_continue_without_body(request.headers())
        || (permit.is_none() && auth.is_ok() && limit::announces_body(request.headers()));
    let cors_request = api::browser_request(
        &state.s3,
        request.method(),
        request.uri(),
        request.headers(),
    )
    .filter(|_| permit.is_some());
    // Every line logged while the request is handled carries its id. Error level, so the span
    // is enabled under any STRATA_LOG filter that lets a line through.
    let span = tracing::error_span!("request", %request_id);
    let (operation, result, unread_body) = match (auth, &permit) {
        (Err(err), _) => {
            dispatch(state, request, Err(err))
                .instrument(span.clone())
                .await
        }
        (Ok(auth), Some(_)) => {
            dispatch(state, request, Ok(auth))
                .instrument(span.clone())
                .await
        }
        (Ok(_), None) => (
            "SlowDown",
            Err(S3Error::from_code(S3ErrorCode::SlowDown)),
            false,
        ),
    };
    close_connection |= unread_body;
    let mut response = match result {
        Ok(response) => response,
        Err(mut err) => {
            err.request_id = Some(request_id.clone());
            if err.resource.is_none() {
                err.resource = Some(path.clone());
            }
            if err.code == S3ErrorCode::InternalError {
                // The cause goes to the log; the client gets S3's generic message.
                tracing::error!(%request_id, error = %err, "internal error");
                err.message = S3Error::from_code(S3ErrorCode::InternalError).message;
            }
            err.into_response()
        }
    };
    if let Some((bucket, origin)) = cors_request {
        if let Some(allowed) = api::cors_headers(&state.s3, &bucket, &origin, method.as_str())
            .instrument(span.clone())
            .await
        {
            response.headers_mut().extend(allowed);
        }
    }
    let headers = response.headers_mut();
    headers.insert(
        "x-amz-request-id",
        HeaderValue::from_str(&request_id).expect("hex is a valid header"),
    );
    headers.insert("server", HeaderValue::from_static("Strata"));
    if close_connection {
        headers.insert("connection", HeaderValue::from_static("close"));
    }
    tracing::info!(
        %request_id,
        %method,
        %path,
        operation,
        bucket = Some(bucket.as_str()).filter(|b| !b.is_empty()),
        key = Some(key.as_str()).filter(|k| !k.is_empty()),
        status = response.status().as_u16(),
        millis = started.elapsed().as_millis() as u64,
        "request"
    );
    state
        .metrics
        .record(operation, &response, started.elapsed(), received);
    limit::until_sent(response, permit, span)
}

/// Answers a request; `true` when its connection must close because a body the client was
/// told not to send (no `100 Continue`) was left unread.
async fn dispatch(
    state: &AppState,
    request: Request,
    auth: Result<Option<auth::Authenticated>, S3Error>,
) -> (&'static str, Result<Response, S3Error>, bool) {
    let (parts, body) = request.into_parts();
    let raw = SharedBody::new(body);
    // Refused, a signed request's body is read (clients send it whole before they read the
    // answer; closing on them mid-send turns a clean S3 error into a broken pipe). One that
    // is unsigned or whose signature failed gets a smaller share of the server's time (a
    // browser's form upload is signed in its form: it counts as signed).
    let (drain_limit, drain_time) = match &auth {
        Ok(Some(_)) => (DRAIN_LIMIT, DRAIN_TIMEOUT),
        Ok(None) if is_form_post(&parts) => (DRAIN_LIMIT, DRAIN_TIMEOUT),
        _ => (UNSIGNED_DRAIN_LIMIT, UNSIGNED_DRAIN_TIMEOUT),
    };
    let (operation, result) = match auth {
        Ok(auth) => authenticated_dispatch(state, &parts, raw.clone(), auth).await,
        Err(err) => ("Unauthenticated", Err(err)),
    };
    // A body announced longer than the drain limit would be cut off anyway: the answer goes
    // out at once.
    let drainable = api::headers::header(&parts.headers, "content-length")
        .and_then(|v| v.parse::<u64>().ok())
        .is_none_or(|length| length <= drain_limit as u64);
    // With `Expect: 100-continue`, a body nobody started to read was never asked for: reading
    // it now would send the `100 Continue` the refusal is meant to spare. Answer at once and
    // close instead.
    let unasked = expects_continue(&parts.headers) && !raw.started();
    if result.is_err() && drainable && !unasked {
        raw.drain(drain_limit, drain_time).await;
    }
    let close = result.is_err() && unasked;
    (operation, result, close)
}

async fn authenticated_dispatch(
    state: &AppState,
    parts: &axum::http::request::Parts,
    raw: SharedBody,
    auth: Option<auth::Authenticated>,
) -> (&'static str, Result<Response, S3Error>) {
    if addresses_admin(&parts.uri, &parts.headers, state.s3.domain.as_deref()) {
        // The admin API takes only requests signed in their headers with the SHA-256 of
        // their body: no presigned URL (which a browser can be made to open), no unsigned
        // body (which a relay could change). Refusals are S3's, as for any failed signature.
        let header_signed = parts
            .headers
            .contains_key(axum::http::header::AUTHORIZATION);
        let from_console = parts.extensions.get::<ConsoleCall>().is_some();
        let auth = auth.filter(|a| {
            let signed_whole = header_signed && matches!(a.payload, auth::PayloadCheck::Sha256(_));
            (signed_whole || from_console) && admin_api::may_call(&a.identity)
        });
        let Some(auth) = auth else {
            return ("Admin", Err(S3Error::from_code(S3ErrorCode::AccessDenied)));
        };
        let body = auth::verified_body(Box::pin(raw), &auth, Arc::default());
        let (name, response) = admin_api::call(&state.admin, &parts.method, &parts.uri, body).await;
        return (name, Ok(response));
    }
    api::serve(&state.s3, parts, Box::pin(raw), auth).await
}

/// Whether the request is for the admin API: its path, in a request that names no bucket by
/// its host (in a virtual-hosted one, the same path is a key of the host's bucket).
fn addresses_admin(uri: &axum::http::Uri, headers: &HeaderMap, domain: Option<&str>) -> bool {
    admin_api::addresses(uri.path()) && router::virtual_host_bucket(uri, headers, domain).is_none()
}

/// Whether the request names `/metrics` itself, not a virtual-hosted bucket's key `metrics`.
fn addresses_metrics(state: &AppState, request: &Request) -> bool {
    let addressed =
        router::bucket_and_key(request.uri(), request.headers(), state.s3.domain.as_deref());
    matches!(addressed, Ok((bucket, key)) if bucket == "metrics" && key.is_empty())
}

/// Whether the request is a form post (a POST Object upload).
fn is_form_post(parts: &axum::http::request::Parts) -> bool {
    parts.method == axum::http::Method::POST
        && api::headers::header(&parts.headers, "content-type")
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("multipart/form-data"))
}

/// Whether a web page made the request: browsers name the page's origin on cross-origin
/// requests and form posts, and say where a request comes from (`Sec-Fetch-Site`) unless the
/// user typed the address.
fn from_a_web_page(headers: &HeaderMap) -> bool {
    let fetched_by_a_site = headers
        .get("sec-fetch-site")
        .is_some_and(|site| site.as_bytes() != b"none");
    headers.contains_key("origin") || fetched_by_a_site
}

/// Bytes of an unread request body read and dropped before an error answer; past this the
/// connection is closed instead.
const DRAIN_LIMIT: usize = 64 << 20;
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// The same for an unsigned request, or one whose signature failed.
const UNSIGNED_DRAIN_LIMIT: usize = 8 << 20;
const UNSIGNED_DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The raw request body, shared between the handler that reads it and the dispatcher that
/// drains what the handler left unread.
#[derive(Clone)]
struct SharedBody(Arc<(std::sync::Mutex<ByteStream>, std::sync::atomic::AtomicBool)>);

impl SharedBody {
    fn new(body: Body) -> Self {
        let stream: ByteStream = Box::pin(body.into_data_stream().map_err(std::io::Error::other));
        let started = std::sync::atomic::AtomicBool::new(false);
        Self(Arc::new((std::sync::Mutex::new(stream), started)))
    }

    /// Whether anything asked for the body yet.
    fn started(&self) -> bool {
        self.0 .1.load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn drain(&self, limit: usize, time: std::time::Duration) {
        let mut drained = 0;
        let _ = tokio::time::timeout(time, async {
            while drained < limit {
                match futures::StreamExt::next(&mut self.clone()).await {
                    Some(Ok(chunk)) => drained += chunk.len(),
                    _ => break,
                }
            }
        })
        .await;
    }
}

impl futures::Stream for SharedBody {
    type Item = std::io::Result<bytes::Bytes>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.0 .1.store(true, std::sync::atomic::Ordering::Relaxed);
        self.0
             .0
            .lock()
            .expect("not poisoned")
            .as_mut()
            .poll_next(cx)
    }
}

/// An empty body announced with `Expect: 100-continue` is answered without a `100 Continue`;
/// some HTTP clients (botocore before 1.43.77) then misread the next response on the same
/// connection, so that connection is closed.
fn expects_continue_without_body(headers: &axum::http::HeaderMap) -> bool {
    let expects = expects_continue(headers);
    let empty = headers
        .get("content-length")
        .is_some_and(|v| v.as_bytes() == b"0");
    expects && empty
}

/// Whether the client waits for `100 Continue` before it sends the body.
fn expects_continue(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get("expect")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_path_style_underscore_requests_go_to_the_admin_api() {
        let headers = |host: &str| {
            let mut h = HeaderMap::new();
            h.insert("host", host.parse().unwrap());
            h
        };
        let uri: axum::http::Uri = "/_strata/admin/v1/info".parse().unwrap();
        assert!(addresses_admin(&uri, &headers("localhost:9000"), None));
        assert!(addresses_admin(
            &uri,
            &headers("localhost:9000"),
            Some("s3.local")
        ));
        // In a virtual-hosted request the path is a key of the host's bucket.
        assert!(!addresses_admin(
            &uri,
            &headers("photos.s3.local"),
            Some("s3.local")
        ));
        let bucket: axum::http::Uri = "/strata/admin/v1/info".parse().unwrap();
        assert!(!addresses_admin(&bucket, &headers("localhost"), None));
    }
}
