use super::*;
use crate::background::healing::HealPass;
use crate::background::usage::BucketUsage;
use crate::object::HealReport;
use std::time::SystemTime;

fn metrics(auth: MetricsAuth, token: Option<&str>) -> Metrics {
    let config = MetricsConfig {
        auth,
        token: token.map(str::to_string),
        ..MetricsConfig::default()
    };
    Metrics::new(&config, Arc::new(Usage::default()))
}

fn report(checked: u64, healed: u64) -> HealReport {
    HealReport {
        objects_checked: checked,
        objects_healed: healed,
        ..HealReport::default()
    }
}

fn pass(started_ms: i64, finished: bool, report: HealReport, total: u64) -> HealPass {
    HealPass {
        reason: "test".into(),
        started_ms,
        finished_ms: finished.then_some(started_ms + 10),
        objects_total: total,
        report,
        ..HealPass::default()
    }
}

/// A snapshot with every kind of sample, and one request of each kind recorded.
fn full_exposition() -> String {
    let metrics = metrics(MetricsAuth::Public, None);
    let response = Response::new(Body::from("hello"));
    metrics.record("GetObject", &response, Duration::from_millis(3), 0);
    let snapshot = Snapshot {
        drives: vec![DriveSample {
            pool: 1,
            set: 1,
            drive: "/data/d1".into(),
            online: true,
            healing: false,
            stalled: false,
            space: Some(DiskInfo {
                total: 100,
                used: 40,
                free: 60,
            }),
        }],
        heal: HealStatus {
            running: Some(pass(5, false, report(1, 0), 4)),
            last: Some(pass(1, true, report(2, 1), 2)),
            ..HealStatus::default()
        },
        usage: Some(UsageSnapshot {
            buckets: [(
                "photos".to_string(),
                BucketUsage {
                    objects: 2,
                    bytes: 10,
                    noncurrent_versions: 1,
                    noncurrent_bytes: 4,
                },
            )]
            .into(),
            pools: vec![
                Some(crate::object::PoolUsage {
                    keys: 3,
                    versions: 4,
                    bytes: 500,
                    capacity: 9000,
                }),
                None,
            ],
            finished: SystemTime::now(),
            took: Duration::from_millis(5),
        }),
        lifecycle: [(
            "photos".to_string(),
            crate::lifecycle::engine::BucketActivity {
                last_scan_ms: Some(1_000),
                objects_scanned: 2,
                rules: [(
                    "tmp".to_string(),
                    crate::lifecycle::engine::RuleActivity {
                        expired: 3,
                        ..Default::default()
                    },
                )]
                .into(),
            },
        )]
        .into(),
        pools: vec![PoolSample::default(); 2],
        rebalanced_keys: 7,
        rebalanced_bytes: 700,
    };
    metrics.encode(&snapshot)
}

