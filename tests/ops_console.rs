//! The web console against the real server, as a browser talks to it: the page and the
//! headers that confine it, sign-in with the deployment's own keys (and its limit on
//! guessing), and S3 calls made through it, which are the signed-in user's own: authorised by
//! their policies, refused without the session's CSRF token, ended by signing out or by the
//! user's removal.

mod common;

use common::*;
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode};

const ALICE_SECRET: &str = "alice-secret-0123456789";

/// A server whose console listens on a port of the system's choosing, and its address.
fn start_with_console(mut options: ServerOptions) -> (TestServer, String) {
    options
        .extra_args
        .extend(["--console-address".into(), "127.0.0.1:0".into()]);
    let server = TestServer::start_with(options);
    let console = console_url(&server).expect("the console's address in the log");
    (server, console)
}

fn console_url(server: &TestServer) -> Option<String> {
    let log = server.log();
    let line = log.lines().find(|l| l.contains("web console at http"))?;
    let at = line.find("http")?;
    Some(line[at..].split_whitespace().next()?.to_string())
}

/// A browser's view of the console: its cookie and the page's CSRF token once signed in.
struct Browser {
    base: String,
    http: reqwest::Client,
    cookie: Option<String>,
    csrf: Option<String>,
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Browser {
    fn new(base: &str) -> Browser {
        Browser {
            base: base.to_string(),
            http: reqwest::Client::new(),
            cookie: None,
            csrf: None,
        }
    }

    /// A request as the page makes it: its cookie and, when it has one, its CSRF token.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> Answer {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("sec-fetch-site", "same-origin")
            .body(body.to_string());
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", format!("strata_console={cookie}"));
        }
        if let Some(csrf) = &self.csrf {
            request = request.header("x-strata-csrf", csrf);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        Answer {
            status: response.status(),
            headers: response.headers().clone(),
            body: response.text().await.unwrap(),
        }
    }

    async fn sign_in(&mut self, access_key: &str, secret_key: &str) -> Answer {
        let body = serde_json::json!({ "accessKey": access_key, "secretKey": secret_key });
        let json = [("content-type", "application/json")];
        let answer = self
            .call(Method::POST, "/api/session", &body.to_string(), &json)
            .await;
        if answer.status == StatusCode::OK {
            let cookie = header(&answer.headers, "set-cookie");
            let token = cookie.split(';').next().unwrap().split_once('=').unwrap().1;
            self.cookie = Some(token.to_string());
            let session: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
            self.csrf = Some(session["csrf"].as_str().unwrap().to_string());
        }
        answer
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .map(HeaderValue::to_str)
        .and_then(Result::ok)
        .unwrap_or_default()
}

#[tokio::test]
async fn the_page_is_served_whole_from_the_binary_and_confined() {
    let (_server, console) = start_with_console(ServerOptions::default());
    let browser = Browser::new(&console);
    let page = browser.call(Method::GET, "/", "", &[]).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(header(&page.headers, "content-type").starts_with("text/html"));
    let policy = header(&page.headers, "content-security-policy");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(policy.contains(directive), "{policy}");
    }
    assert_eq!(header(&page.headers, "x-content-type-options"), "nosniff");
    // Nothing is fetched from elsewhere: no CDN, no font service.
    for asset in ["/", "/console.js", "/console.css"] {
        let answer = browser.call(Method::GET, asset, "", &[]).await;
        assert_eq!(answer.status, StatusCode::OK, "{asset}");
        assert!(
            !answer.body.contains("https://"),
            "{asset} names another site"
        );
    }
    assert!(page.body.contains("src=\"/console.js\""));
    // Reached under another name (a page of another site rebound to 127.0.0.1): refused.
    let rebound = browser
        .call(Method::GET, "/", "", &[("host", "attacker.example:9001")])
        .await;
    assert_eq!(rebound.status, StatusCode::MISDIRECTED_REQUEST);
}

