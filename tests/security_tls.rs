//! Running in production: HTTPS and the connection-level limits.
//!
//! - `--certs-dir DIR` (`public.crt`, `private.key`) serves HTTPS only: the SDK round-trips
//!   objects with the test CA as its only root, a client without the CA is refused, and plain
//!   HTTP on that port gets a 400 that says so.
//! - The certificate is reloaded when the files change (new connections see the new one); a
//!   broken file written later keeps the old certificate and logs a warning naming the file.
//! - A bad certificate or key is refused at start, the message naming the file.
//! - Connection limits: a request head that does not arrive within the header timeout is cut
//!   off, an idle keep-alive connection lasts the idle timeout (not the header timeout), an
//!   upload that stalls is cut off, oversized heads get 431, and the server serves on.
//! - SIGTERM: the port closes at once, the PUT in flight finishes with 200, the server exits 0,
//!   and after a restart the object reads back whole.

mod common;

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use futures::channel::mpsc;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

fn tls_server(certs: &Path, env: &[(&str, &str)]) -> TestServer {
    TestServer::start_with(ServerOptions {
        extra_args: vec!["--certs-dir".into(), certs.display().to_string()],
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    })
}

/// The certificate the server presents to a new connection (verified against `ca_pem`).
async fn peer_certificate(addr: &str, ca_pem: &str) -> CertificateDer<'static> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .expect("TLS handshake with the CA as root");
    let certs = tls.get_ref().1.peer_certificates().expect("a peer chain");
    certs[0].clone().into_owned()
}

/// Polls until the server presents `want` to new connections.
async fn wait_for_certificate(addr: &str, ca_pem: &str, want: &CertificateDer<'_>) -> bool {
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if peer_certificate(addr, ca_pem).await == *want {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

/// Waits until the server's log has a line containing `text`.
async fn wait_for_log(server: &TestServer, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !server.run_log().contains(text) {
        assert!(
            Instant::now() < deadline,
            "no {text:?} in the log:\n{}",
            server.log_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sends `request` on a fresh TCP connection and reads until the server closes it or
/// `timeout` passes; returns what was read and whether the server closed.
fn exchange(addr: &str, request: &[u8], timeout: Duration) -> (Vec<u8>, bool) {
    let mut stream = TcpStream::connect(addr).unwrap();
    // The server may answer (and close) before all of an oversized request is written.
    let _ = stream.write_all(request);
    read_until_closed(&mut stream, timeout)
}

fn read_until_closed(stream: &mut TcpStream, timeout: Duration) -> (Vec<u8>, bool) {
    let deadline = Instant::now() + timeout;
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (got, false);
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return (got, false)
            }
            // A reset is a close too.
            Err(_) => return (got, true),
        }
    }
}

#[tokio::test]
async fn https_round_trip_with_the_ca_and_plain_http_is_refused() {
    let ca = Ca::new("strata test CA");
    let certs = tempfile::tempdir().unwrap();
    let (cert, key, _) = ca.server_cert("strata-a");
    write_certs(certs.path(), &cert, &key);
    let server = tls_server(certs.path(), &[]);
    assert!(
        server.endpoint().starts_with("https://"),
        "{}",
        server.endpoint()
    );

    let client = https_client(&server.endpoint(), &ca.pem);
    let bucket = unique_bucket("tls");
    create_bucket(&client, &bucket).await;
    let data = payload(3 * MIB + 17, 1);
    put(&client, &bucket, "over/https", &data).await;
    assert_same_bytes(
        &get(&client, &bucket, "over/https").await,
        &data,
        "GET over HTTPS",
    );
    // localhost too (the certificate names both).
    let by_name = https_client(
        &server.endpoint().replace("127.0.0.1", "localhost"),
        &ca.pem,
    );
    assert_same_bytes(
        &get(&by_name, &bucket, "over/https").await,
        &data,
        "GET over HTTPS via localhost",
    );

    // Policies see the transport: a bucket that refuses insecure requests serves this one,
    // and one that refuses secure requests does not.
    let policy = |secure: bool| {
        format!(
            r#"{{"Version": "2012-10-17", "Statement": [{{"Effect": "Deny", "Principal": "*",
            "Action": "s3:GetObject", "Resource": "arn:aws:s3:::{bucket}/*",
            "Condition": {{"Bool": {{"aws:SecureTransport": "{secure}"}}}}}}]}}"#
        )
    };
    for (denied_when_secure, readable) in [(false, true), (true, false)] {
        client
            .put_bucket_policy()
            .bucket(&bucket)
            .policy(policy(denied_when_secure))
            .send()
            .await
            .unwrap();
        let read = client
            .get_object()
            .bucket(&bucket)
            .key("over/https")
            .send()
            .await;
        assert_eq!(
            read.is_ok(),
            readable,
            "Deny when SecureTransport={denied_when_secure}"
        );
    }
    client
        .delete_bucket_policy()
        .bucket(&bucket)
        .send()
        .await
        .unwrap();
    // SSE-C needs no opt-in over HTTPS.
    let sse_c = client
        .put_object()
        .bucket(&bucket)
        .key("customer")
        .sse_customer_algorithm("AES256")
        .sse_customer_key("pO3upElrwuEXSoFwCfnZPdSsmt/xWeFa0N9KgDijwVs=")
        .sse_customer_key_md5("DWygnHRtgiJ77HCm+1rvHw==")
        .body(aws_sdk_s3::primitives::ByteStream::from_static(b"over TLS"))
        .send()
        .await;
    assert!(sse_c.is_ok(), "SSE-C over HTTPS: {sse_c:?}");

    // A client that trusts another CA does not get through.
    let stranger = https_client(&server.endpoint(), &Ca::new("other CA").pem);
    let refused = stranger.list_buckets().send().await;
    assert!(
        refused.is_err(),
        "a client without the CA must fail the handshake"
    );

    // Plain HTTP on the HTTPS port: a 400 that says why, and nothing served.
    let (answer, closed) = exchange(
        &server.addr(),
        b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
        Duration::from_secs(10),
    );
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 400") && answer.contains("HTTP request to an HTTPS server"),
        "{answer}"
    );
    assert!(closed, "the connection is closed after the 400");
}