#[test]
fn the_exposition_has_every_metric() {
    let text = full_exposition();
    let names = sample_names(&text);
    for name in [
        "strata_requests_total",
        "strata_request_duration_seconds_bucket",
        "strata_request_duration_seconds_count",
        "strata_request_duration_seconds_sum",
        "strata_received_bytes_total",
        "strata_sent_bytes_total",
        "strata_drive_online",
        "strata_drive_healing",
        "strata_drive_stalled",
        "strata_drive_free_bytes",
        "strata_drive_total_bytes",
        "strata_bucket_objects",
        "strata_bucket_bytes",
        "strata_bucket_noncurrent_versions",
        "strata_bucket_noncurrent_bytes",
        "strata_heal_objects_checked_total",
        "strata_heal_objects_healed_total",
        "strata_heal_running",
        "strata_heal_objects_remaining",
        "strata_usage_scan_timestamp_seconds",
        "strata_pool_rebalance_moved_objects_total",
        "strata_pool_objects",
        "strata_pool_versions",
        "strata_pool_data_bytes",
        "strata_pool_rebalance_moved_bytes_total",
        "strata_lifecycle_expired_total",
        "strata_lifecycle_uploads_aborted_total",
        "strata_lifecycle_transitions_skipped_total",
        "strata_lifecycle_versions_removed_total",
        "strata_lifecycle_delete_markers_removed_total",
        "strata_lifecycle_transitioned_total",
        "strata_lifecycle_transitions_failed_total",
        "strata_lifecycle_last_scan_timestamp_seconds",
        "strata_lifecycle_objects_scanned",
    ] {
        assert!(names.contains(name), "{name} missing from:\n{text}");
    }
    assert!(
        text.contains(r#"strata_requests_total{operation="GetObject",status="200"} 1"#),
        "{text}"
    );
    assert!(text.contains(r#"strata_sent_bytes_total{operation="GetObject"} 5"#));
    assert!(
        text.contains(
            r#"strata_request_duration_seconds_bucket{le="0.005",operation="GetObject"} 1"#
        ) || text.contains(
            r#"strata_request_duration_seconds_bucket{operation="GetObject",le="0.005"} 1"#
        ),
        "{text}"
    );
    assert!(text.contains(r#"strata_drive_free_bytes{set="1",drive="/data/d1"} 60"#));
    assert!(text.contains(r#"strata_bucket_bytes{bucket="photos"} 10"#));
    // Last pass (2 checked) and the running one (1 so far).
    assert!(
        text.contains("strata_heal_objects_checked_total 3"),
        "{text}"
    );
    assert!(text.contains("strata_heal_objects_remaining 3"), "{text}");
    assert!(text.contains("strata_heal_running 1"), "{text}");
}

#[test]
fn heal_counters_count_each_pass_once_and_never_go_down() {
    let mut totals = HealTotals::default();
    let mut status = HealStatus {
        running: Some(pass(10, false, report(5, 1), 20)),
        ..HealStatus::default()
    };
    totals.observe(&status);
    assert_eq!((totals.checked, totals.healed), (5, 1));
    status.last = Some(pass(10, true, report(20, 2), 20));
    status.running = None;
    totals.observe(&status);
    totals.observe(&status);
    assert_eq!((totals.checked, totals.healed), (20, 2));
    status.running = Some(pass(50, false, report(3, 0), 20));
    status.healed_after_reads = report(4, 4);
    totals.observe(&status);
    assert_eq!((totals.checked, totals.healed), (27, 6));
    // A pass seen only once it finished, with less than the running one showed.
    status.running = None;
    status.last = Some(pass(50, true, report(1, 0), 20));
    totals.observe(&status);
    assert_eq!((totals.checked, totals.healed), (27, 6));
}

#[test]
fn scrapes_are_unsigned_gets_of_exactly_metrics() {
    let request = |method: Method, uri: &str, headers: &[(&str, &str)]| {
        let mut builder = Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(Body::empty()).unwrap()
    };
    assert!(may_be_scrape(&request(Method::GET, "/metrics", &[])));
    let bearer = [("authorization", "Bearer abc")];
    assert!(may_be_scrape(&request(Method::GET, "/metrics", &bearer)));
    let signed = [("authorization", "AWS4-HMAC-SHA256 Credential=x")];
    assert!(!may_be_scrape(&request(Method::GET, "/metrics", &signed)));
    let presigned = "/metrics?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00";
    assert!(!may_be_scrape(&request(Method::GET, presigned, &[])));
    assert!(!may_be_scrape(&request(Method::PUT, "/metrics", &[])));
    assert!(!may_be_scrape(&request(Method::GET, "/metrics/x", &[])));
    assert!(!may_be_scrape(&request(Method::GET, "/metricsx", &[])));
}

#[test]
fn bearer_mode_needs_the_configured_token() {
    let with = |value: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value.parse().unwrap());
        headers
    };
    let m = metrics(MetricsAuth::Bearer, Some("tok3n"));
    assert!(m.refusal(&with("Bearer tok3n")).is_none());
    assert!(m.refusal(&with("bearer  tok3n ")).is_none());
    let refused = m.refusal(&with("Bearer nope")).unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        m.refusal(&HeaderMap::new()).unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    let unset = metrics(MetricsAuth::Bearer, None);
    assert_eq!(
        unset.refusal(&with("Bearer x")).unwrap().status(),
        StatusCode::FORBIDDEN
    );
    assert!(metrics(MetricsAuth::Public, None)
        .refusal(&HeaderMap::new())
        .is_none());
}

#[test]
fn request_and_response_bytes() {
    let mut headers = HeaderMap::new();
    assert_eq!(request_bytes(&headers), 0);
    headers.insert("x-amz-decoded-content-length", "7".parse().unwrap());
    assert_eq!(request_bytes(&headers), 7);
    headers.insert("content-length", "9".parse().unwrap());
    assert_eq!(request_bytes(&headers), 9);
    // A HEAD announces the object's length but sends no body.
    let mut head = Response::new(Body::empty());
    head.headers_mut()
        .insert(header::CONTENT_LENGTH, "1000".parse().unwrap());
    assert_eq!(response_bytes(&head), 0);
    let stream = futures::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from("abc"))]);
    let mut streamed = Response::new(Body::from_stream(stream));
    streamed
        .headers_mut()
        .insert(header::CONTENT_LENGTH, "3".parse().unwrap());
    assert_eq!(response_bytes(&streamed), 3);
}

/// The example dashboard is valid JSON and asks only for series the exporter writes.
#[test]
fn the_grafana_dashboard_parses_and_uses_only_exported_metrics() {
    let text = include_str!("../../deploy/grafana/strata-dashboard.json");
    let dashboard: serde_json::Value = serde_json::from_str(text).expect("dashboard JSON");
    let exported = sample_names(&full_exposition());
    let mut exprs = Vec::new();
    collect_exprs(&dashboard, &mut exprs);
    assert!(exprs.len() >= 8, "too few queries: {exprs:?}");
    for expr in &exprs {
        let names = metric_names_in(expr);
        assert!(!names.is_empty(), "query names no metric: {expr}");
        for name in names {
            assert!(
                exported.contains(&name),
                "dashboard query {expr:?} uses {name}, which the exporter does not write"
            );
        }
    }
    let inputs = dashboard["__inputs"].as_array().expect("__inputs");
    assert!(inputs.iter().any(|i| i["name"] == "DS_PROMETHEUS"));
}

fn collect_exprs(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("expr", serde_json::Value::String(expr)) => out.push(expr.clone()),
                    _ => collect_exprs(value, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_exprs(v, out)),
        _ => {}
    }
}

fn metric_names_in(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(start) = rest.find("strata_") {
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    names
}
