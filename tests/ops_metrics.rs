//! The Prometheus endpoint against the real server: who may scrape, and that what a scrape
//! reports (request counts and latencies, bytes, drives, bucket usage) matches what was done.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;

const TOKEN: &str = "metrics-test-token-0123";
/// How long the drive monitor and the usage scanner (every second here) may take to notice.
const NOTICE_TIMEOUT: Duration = Duration::from_secs(30);

fn start(env: &[(&str, &str)]) -> TestServer {
    TestServer::start_with(ServerOptions {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..ServerOptions::default()
    })
}

fn start_with_token() -> TestServer {
    start(&[
        ("STRATA_METRICS_TOKEN", TOKEN),
        ("STRATA_DRIVE_CHECK_SECS", "1"),
        ("STRATA_USAGE_SCAN_SECS", "1"),
    ])
}

/// One sample of the text exposition.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A parsed scrape.
#[derive(Debug)]
struct Scrape {
    samples: Vec<Sample>,
    /// `# TYPE` lines: metric family name to type.
    types: BTreeMap<String, String>,
}

impl Scrape {
    /// The value of the sample `name` whose labels include all of `labels`, summed over the
    /// samples that match (0 when none does).
    fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.matching(name, labels).map(|s| s.value).sum()
    }

    fn matching<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
    }

    /// The one sample `name` with exactly these labels.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let found: Vec<_> = self.matching(name, labels).collect();
        assert!(found.len() <= 1, "{name} {labels:?} matches {found:?}");
        found.first().map(|s| s.value)
    }

    fn all(&self, name: &str) -> Vec<&Sample> {
        self.samples.iter().filter(|s| s.name == name).collect()
    }
}

/// Parses the Prometheus text format (0.0.4): `# HELP`/`# TYPE` comments and
/// `name{label="value",...} value` samples, with `\\`, `\"` and `\n` escapes in label values.
fn parse(text: &str) -> Scrape {
    let mut samples = Vec::new();
    let mut types = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut words = comment.split_whitespace();
            if words.next() == Some("TYPE") {
                let name = words.next().expect("TYPE names a metric").to_string();
                let kind = words.next().expect("TYPE gives a type").to_string();
                types.insert(name, kind);
            }
            continue;
        }
        let name_end = line
            .find(['{', ' '])
            .unwrap_or_else(|| panic!("sample without value: {line:?}"));
        let name = &line[..name_end];
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line:?}"
        );
        let rest = &line[name_end..];
        let (labels, rest) = match rest.strip_prefix('{') {
            Some(after) => parse_labels(after, line),
            None => (BTreeMap::new(), rest),
        };
        let mut fields = rest.split_whitespace();
        let value = fields
            .next()
            .unwrap_or_else(|| panic!("sample without value: {line:?}"));
        let value = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("bad value in {line:?}")),
        };
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    Scrape { samples, types }
}

/// The labels after a `{`, up to its `}`; returns them and what follows.
fn parse_labels<'a>(text: &'a str, line: &str) -> (BTreeMap<String, String>, &'a str) {
    let mut labels = BTreeMap::new();
    let mut chars = text.char_indices();
    loop {
        let mut key = String::new();
        loop {
            match chars.next() {
                Some((i, '}')) if key.is_empty() => return (labels, &text[i + 1..]),
                Some((_, '=')) => break,
                Some((_, c)) => key.push(c),
                None => panic!("open labels: {line:?}"),
            }
        }
        assert_eq!(chars.next().map(|(_, c)| c), Some('"'), "{line:?}");
        let mut value = String::new();
        loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => panic!("dangling escape: {line:?}"),
                },
                Some((_, '"')) => break,
                Some((_, c)) => value.push(c),
                None => panic!("open label value: {line:?}"),
            }
        }
        labels.insert(key.trim().to_string(), value);
        match chars.next() {
            Some((_, ',')) => continue,
            Some((i, '}')) => return (labels, &text[i + 1..]),
            other => panic!("expected , or }} after a label, got {other:?}: {line:?}"),
        }
    }
}

async fn get_metrics(server: &TestServer, token: Option<&str>) -> RawResponse {
    let headers = match token {
        Some(token) => hdrs(&[("authorization", &format!("Bearer {token}"))]),
        None => Vec::new(),
    };
    raw_send("GET", &server.url("/metrics"), &headers, Vec::new()).await
}

/// Scrapes with the token and parses; panics unless the answer is a 200 exposition.
async fn scrape(server: &TestServer) -> Scrape {
    let response = get_metrics(server, Some(TOKEN)).await;
    assert_eq!(response.status, 200, "{}", response.text());
    let content_type = response.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("text/plain") && content_type.contains("version=0.0.4"),
        "content type {content_type:?}"
    );
    parse(&response.text())
}

