//! The web console: a page for people, served by `strata server` on its own address
//! (`--console-address`) from assets built into the binary, so it works with nothing beside
//! it and no internet.
//!
//! It holds no power of its own. A person signs in with an access key and secret of the
//! deployment (the root user's or a user's); the session lives in the server's memory and the
//! browser holds only an opaque `HttpOnly` cookie. Every call the page makes is an S3 request
//! (`/s3/...` here is `/...` on the S3 API) that goes through the server's front door as that
//! user's own, authorised by their policies exactly as a request they signed would be.

pub mod session;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use serde::Deserialize;
use subtle::ConstantTimeEq;

use crate::api::auth::{Identity, Keyring};
use session::{Sessions, SignInLimit};

/// How the console's calls reach the S3 API: the request (path as S3 has it), whose it is,
/// and the access key it is made with. The server answers it as a signed request.
pub type S3Call =
    Arc<dyn Fn(Request, Identity, String) -> BoxFuture<'static, Response> + Send + Sync>;

/// The server's request totals since its start (requests, 5xx answers, summed latency, bytes
/// in and out), which the page's live charts take differences of.
pub type RequestTotals = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

/// The cookie that names a session.
const COOKIE: &str = "strata_console";
/// The header that carries a session's CSRF token on every call that changes anything.
const CSRF_HEADER: &str = "x-strata-csrf";
/// The largest body of the console's own calls (a sign-in, a share link) read.
const CALL_BODY_LIMIT: usize = 4096;

/// The page and its assets, built into the binary.
const INDEX_HTML: &str = include_str!("assets/index.html");
const CONSOLE_JS: &str = include_str!("assets/console.js");
const CONSOLE_CSS: &str = include_str!("assets/console.css");

/// The page may load only its own script and style, talk only to its own origin, and never
/// be framed.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' blob: data:; connect-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";
/// What the S3 API answers through the console never runs as the console: an object that is
/// an HTML page opened here is sandboxed, with no script.
const OBJECT_POLICY: &str =
    "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox";

pub struct Console {
    keyring: Keyring,
    s3: S3Call,
    sessions: Sessions,
    sign_in_limit: SignInLimit,
    /// Served over TLS: the cookie is then `Secure`.
    tls: bool,
    /// Listening on a loopback address: only loopback host names are answered, so that a
    /// web page whose name resolves to 127.0.0.1 (DNS rebinding) cannot reach it.
    loopback: bool,
    /// Where the S3 API listens, which share links name.
    s3_address: SocketAddr,
    totals: RequestTotals,
}

impl Console {
    /// The console on `address`, the S3 API on `s3_address`; both over TLS or neither.
    pub fn new(
        keyring: Keyring,
        (s3, totals): (S3Call, RequestTotals),
        (address, s3_address): (SocketAddr, SocketAddr),
        tls: bool,
    ) -> Self {
        Console {
            keyring,
            s3,
            totals,
            sessions: Sessions::default(),
            sign_in_limit: SignInLimit::default(),
            tls,
            loopback: address.ip().is_loopback(),
            s3_address,
        }
    }
}

/// The console's HTTP service.
pub fn router(console: Arc<Console>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(console)
}