#[tokio::test]
async fn certificates_reload_and_a_broken_file_keeps_the_old_one() {
    let ca = Ca::new("strata test CA");
    let certs = tempfile::tempdir().unwrap();
    let (cert_a, key_a, der_a) = ca.server_cert("strata-a");
    write_certs(certs.path(), &cert_a, &key_a);
    let server = tls_server(certs.path(), &[]);
    let addr = server.addr();
    assert_eq!(peer_certificate(&addr, &ca.pem).await, der_a);
    let client = https_client(&server.endpoint(), &ca.pem);
    let bucket = unique_bucket("tls-rotate");
    create_bucket(&client, &bucket).await;

    // Rotate: key first, then the certificate (not atomic, as `cp` does it).
    let (cert_b, key_b, der_b) = ca.server_cert("strata-b");
    std::fs::write(certs.path().join("private.key"), &key_b).unwrap();
    std::fs::write(certs.path().join("public.crt"), &cert_b).unwrap();
    assert!(
        wait_for_certificate(&addr, &ca.pem, &der_b).await,
        "new connections still get the old certificate; log:\n{}",
        server.log_tail(20)
    );
    wait_for_log(&server, "TLS certificate reloaded").await;
    put(&client, &bucket, "after-rotation", b"rotated").await;

    // A broken certificate file: the last good certificate stays, with a warning.
    std::fs::write(
        certs.path().join("public.crt"),
        "-----BEGIN CERTIFICATE-----\nnot base64",
    )
    .unwrap();
    wait_for_log(&server, "TLS certificate reload failed").await;
    let log = server.run_log();
    let warning = log
        .lines()
        .find(|l| l.contains("TLS certificate reload failed"))
        .unwrap();
    assert!(
        warning.contains("WARN") && warning.contains("public.crt"),
        "{warning}"
    );
    assert_eq!(peer_certificate(&addr, &ca.pem).await, der_b);
    let fresh = https_client(&server.endpoint(), &ca.pem);
    assert_eq!(get(&fresh, &bucket, "after-rotation").await, b"rotated");

    // Fixed again: taken.
    let (cert_c, key_c, der_c) = ca.server_cert("strata-c");
    write_certs(certs.path(), &cert_c, &key_c);
    assert!(wait_for_certificate(&addr, &ca.pem, &der_c).await);
}