/// Scrapes until `check` holds; returns that scrape.
async fn scrape_until(server: &TestServer, what: &str, check: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = Instant::now() + NOTICE_TIMEOUT;
    loop {
        let scraped = scrape(server).await;
        if check(&scraped) {
            return scraped;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not seen within {NOTICE_TIMEOUT:?}; last scrape: {:#?}",
            scraped.samples
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn metrics_need_the_bearer_token() {
    let server = start_with_token();
    let missing = get_metrics(&server, None).await;
    assert!(
        matches!(missing.status, 401 | 403),
        "no token: {} {}",
        missing.status,
        missing.text()
    );
    assert!(!missing.text().contains("strata_requests"));
    let wrong = get_metrics(&server, Some("not-the-token")).await;
    assert!(
        matches!(wrong.status, 401 | 403),
        "wrong token: {}",
        wrong.status
    );
    // A request, so that the request families have a sample.
    let listed = server.client().list_buckets().send().await;
    assert!(listed.is_ok(), "{listed:?}");
    let scraped = scrape(&server).await;
    assert_eq!(
        scraped
            .types
            .get("strata_requests_total")
            .map(String::as_str),
        Some("counter")
    );
    assert_eq!(
        scraped
            .types
            .get("strata_request_duration_seconds")
            .map(String::as_str),
        Some("histogram")
    );
}

#[tokio::test]
async fn bearer_mode_without_a_token_says_how_to_configure_it() {
    let server = start(&[]);
    let refused = get_metrics(&server, Some("anything")).await;
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert!(
        refused.text().contains("STRATA_METRICS_TOKEN")
            && refused.text().contains("STRATA_METRICS_AUTH=public"),
        "{}",
        refused.text()
    );
}

#[tokio::test]
async fn public_mode_answers_without_a_token() {
    let server = start(&[("STRATA_METRICS_AUTH", "public")]);
    let response = get_metrics(&server, None).await;
    assert_eq!(response.status, 200, "{}", response.text());
    let scraped = parse(&response.text());
    assert_eq!(scraped.all("strata_drive_online").len(), 9);
}

/// Under `--domain`, `GET /metrics` to `photos.DOMAIN` is the key `metrics` of bucket
/// `photos`, an S3 request, not a scrape.
#[tokio::test]
async fn a_virtual_hosted_buckets_key_metrics_is_not_a_scrape() {
    let server = TestServer::start_with(ServerOptions {
        env: vec![("STRATA_METRICS_AUTH".into(), "public".into())],
        extra_args: vec!["--domain".into(), "s3.example.com".into()],
        ..ServerOptions::default()
    });
    let host = [("host".to_string(), "photos.s3.example.com".to_string())];
    let to_bucket = raw_send("GET", &server.url("/metrics"), &host, Vec::new()).await;
    assert!(!to_bucket.text().contains("strata_requests_total"));
    assert!(
        to_bucket.xml_element("Code").is_some(),
        "{}",
        to_bucket.text()
    );
    let scrape = get_metrics(&server, None).await;
    assert!(
        scrape.text().contains("strata_requests_total"),
        "{}",
        scrape.text()
    );
}

#[tokio::test]
async fn a_signed_get_of_metrics_is_an_s3_request() {
    let server = start(&[("STRATA_METRICS_AUTH", "public")]);
    let client = server.client();
    create_bucket(&client, "metrics").await;
    put(&client, "metrics", "an-object", b"data, not metrics").await;
    let signed = signed_send(
        &Signer::test(),
        "GET",
        &server.url("/metrics"),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(signed.status, 200, "{}", signed.text());
    assert!(
        signed.text().contains("<ListBucketResult") && signed.text().contains("an-object"),
        "a listing of bucket metrics: {}",
        signed.text()
    );
    assert!(!signed.text().contains("strata_requests_total"));
    // Counted as the S3 request it is.
    let scraped = parse(&get_metrics(&server, None).await.text());
    assert_eq!(
        scraped.get(
            "strata_requests_total",
            &[("operation", "ListObjects"), ("status", "200")]
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn request_counts_latencies_and_bytes_follow_what_was_done() {
    let server = start_with_token();
    let client = server.client();
    create_bucket(&client, "counted").await;
    let before = scrape(&server).await;

    let small = payload(10 * KIB, 1);
    let large = payload(3 * MIB + 17, 2);
    put(&client, "counted", "small", &small).await;
    put(&client, "counted", "large", &large).await;
    assert_eq!(get(&client, "counted", "large").await.len(), large.len());
    let missing = client
        .get_object()
        .bucket("counted")
        .key("missing")
        .send()
        .await;
    assert_s3_status(missing, 404, "GET of a missing key");

    let after = scrape(&server).await;
    let delta = |name: &str, labels: &[(&str, &str)]| {
        after.get(name, labels).unwrap_or(0.0) - before.get(name, labels).unwrap_or(0.0)
    };
    let requests = |operation, status| {
        delta(
            "strata_requests_total",
            &[("operation", operation), ("status", status)],
        )
    };
    assert_eq!(requests("PutObject", "200"), 2.0);
    assert_eq!(requests("GetObject", "200"), 1.0);
    assert_eq!(requests("GetObject", "404"), 1.0);
    assert_eq!(
        requests("CreateBucket", "200"),
        0.0,
        "before the first scrape"
    );
    assert_eq!(
        after.get(
            "strata_requests_total",
            &[("operation", "CreateBucket"), ("status", "200")]
        ),
        Some(1.0)
    );
    // Every operation's requests, and only those: the scrapes themselves are not counted.
    let total = |s: &Scrape| s.sum("strata_requests_total", &[]);
    assert_eq!(total(&after) - total(&before), 4.0);

    // The histogram counts every request of the operation, in its cumulative buckets.
    let count = |operation| {
        delta(
            "strata_request_duration_seconds_count",
            &[("operation", operation)],
        )
    };
    assert_eq!(count("PutObject"), 2.0);
    assert_eq!(count("GetObject"), 2.0);
    let inf = |s: &Scrape| {
        s.get(
            "strata_request_duration_seconds_bucket",
            &[("operation", "GetObject"), ("le", "+Inf")],
        )
        .unwrap_or(0.0)
    };
    assert_eq!(inf(&after) - inf(&before), 2.0);
    let buckets: Vec<_> = after
        .matching(
            "strata_request_duration_seconds_bucket",
            &[("operation", "PutObject")],
        )
        .collect();
    assert!(buckets.len() >= 10, "{buckets:?}");
    assert!(
        buckets.windows(2).all(|w| w[0].value <= w[1].value),
        "cumulative buckets: {buckets:?}"
    );
    assert!(buckets.iter().any(|b| b.labels["le"] == "0.001"));
    assert!(buckets
        .iter()
        .any(|b| b.labels["le"] == "60.0" || b.labels["le"] == "60"));
    assert!(
        delta(
            "strata_request_duration_seconds_sum",
            &[("operation", "PutObject")]
        ) > 0.0
    );

    let put_bytes = (small.len() + large.len()) as f64;
    let received = delta("strata_received_bytes_total", &[("operation", "PutObject")]);
    assert!(received >= put_bytes, "received {received} < {put_bytes}");
    let sent = delta("strata_sent_bytes_total", &[("operation", "GetObject")]);
    assert!(sent >= large.len() as f64, "sent {sent} < {}", large.len());
}

#[tokio::test]
async fn drives_and_bucket_usage_are_reported() {
    let server = start_with_token();
    let client = server.client();
    let scraped = scrape(&server).await;
    let online = scraped.all("strata_drive_online");
    assert_eq!(online.len(), 9, "{online:?}");
    assert!(online.iter().all(|s| s.value == 1.0), "{online:?}");
    for drive in server.drives() {
        let drive = drive.display().to_string();
        let free = scraped.get("strata_drive_free_bytes", &[("drive", &drive)]);
        assert!(free.is_some_and(|f| f > 0.0), "{drive}: free {free:?}");
        let total = scraped.get("strata_drive_total_bytes", &[("drive", &drive)]);
        assert!(
            total.unwrap_or(0.0) >= free.unwrap(),
            "{drive}: total {total:?}"
        );
        assert_eq!(
            scraped.get("strata_drive_healing", &[("drive", &drive)]),
            Some(0.0)
        );
        assert_eq!(
            scraped.get("strata_drive_stalled", &[("drive", &drive)]),
            Some(0.0)
        );
        assert_eq!(
            scraped.get("strata_drive_online", &[("drive", &drive), ("set", "1")]),
            Some(1.0)
        );
    }
    assert_eq!(scraped.get("strata_heal_running", &[]), Some(0.0));
    assert_eq!(scraped.get("strata_heal_objects_remaining", &[]), Some(0.0));
    assert!(scraped
        .get("strata_heal_objects_checked_total", &[])
        .is_some());
    assert!(scraped
        .get("strata_heal_objects_healed_total", &[])
        .is_some());

    // Bucket usage, once a scan has run after the writes.
    create_bucket(&client, "usage-a").await;
    create_bucket(&client, "usage-b").await;
    // A versioned bucket: two versions of a key, one of them noncurrent, and a delete marker
    // over another (its data noncurrent too).
    create_bucket(&client, "usage-v").await;
    set_versioning(
        &client,
        "usage-v",
        aws_sdk_s3::types::BucketVersioningStatus::Enabled,
    )
    .await;
    put(&client, "usage-v", "k", &payload(100, 1)).await;
    put(&client, "usage-v", "k", &payload(30, 2)).await;
    put(&client, "usage-v", "gone", &payload(7, 3)).await;
    ok(
        client
            .delete_object()
            .bucket("usage-v")
            .key("gone")
            .send()
            .await,
        "DELETE",
    );
    let sizes = [0, 1, 200 * KIB, MIB + 3];
    for (i, size) in sizes.iter().enumerate() {
        put(
            &client,
            "usage-a",
            &format!("k{i}"),
            &payload(*size, i as u64),
        )
        .await;
    }
    let written = unix_now();
    let want_bytes = sizes.iter().sum::<usize>() as f64;
    let usage = scrape_until(&server, "bucket usage of the writes", |s| {
        s.get("strata_bucket_objects", &[("bucket", "usage-a")]) == Some(4.0)
            && s.get("strata_bucket_bytes", &[("bucket", "usage-a")]) == Some(want_bytes)
    })
    .await;
    assert_eq!(
        usage.get("strata_bucket_objects", &[("bucket", "usage-b")]),
        Some(0.0)
    );
    assert_eq!(
        usage.get("strata_bucket_bytes", &[("bucket", "usage-b")]),
        Some(0.0)
    );
    let of_v = |name: &str| usage.get(name, &[("bucket", "usage-v")]);
    assert_eq!(of_v("strata_bucket_objects"), Some(1.0));
    assert_eq!(of_v("strata_bucket_bytes"), Some(30.0));
    assert_eq!(of_v("strata_bucket_noncurrent_versions"), Some(2.0));
    assert_eq!(of_v("strata_bucket_noncurrent_bytes"), Some(107.0));
    // The scan that counted the writes finished after them.
    let scanned = usage
        .get("strata_usage_scan_timestamp_seconds", &[])
        .expect("scan time");
    assert!(
        scanned >= written - 1.0 && scanned <= unix_now() + 1.0,
        "scan time {scanned}, writes done at {written}"
    );

    // A drive folder removed: the drive monitor takes it out, and the scrape says so.
    let gone = server.drives()[4].display().to_string();
    std::fs::remove_dir_all(&server.drives()[4]).expect("remove drive folder");
    let offline = scrape_until(&server, "the removed drive offline", |s| {
        s.get("strata_drive_online", &[("drive", &gone)]) == Some(0.0)
    })
    .await;
    assert_eq!(offline.sum("strata_drive_online", &[]), 8.0);
    assert_eq!(
        offline.get("strata_drive_free_bytes", &[("drive", &gone)]),
        None
    );
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

#[test]
fn the_parser_reads_labels_escapes_and_special_values() {
    let text = "# HELP a_total A.\n# TYPE a_total counter\n\
                a_total{op=\"x\",path=\"q\\\"u\\\\o\\nte\"} 3\n\
                b_bucket{le=\"+Inf\"} 2\nc 1.5e3\nd{} +Inf\n";
    let scraped = parse(text);
    assert_eq!(scraped.types["a_total"], "counter");
    assert_eq!(
        scraped.get("a_total", &[("op", "x"), ("path", "q\"u\\o\nte")]),
        Some(3.0)
    );
    assert_eq!(scraped.get("b_bucket", &[("le", "+Inf")]), Some(2.0));
    assert_eq!(scraped.get("c", &[]), Some(1500.0));
    assert_eq!(scraped.get("d", &[]), Some(f64::INFINITY));
}

/// Appends are counted, timed and sized as an operation of their own, so that a checkpoint
/// writer's appends can be told from its PUTs on a dashboard.
#[tokio::test]
async fn appends_are_an_operation_of_their_own() {
    let server = start(&[("STRATA_METRICS_AUTH", "public")]);
    let client = server.client();
    create_bucket(&client, "logs").await;
    put(&client, "logs", "train.log", b"step 1\n").await;
    for step in 2..=3 {
        let line = format!("step {step}\n");
        let size = client
            .head_object()
            .bucket("logs")
            .key("train.log")
            .send()
            .await
            .unwrap()
            .content_length()
            .unwrap();
        client
            .put_object()
            .bucket("logs")
            .key("train.log")
            .write_offset_bytes(size)
            .body(line.into_bytes().into())
            .send()
            .await
            .unwrap();
    }
    assert_object(&client, "logs", "train.log", b"step 1\nstep 2\nstep 3\n").await;
    let scraped = parse(&get_metrics(&server, None).await.text());
    let answered = |operation: &str| {
        scraped.get(
            "strata_requests_total",
            &[("operation", operation), ("status", "200")],
        )
    };
    assert_eq!(answered("AppendObject"), Some(2.0));
    assert_eq!(answered("PutObject"), Some(1.0));
    assert_eq!(
        scraped.get(
            "strata_received_bytes_total",
            &[("operation", "AppendObject")]
        ),
        Some(14.0)
    );
}