async fn handle(State(console): State<Arc<Console>>, request: Request) -> Response {
    let mut response = answer(&console, request).await;
    let headers = response.headers_mut();
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

async fn answer(console: &Console, request: Request) -> Response {
    if console.loopback && !loopback_host(request.headers()) {
        return refusal(StatusCode::MISDIRECTED_REQUEST, "unknown host name");
    }
    let path = request.uri().path().to_string();
    let method = request.method().clone();
    if path == "/s3" || path.starts_with("/s3/") || path.starts_with("/admin/") {
        return server_call(console, request).await;
    }
    match (&method, path.as_str()) {
        (&Method::GET | &Method::HEAD, "/" | "/index.html") => page(INDEX_HTML, "text/html"),
        (&Method::GET | &Method::HEAD, "/console.js") => page(CONSOLE_JS, "text/javascript"),
        (&Method::GET | &Method::HEAD, "/console.css") => page(CONSOLE_CSS, "text/css"),
        (&Method::POST, "/api/session") => sign_in(console, request).await,
        (&Method::GET, "/api/session") => match signed_in(console, request.headers()) {
            Some((_, session)) => session_answer(&session.access_key, &session.csrf, None),
            None => refusal(StatusCode::UNAUTHORIZED, "not signed in"),
        },
        (&Method::DELETE, "/api/session") => sign_out(console, request.headers()),
        (&Method::POST, "/api/share") => share(console, request).await,
        (&Method::GET, "/api/requests") => request_totals(console, request.headers()),
        _ => refusal(StatusCode::NOT_FOUND, "no such page"),
    }
}

fn page(body: &'static str, content_type: &'static str) -> Response {
    let headers = [
        (
            header::CONTENT_TYPE,
            format!("{content_type}; charset=utf-8"),
        ),
        (header::CONTENT_SECURITY_POLICY, PAGE_POLICY.to_string()),
        (header::CACHE_CONTROL, "no-cache".to_string()),
    ];
    (headers, body).into_response()
}

fn refusal(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({ "error": message }).to_string();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SignIn {
    access_key: String,
    secret_key: String,
}

async fn sign_in(console: &Console, request: Request) -> Response {
    let client = client_ip(&request);
    // A form another site posts cannot be JSON without the browser asking this server first
    // (a CORS preflight, which it does not allow).
    let json = (request.headers().get(header::CONTENT_TYPE))
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !json || !same_origin(request.headers()) {
        return refusal(StatusCode::FORBIDDEN, "sign in from the console's own page");
    }
    if let Some(wait) = console.sign_in_limit.wait(client) {
        let mut response = refusal(
            StatusCode::TOO_MANY_REQUESTS,
            "too many failed sign-ins: wait a minute",
        );
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(wait.as_secs().max(1)),
        );
        return response;
    }
    let Ok(body) = axum::body::to_bytes(request.into_body(), CALL_BODY_LIMIT).await else {
        return refusal(StatusCode::BAD_REQUEST, "the sign-in is too large");
    };
    let Ok(asked) = serde_json::from_slice::<SignIn>(&body) else {
        return refusal(StatusCode::BAD_REQUEST, "expected accessKey and secretKey");
    };
    let matches = console
        .keyring
        .lookup(&asked.access_key)
        .is_some_and(|(secret, _)| {
            bool::from(secret.as_bytes().ct_eq(asked.secret_key.as_bytes()))
        });
    if !matches {
        console.sign_in_limit.failed(client);
        tracing::warn!(%client, access_key = %asked.access_key, "console sign-in refused");
        return refusal(StatusCode::UNAUTHORIZED, "wrong access key or secret key");
    }
    console.sign_in_limit.succeeded(client);
    let (token, session) = console.sessions.open(&asked.access_key, &asked.secret_key);
    tracing::info!(%client, access_key = %asked.access_key, "console sign-in");
    let cookie = format!(
        "{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
        session::LIFETIME.as_secs(),
        if console.tls { "; Secure" } else { "" }
    );
    session_answer(&session.access_key, &session.csrf, Some(cookie))
}

fn session_answer(user: &str, csrf: &str, cookie: Option<String>) -> Response {
    let body = serde_json::json!({ "user": user, "csrf": csrf }).to_string();
    let mut response = ([(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let Some(cookie) = cookie {
        let value = HeaderValue::from_str(&cookie).expect("a token is hex");
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

fn sign_out(console: &Console, headers: &HeaderMap) -> Response {
    let Some((token, session)) = signed_in(console, headers) else {
        return refusal(StatusCode::UNAUTHORIZED, "not signed in");
    };
    if !from_the_page(&session, headers) {
        return refusal(StatusCode::FORBIDDEN, "missing or wrong CSRF token");
    }
    console.sessions.close(&token);
    let mut response = StatusCode::NO_CONTENT.into_response();
    let expired = format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    let value = HeaderValue::from_str(&expired).expect("ASCII");
    response.headers_mut().insert(header::SET_COOKIE, value);
    response
}

/// The server's request totals, for the root user (what the admin API shows, it shows).
fn request_totals(console: &Console, headers: &HeaderMap) -> Response {
    match user_of(console, headers).map(|user| user.identity) {
        Some(Identity::Root) => {
            let body = (console.totals)().to_string();
            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Some(_) => refusal(StatusCode::FORBIDDEN, "the root user's alone"),
        None => sign_in_first(),
    }
}

#[derive(Deserialize)]
struct Share {
    bucket: String,
    key: String,
    /// Seconds the link lives: at most a week, as SigV4 allows.
    expires: u64,
}

/// The longest a share link lives: SigV4's limit.
const MAX_SHARE: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 60 * 60);

/// A share link: a GET of one object presigned with the signed-in user's own key, so that it
/// opens what they may read, for as long as they chose, and no more.
async fn share(console: &Console, request: Request) -> Response {
    let Some(user) = user_of(console, request.headers()) else {
        return sign_in_first();
    };
    if !from_the_page(&user.session, request.headers()) {
        return refusal(StatusCode::FORBIDDEN, "missing or wrong CSRF token");
    }
    let host = request_host(request.headers());
    let Ok(body) = axum::body::to_bytes(request.into_body(), CALL_BODY_LIMIT).await else {
        return refusal(StatusCode::BAD_REQUEST, "the request is too large");
    };
    let Ok(asked) = serde_json::from_slice::<Share>(&body) else {
        return refusal(StatusCode::BAD_REQUEST, "expected bucket, key and expires");
    };
    let expires = std::time::Duration::from_secs(asked.expires);
    if expires.is_zero() || expires > MAX_SHARE {
        return refusal(StatusCode::BAD_REQUEST, "a link lives a second to a week");
    }
    let url = format!(
        "{}/{}/{}",
        console.s3_base(host.as_deref()),
        encode_segment(&asked.bucket),
        asked
            .key
            .split('/')
            .map(encode_segment)
            .collect::<Vec<_>>()
            .join("/")
    );
    let signer = crate::signing::Signer::new(
        &user.session.access_key,
        &user.secret,
        console.keyring.region(),
    );
    match signer.presigned_get(&url, expires, std::time::SystemTime::now()) {
        Ok(link) => {
            let body = serde_json::json!({ "url": link }).to_string();
            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Err(e) => refusal(StatusCode::BAD_REQUEST, &e),
    }
}

impl Console {
    /// The S3 API's URL as the browser reaches it: its address, or, where it listens on
    /// every interface, the host name the browser used for the console.
    fn s3_base(&self, console_host: Option<&str>) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        let port = self.s3_address.port();
        match (self.s3_address.ip().is_unspecified(), console_host) {
            (true, Some(host)) => format!("{scheme}://{host}:{port}"),
            _ => format!("{scheme}://{}", self.s3_address),
        }
    }
}

/// A path segment as SigV4 signs it: everything but the unreserved characters encoded.
fn encode_segment(segment: &str) -> String {
    percent_encoding::utf8_percent_encode(segment, crate::signing::URI_UNRESERVED).to_string()
}

/// The host name the browser used, without its port (nor an IPv6 address's brackets).
fn host_name(headers: &HeaderMap) -> Option<&str> {
    let host = headers.get(header::HOST)?.to_str().ok()?;
    Some(match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    })
}

/// The host the browser used, as a URL names it (no port).
fn request_host(headers: &HeaderMap) -> Option<String> {
    let name = host_name(headers)?;
    Some(match name.contains(':') {
        true => format!("[{name}]"),
        false => name.to_string(),
    })
}

/// An S3 or admin call of the page, made as the signed-in user.
async fn server_call(console: &Console, request: Request) -> Response {
    let Some(user) = user_of(console, request.headers()) else {
        return sign_in_first();
    };
    // A read needs no token: a link to a download opens it, and SameSite keeps other sites'
    // pages from sending the cookie.
    let reads_only = matches!(*request.method(), Method::GET | Method::HEAD);
    if !(reads_only || from_the_page(&user.session, request.headers())) {
        return refusal(StatusCode::FORBIDDEN, "missing or wrong CSRF token");
    }
    let (mut parts, body) = request.into_parts();
    let Some(uri) = server_uri(&parts.uri) else {
        return refusal(StatusCode::BAD_REQUEST, "not an S3 or admin path");
    };
    parts.uri = uri;
    // The S3 API sees a request of this user alone: none of the browser's credentials or
    // page headers, and no host that could name a bucket.
    for name in [
        header::COOKIE,
        header::AUTHORIZATION,
        header::ORIGIN,
        header::REFERER,
    ] {
        parts.headers.remove(name);
    }
    parts.headers.remove(CSRF_HEADER);
    parts
        .headers
        .insert(header::HOST, HeaderValue::from_static("127.0.0.1"));
    let request = Request::from_parts(parts, Body::new(body));
    let mut response = (console.s3)(request, user.identity, user.session.access_key).await;
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(OBJECT_POLICY),
    );
    response
}

/// `/s3/bucket/key?query` as the S3 API has it, `/bucket/key?query`; `/admin/route?query`
/// as the admin API has it, `/_strata/admin/v1/route?query` (which only the root user may
/// call).
fn server_uri(uri: &Uri) -> Option<Uri> {
    let path = match uri.path().strip_prefix("/admin/") {
        Some(route) => format!("{}{route}", crate::admin::api::PATH_PREFIX),
        None => uri.path().strip_prefix("/s3")?.to_string(),
    };
    let path = if path.is_empty() { "/" } else { &path };
    let with_query = match uri.query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_string(),
    };
    with_query.parse().ok()
}

/// The user signed in to a session, as the deployment knows them now.
struct SignedIn {
    session: session::Session,
    secret: String,
    identity: Identity,
}

/// The user whose session a request's cookie names, looked up again now: one removed or
/// disabled, or whose secret changed, since signing in is signed out. `None`: the request
/// must sign in ([`sign_in_first`]).
fn user_of(console: &Console, headers: &HeaderMap) -> Option<SignedIn> {
    let (token, session) = signed_in(console, headers)?;
    let user = console.keyring.lookup(&session.access_key);
    let Some((secret, identity)) = user.filter(|(secret, _)| session.secret_unchanged(secret))
    else {
        console.sessions.close(&token);
        return None;
    };
    Some(SignedIn {
        session,
        secret: secret.into_owned(),
        identity,
    })
}

fn sign_in_first() -> Response {
    refusal(StatusCode::UNAUTHORIZED, "sign in")
}

/// Whether a call that changes something comes from the console's own page: it carries the
/// session's CSRF token, and the browser says it is same-origin.
fn from_the_page(session: &session::Session, headers: &HeaderMap) -> bool {
    csrf_ok(session, headers) && same_origin(headers)
}

/// The session a request's cookie names, with its token.
fn signed_in(console: &Console, headers: &HeaderMap) -> Option<(String, session::Session)> {
    let token = cookie(headers, COOKIE)?;
    let session = console.sessions.find(&token)?;
    Some((token, session))
}

fn csrf_ok(session: &session::Session, headers: &HeaderMap) -> bool {
    (headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()))
        .is_some_and(|t| session.csrf_matches(t))
}

/// Whether a browser says the request comes from a page of this origin (requests that are not
/// from a browser say nothing, and need the CSRF token anyway).
fn same_origin(headers: &HeaderMap) -> bool {
    headers
        .get("sec-fetch-site")
        .is_none_or(|site| site.as_bytes() == b"same-origin")
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    (headers.get_all(header::COOKIE).iter())
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_string())
}

/// Whether the request names this machine's loopback: `localhost`, `127.x.y.z` or `[::1]`,
/// with any port.
fn loopback_host(headers: &HeaderMap) -> bool {
    host_name(headers).is_some_and(|name| {
        name.eq_ignore_ascii_case("localhost")
            || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    })
}

fn client_ip(request: &Request) -> IpAddr {
    (request.extensions().get::<ConnectInfo<SocketAddr>>())
        .map_or(IpAddr::from([0, 0, 0, 0]), |c| c.0.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn only_loopback_names_reach_a_loopback_console() {
        for host in [
            "localhost:9001",
            "127.0.0.1:9001",
            "[::1]:9001",
            "LOCALHOST",
            "127.0.0.2",
        ] {
            assert!(loopback_host(&headers(&[("host", host)])), "{host}");
        }
        for host in [
            "evil.example:9001",
            "10.0.0.1:9001",
            "localhost.evil.example",
        ] {
            assert!(!loopback_host(&headers(&[("host", host)])), "{host}");
        }
        assert!(!loopback_host(&HeaderMap::new()));
    }

    #[test]
    fn paths_lose_the_consoles_prefix_and_keep_their_query() {
        let cases = [
            ("/s3", "/"),
            ("/s3/", "/"),
            ("/s3/data", "/data"),
            (
                "/s3/data/a%20b/c?list-type=2&prefix=x%2F",
                "/data/a%20b/c?list-type=2&prefix=x%2F",
            ),
        ];
        for (given, want) in cases {
            let got = server_uri(&given.parse().unwrap()).unwrap();
            assert_eq!(got.to_string(), want);
        }
    }

    #[test]
    fn share_links_name_the_host_the_browser_used_where_s3_listens_everywhere() {
        let console = |s3: &str| Console {
            keyring: Keyring::new(
                crate::api::auth::Credentials {
                    access_key: "a".into(),
                    secret_key: "b".into(),
                },
                "us-east-1",
            ),
            s3: Arc::new(|_, _, _| Box::pin(async { StatusCode::OK.into_response() })),
            totals: Arc::new(serde_json::Value::default),
            sessions: Sessions::default(),
            sign_in_limit: SignInLimit::default(),
            tls: false,
            loopback: false,
            s3_address: s3.parse().unwrap(),
        };
        let host = |h| request_host(&headers(&[("host", h)]));
        let open = console("0.0.0.0:9000");
        assert_eq!(
            open.s3_base(host("nas.lab:9001").as_deref()),
            "http://nas.lab:9000"
        );
        assert_eq!(
            open.s3_base(host("[fd00::5]:9001").as_deref()),
            "http://[fd00::5]:9000"
        );
        let bound = console("10.1.2.3:9000");
        assert_eq!(
            bound.s3_base(host("nas.lab:9001").as_deref()),
            "http://10.1.2.3:9000"
        );
    }

    #[test]
    fn cookies_are_found_by_name() {
        let map = headers(&[("cookie", "a=1; strata_console=abc"), ("cookie", "b=2")]);
        assert_eq!(cookie(&map, COOKIE).as_deref(), Some("abc"));
        assert_eq!(cookie(&map, "b").as_deref(), Some("2"));
        assert_eq!(cookie(&map, "c"), None);
    }
}