#[test]
fn a_bad_certificate_or_key_is_refused_at_start() {
    let ca = Ca::new("strata test CA");
    let (cert, key, _) = ca.server_cert("strata-a");
    let (_, other_key, _) = ca.server_cert("strata-b");
    // (what, public.crt, private.key, the file the message names, why)
    type Case<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a str, &'a str);
    let cases: [Case; 5] = [
        ("no files", None, None, "public.crt", "no such file"),
        ("no key", Some(&cert), None, "private.key", "no such file"),
        (
            "garbage certificate",
            Some("hello"),
            Some(&key),
            "public.crt",
            "no certificate",
        ),
        (
            "a certificate as key",
            Some(&cert),
            Some(&cert),
            "private.key",
            "no private key",
        ),
        (
            "the wrong key",
            Some(&cert),
            Some(&other_key),
            "private.key",
            "does not belong",
        ),
    ];
    for (what, cert_pem, key_pem, file, reason) in cases {
        let certs = tempfile::tempdir().unwrap();
        if let Some(pem) = cert_pem {
            std::fs::write(certs.path().join("public.crt"), pem).unwrap();
        }
        if let Some(pem) = key_pem {
            std::fs::write(certs.path().join("private.key"), pem).unwrap();
        }
        let failure = match TestServer::try_start(ServerOptions {
            extra_args: vec!["--certs-dir".into(), certs.path().display().to_string()],
            ..Default::default()
        }) {
            Ok(server) => panic!("{what}: the server started; log:\n{}", server.log()),
            Err(failure) => failure,
        };
        assert!(failure.exited_nonzero(), "{what}: {:?}", failure.status);
        let message = failure
            .output
            .lines()
            .find(|l| l.starts_with("strata: "))
            .unwrap_or_else(|| panic!("{what}: no error line in:\n{}", failure.output));
        assert!(
            message.contains(file) && message.contains(reason),
            "{what}: want {file} and {reason:?} in {message:?}"
        );
    }
}

#[tokio::test]
async fn slow_heads_stalled_bodies_and_oversized_heads_are_cut_off() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![
            ("STRATA_HEADER_TIMEOUT_SECS".into(), "2".into()),
            ("STRATA_IDLE_TIMEOUT_SECS".into(), "6".into()),
        ],
        ..Default::default()
    });
    let addr = server.addr();
    let client = server.client();
    let bucket = unique_bucket("limits");
    create_bucket(&client, &bucket).await;

    // Half a request line, then nothing: closed after the header timeout (not before).
    let started = Instant::now();
    let (answer, closed) = exchange(&addr, b"GET /", Duration::from_secs(15));
    let took = started.elapsed();
    assert!(closed, "a stalled request head keeps its connection");
    assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(6),
        "closed after {took:?}, want about 2 s"
    );

    // A head trickling in byte by byte does not reset the clock.
    let started = Instant::now();
    let mut stream = TcpStream::connect(&addr).unwrap();
    let mut closed_early = false;
    for byte in b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
        if stream.write_all(&[*byte]).is_err() {
            closed_early = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        if started.elapsed() > Duration::from_secs(8) {
            break;
        }
    }
    let (_, closed) = read_until_closed(&mut stream, Duration::from_secs(5));
    assert!(
        closed_early || closed,
        "a trickling request head outlived the header timeout"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // An idle keep-alive connection lives on past the header timeout, until the idle timeout.
    let request = format!("GET /{bucket}?location HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let mut stream = TcpStream::connect(&addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut first = [0u8; 12];
    stream.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 403", "unsigned request answered");
    let (_, closed) = read_until_closed(&mut stream, Duration::from_secs(4));
    assert!(
        !closed,
        "an idle connection was closed before the idle timeout"
    );
    let (_, closed) = read_until_closed(&mut stream, Duration::from_secs(8));
    assert!(closed, "an idle connection outlived the idle timeout");

    // An upload that stops sending is cut off after the idle timeout.
    let url = server.url(&format!("/{bucket}/stalled"));
    let headers = hdrs(&[("content-length", "1048576")]);
    let (auth, _) = Signer::test().sign("PUT", &url, &headers, UNSIGNED_PAYLOAD);
    let mut head = format!("PUT /{bucket}/stalled HTTP/1.1\r\nHost: {addr}\r\n");
    for (k, v) in headers.iter().chain(&auth) {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut request = head.into_bytes();
    request.extend_from_slice(&[7u8; 1000]);
    let started = Instant::now();
    let (_, closed) = exchange(&addr, &request, Duration::from_secs(20));
    assert!(closed, "a stalled upload keeps its connection");
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "closed after {:?}, before the idle timeout",
        started.elapsed()
    );

    // Oversized heads: 431, and the server serves on.
    let big = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(70 * 1024)
    );
    let (answer, _) = exchange(&addr, big.as_bytes(), Duration::from_secs(10));
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    let mut many = String::from("GET / HTTP/1.1\r\nHost: x\r\n");
    for i in 0..300 {
        many.push_str(&format!("X-Header-{i}: {i}\r\n"));
    }
    many.push_str("\r\n");
    let (answer, _) = exchange(&addr, many.as_bytes(), Duration::from_secs(10));
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");

    // A new client: the first one's pooled connection was closed as idle while this test
    // blocked its runtime (so the pool never saw the close).
    let client = server.client();
    put(&client, &bucket, "still-serving", b"yes").await;
    assert_eq!(get(&client, &bucket, "still-serving").await, b"yes");
}