#[tokio::test]
async fn sign_in_takes_the_deployments_keys_and_limits_guessing() {
    let (_server, console) = start_with_console(ServerOptions::default());
    let mut browser = Browser::new(&console);
    // A form another site posts is not a sign-in.
    let form = browser
        .call(
            Method::POST,
            "/api/session",
            &format!("accessKey={ACCESS_KEY}&secretKey={SECRET_KEY}"),
            &[("content-type", "application/x-www-form-urlencoded")],
        )
        .await;
    assert_eq!(form.status, StatusCode::FORBIDDEN);
    let signed_in = browser.sign_in(ACCESS_KEY, SECRET_KEY).await;
    assert_eq!(signed_in.status, StatusCode::OK, "{}", signed_in.body);
    let cookie = header(&signed_in.headers, "set-cookie");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(!cookie.contains("Secure"), "not over plain HTTP: {cookie}");
    assert!(
        !signed_in.body.contains(SECRET_KEY),
        "the secret never goes back"
    );
    let session = browser.call(Method::GET, "/api/session", "", &[]).await;
    assert_eq!(session.status, StatusCode::OK);
    assert!(session.body.contains(ACCESS_KEY));

    // Guessing: five wrong secrets, then even the right one must wait.
    let mut guesser = Browser::new(&console);
    for _ in 0..5 {
        let wrong = guesser.sign_in(ACCESS_KEY, "not-the-secret").await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    }
    let held = guesser.sign_in(ACCESS_KEY, SECRET_KEY).await;
    assert_eq!(held.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(!header(&held.headers, "retry-after").is_empty());
    // The session already open goes on.
    let still = browser.call(Method::GET, "/s3/", "", &[]).await;
    assert_eq!(still.status, StatusCode::OK);
}

#[tokio::test]
async fn calls_through_the_console_are_the_signed_in_users_own() {
    let (server, console) = start_with_console(ServerOptions::default());
    let s3 = server.client();
    let mut root = Browser::new(&console);
    root.sign_in(ACCESS_KEY, SECRET_KEY).await;

    // Not signed in: nothing.
    let stranger = Browser::new(&console);
    let listed = stranger.call(Method::GET, "/s3/", "", &[]).await;
    assert_eq!(listed.status, StatusCode::UNAUTHORIZED);

    // The root user creates a bucket and uploads, as the page does.
    let created = root.call(Method::PUT, "/s3/data", "", &[]).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.body);
    let put = root
        .call(Method::PUT, "/s3/data/shards/part-0001.txt", "sample", &[])
        .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    let got = s3.get_object().bucket("data").key("shards/part-0001.txt");
    let got = got.send().await.unwrap().body.collect().await.unwrap();
    assert_eq!(&got.into_bytes()[..], b"sample");
    let folder = root
        .call(Method::GET, "/s3/data?list-type=2&delimiter=/", "", &[])
        .await;
    assert!(
        folder.body.contains("<Prefix>shards/</Prefix>"),
        "{}",
        folder.body
    );

    // A change without the session's CSRF token is refused, and changes nothing.
    let mut forged = Browser::new(&console);
    forged.cookie = root.cookie.clone();
    let refused = forged
        .call(Method::DELETE, "/s3/data/shards/part-0001.txt", "", &[])
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    forged.csrf = Some("0".repeat(64));
    let refused = forged.call(Method::PUT, "/s3/data/planted", "x", &[]).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let planted = s3.head_object().bucket("data").key("planted").send().await;
    assert!(planted.is_err(), "nothing was written");

    // An object that is a web page, opened through the console, runs nothing there.
    root.call(
        Method::PUT,
        "/s3/data/page.html",
        "<script>alert(1)</script>",
        &[("content-type", "text/html")],
    )
    .await;
    let page = root.call(Method::GET, "/s3/data/page.html", "", &[]).await;
    assert!(header(&page.headers, "content-security-policy").contains("sandbox"));

    // Alice may only read `data`: through the console too.
    let added = strata_admin(&server, &["user", "add", "alice", "--secret", ALICE_SECRET]);
    assert!(added.status.success(), "{added:?}");
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("read-data.json");
    std::fs::write(
        &policy,
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow",
            "Action":["s3:GetObject","s3:ListBucket"],
            "Resource":["arn:aws:s3:::data","arn:aws:s3:::data/*"]}]}"#,
    )
    .unwrap();
    for args in [
        vec!["policy", "add", "read-data", policy.to_str().unwrap()],
        vec!["policy", "attach", "alice", "read-data"],
    ] {
        let output = strata_admin(&server, &args);
        assert!(output.status.success(), "{args:?}: {output:?}");
    }
    let mut alice = Browser::new(&console);
    assert_eq!(
        alice.sign_in("alice", ALICE_SECRET).await.status,
        StatusCode::OK
    );
    let read = alice
        .call(Method::GET, "/s3/data/shards/part-0001.txt", "", &[])
        .await;
    assert_eq!(
        (read.status, read.body.as_str()),
        (StatusCode::OK, "sample")
    );
    let write = alice.call(Method::PUT, "/s3/data/hers", "x", &[]).await;
    assert_eq!(write.status, StatusCode::FORBIDDEN);
    assert!(
        write.body.contains("<Code>AccessDenied</Code>"),
        "{}",
        write.body
    );
    let make = alice.call(Method::PUT, "/s3/hers", "", &[]).await;
    assert!(
        make.body.contains("<Code>AccessDenied</Code>"),
        "{}",
        make.body
    );

    // A share link is a GET presigned with her own key: anyone opens it, for what she may
    // read; a week at most, and only asked for from the page.
    let ask = |expires: u64| {
        serde_json::json!({"bucket": "data", "key": "shards/part-0001.txt", "expires": expires})
            .to_string()
    };
    let json = [("content-type", "application/json")];
    let shared = alice
        .call(Method::POST, "/api/share", &ask(600), &json)
        .await;
    assert_eq!(shared.status, StatusCode::OK, "{}", shared.body);
    let link: serde_json::Value = serde_json::from_str(&shared.body).unwrap();
    let link = link["url"].as_str().unwrap();
    assert!(link.starts_with(&server.endpoint()), "{link}");
    assert!(link.contains("X-Amz-Credential=alice%2F"), "{link}");
    let opened = reqwest::get(link).await.unwrap();
    assert_eq!(opened.status(), StatusCode::OK);
    assert_eq!(opened.text().await.unwrap(), "sample");
    let too_long = alice
        .call(Method::POST, "/api/share", &ask(8 * 86400), &json)
        .await;
    assert_eq!(too_long.status, StatusCode::BAD_REQUEST);
    let mut no_token = Browser::new(&console);
    no_token.cookie = alice.cookie.clone();
    let refused = no_token
        .call(Method::POST, "/api/share", &ask(600), &json)
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);

    // The admin API is the root user's alone, through the console as anywhere.
    let info = root.call(Method::GET, "/admin/info", "", &[]).await;
    assert_eq!(info.status, StatusCode::OK, "{}", info.body);
    let info: serde_json::Value = serde_json::from_str(&info.body).unwrap();
    assert_eq!(info["sets"][0]["drives"].as_array().unwrap().len(), 9);
    let totals = root.call(Method::GET, "/api/requests", "", &[]).await;
    let totals: serde_json::Value = serde_json::from_str(&totals.body).unwrap();
    assert!(totals["requests"].as_u64().unwrap() > 0, "{totals}");
    let theirs = alice.call(Method::GET, "/api/requests", "", &[]).await;
    assert_eq!(theirs.status, StatusCode::FORBIDDEN);
    let users = alice.call(Method::GET, "/admin/users", "", &[]).await;
    assert_eq!(users.status, StatusCode::FORBIDDEN);
    assert!(users.body.contains("AccessDenied"), "{}", users.body);
    let forged_admin = forged
        .call(Method::POST, "/admin/users?name=mallory", "", &[])
        .await;
    assert_eq!(forged_admin.status, StatusCode::FORBIDDEN);
    let listed = root.call(Method::GET, "/admin/users", "", &[]).await;
    assert!(!listed.body.contains("mallory"), "{}", listed.body);

    // Made again with another secret, alice must sign in again; removed, she is out at once.
    let mut alice_later = Browser::new(&console);
    let again = alice_later.sign_in("alice", ALICE_SECRET).await;
    assert_eq!(again.status, StatusCode::OK);
    for args in [
        vec!["user", "remove", "alice"],
        vec![
            "user",
            "add",
            "alice",
            "--secret",
            "another-secret-0123456789",
        ],
    ] {
        let output = strata_admin(&server, &args);
        assert!(output.status.success(), "{args:?}: {output:?}");
    }
    let stale = alice.call(Method::GET, "/s3/data?list-type=2", "", &[]);
    assert_eq!(stale.await.status, StatusCode::UNAUTHORIZED);
    let removed = strata_admin(&server, &["user", "remove", "alice"]);
    assert!(removed.status.success(), "{removed:?}");
    let gone = alice_later.call(Method::GET, "/s3/data?list-type=2", "", &[]);
    assert_eq!(gone.await.status, StatusCode::UNAUTHORIZED);
    // Signed out, the root's session is over.
    let out = root.call(Method::DELETE, "/api/session", "", &[]).await;
    assert_eq!(out.status, StatusCode::NO_CONTENT);
    let after = root.call(Method::GET, "/s3/", "", &[]).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_console_can_be_turned_off_and_is_never_opened_with_the_default_keys() {
    let off = TestServer::start_with(ServerOptions {
        extra_args: vec!["--console-address".into(), "none".into()],
        ..ServerOptions::default()
    });
    assert_eq!(console_url(&off), None);
    let open = TestServer::try_start(ServerOptions {
        set_credentials: false,
        extra_args: vec!["--console-address".into(), "0.0.0.0:0".into()],
        ..ServerOptions::default()
    });
    let failure = open.err().expect("refused");
    assert!(
        failure
            .output
            .contains("refusing to listen on 0.0.0.0:0 with the default credentials"),
        "{}",
        failure.output
    );
}