#[tokio::test]
async fn sigterm_finishes_the_put_in_flight_and_loses_no_acknowledged_write() {
    let server = TestServer::start();
    let addr = server.addr();
    let client = server.client();
    let bucket = unique_bucket("shutdown");
    create_bucket(&client, &bucket).await;
    let data = payload(4 * MIB + 5, 9);

    // A PUT whose body trickles in, in 16 pieces.
    let url = server.url(&format!("/{bucket}/in-flight"));
    let length = data.len().to_string();
    let headers = hdrs(&[("content-length", &length)]);
    let (auth, _) = Signer::test().sign("PUT", &url, &headers, UNSIGNED_PAYLOAD);
    let (tx, rx) = mpsc::unbounded::<io::Result<Bytes>>();
    let mut request = reqwest::Client::new()
        .put(&url)
        .body(reqwest::Body::wrap_stream(rx));
    for (k, v) in headers.iter().chain(&auth) {
        request = request.header(k.as_str(), v.as_str());
    }
    let put_task = tokio::spawn(async move { request.send().await });
    let pieces: Vec<Bytes> = data
        .chunks(data.len().div_ceil(16))
        .map(Bytes::copy_from_slice)
        .collect();
    let mut pieces = pieces.into_iter();
    for piece in pieces.by_ref().take(2) {
        tx.unbounded_send(Ok(piece)).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!put_task.is_finished(), "the PUT must still be in flight");

    let status = std::process::Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());

    // The port closes at once, while the PUT goes on.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        assert!(
            Instant::now() < deadline,
            "new connections are still accepted after SIGTERM"
        );
        match TcpStream::connect(&addr) {
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break,
            // A connection caught in the backlog as the listener closes is reset; the next
            // attempt shows whether the port is really closed.
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("connecting after SIGTERM: {e}"),
            Ok(_) => {}
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for piece in pieces {
        tokio::time::sleep(Duration::from_millis(150)).await;
        tx.unbounded_send(Ok(piece)).unwrap();
    }
    drop(tx);
    let response = put_task
        .await
        .unwrap()
        .expect("the PUT in flight is answered");
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
    let etag = response.headers()["etag"].to_str().unwrap().to_string();
    assert_eq!(etag, quoted_md5(&data));

    let exit = server
        .wait_exit(Duration::from_secs(20))
        .expect("the server exits once the PUT is done");
    assert!(exit.success(), "exit status {exit:?}");
    let log = server.run_log();
    assert!(log.contains("shutting down"), "{log}");

    server.restart();
    let client = server.client();
    assert_same_bytes(
        &get(&client, &bucket, "in-flight").await,
        &data,
        "the acknowledged PUT after the restart",
    );
}