/// With `--certs-dir` the console is HTTPS too, with the server's certificate, and its cookie
/// is `Secure`.
#[tokio::test]
async fn under_tls_the_console_is_https_and_its_cookie_secure() {
    let ca = Ca::new("strata console CA");
    let (cert, key, _) = ca.server_cert("strata-console");
    let certs = tempfile::tempdir().unwrap();
    write_certs(certs.path(), &cert, &key);
    let options = ServerOptions {
        extra_args: vec!["--certs-dir".into(), certs.path().display().to_string()],
        ..ServerOptions::default()
    };
    let (_server, console) = start_with_console(options);
    assert!(console.starts_with("https://"), "{console}");
    let trusted = reqwest::Certificate::from_pem(ca.pem.as_bytes()).unwrap();
    let mut browser = Browser::new(&console);
    browser.http = reqwest::Client::builder()
        .add_root_certificate(trusted)
        .build()
        .unwrap();
    let signed_in = browser.sign_in(ACCESS_KEY, SECRET_KEY).await;
    assert_eq!(signed_in.status, StatusCode::OK);
    let cookie = header(&signed_in.headers, "set-cookie");
    assert!(cookie.contains("; Secure"), "{cookie}");
    let listed = browser.call(Method::GET, "/s3/", "", &[]).await;
    assert_eq!(listed.status, StatusCode::OK);
}
