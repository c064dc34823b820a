//! Prometheus metrics at `GET /metrics`, in the Prometheus text exposition format (0.0.4).
//!
//! - Requests: counted in [`Metrics::record`], called once per request by `api::handle`, by
//!   operation (`PutObject`, `GetObject`, ...; `Anonymous`, `Unauthenticated` and
//!   `NotImplemented` for requests refused before routing) and HTTP status, with their
//!   latency (until the response headers are ready: the time to first byte of a GET) and the
//!   bytes they carried in and out.
//! - Drives, heal and bucket usage: read when scraped, from the deployment, the healer and the
//!   last count of the usage scanner (`crate::background::usage`), so a scrape never lists a bucket.
//!
//! Only an unsigned `GET /metrics` is a scrape: a signed one is an S3 request for a bucket
//! named `metrics`. Scrapers authenticate with `Authorization: Bearer STRATA_METRICS_TOKEN`,
//! or not at all with `STRATA_METRICS_AUTH=public`.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::Response;
use prometheus_client::encoding::{prometheus_text, EncodeLabelSet};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use subtle::ConstantTimeEq;

use crate::background::healing::{HealStatus, Healer};
use crate::background::usage::{Usage, UsageSnapshot};
use crate::config::{MetricsAuth, MetricsConfig};
use crate::deployment::Deployment;
use crate::object::ObjectStore;
use crate::storage::{DiskInfo, Drive};

/// `Content-Type` of the answer: the Prometheus text format, version 0.0.4.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// Upper bounds of the request latency buckets, in seconds: 1 ms to 60 s.
pub const LATENCY_BUCKETS: [f64; 15] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// How long a scrape waits for one drive's free space before leaving it out.
const DISK_INFO_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the heal counters look at the healer, so that passes finishing between two
/// scrapes are all counted.
const HEAL_SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    operation: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    /// Server pool, counted from 1 as `strata admin pool list` shows it.
    pool: usize,
    /// `active`: it takes new keys.
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DriveLabels {
    /// Erasure set, counted from 1 as `strata admin info` shows it.
    set: usize,
    /// The drive folder.
    drive: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RuleLabels {
    bucket: String,
    rule: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BucketLabels {
    bucket: String,
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The request metrics, the scrape settings and the running heal totals.
pub struct Metrics {
    auth: MetricsAuth,
    token: Option<String>,
    usage: Arc<Usage>,
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<OperationLabels, Histogram, fn() -> Histogram>,
    received: Family<OperationLabels, Counter>,
    sent: Family<OperationLabels, Counter>,
    heal: Mutex<HealTotals>,
    /// Every request counted together, for the console's live charts.
    totals: RequestTotals,
}

/// Counts of every request answered since the start, whatever its operation: what a chart of
/// the request rate, latency and throughput takes differences of.
#[derive(Debug, Default)]
pub struct RequestTotals {
    requests: std::sync::atomic::AtomicU64,
    /// Answered with a 5xx status.
    server_errors: std::sync::atomic::AtomicU64,
    /// Time to response headers, summed.
    micros: std::sync::atomic::AtomicU64,
    received_bytes: std::sync::atomic::AtomicU64,
    sent_bytes: std::sync::atomic::AtomicU64,
}

impl RequestTotals {
    /// The totals as JSON.
    pub fn read(&self) -> serde_json::Value {
        use std::sync::atomic::Ordering::Relaxed;
        serde_json::json!({
            "requests": self.requests.load(Relaxed),
            "server_errors": self.server_errors.load(Relaxed),
            "micros": self.micros.load(Relaxed),
            "received_bytes": self.received_bytes.load(Relaxed),
            "sent_bytes": self.sent_bytes.load(Relaxed),
        })
    }
}

/// A lifecycle counter: its name, its help, and what it counts of a rule's activity.
type RuleCount = (
    &'static str,
    &'static str,
    fn(&crate::lifecycle::engine::RuleActivity) -> u64,
);

/// Looks at the healer every second, so that the heal counters miss no pass.
pub struct HealSampler {
    pub metrics: Arc<Metrics>,
    pub healer: Arc<Healer>,
    pub store: Arc<ObjectStore>,
}

#[async_trait::async_trait]
impl crate::background::Worker for HealSampler {
    fn name(&self) -> &'static str {
        "heal-metrics-sampler"
    }

    fn interval(&self) -> Duration {
        HEAL_SAMPLE_INTERVAL
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        self.metrics.observe_heal(&self.healer.status(&self.store));
        Ok("sampled".into())
    }
}

impl Metrics {
    pub fn new(config: &MetricsConfig, usage: Arc<Usage>) -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let durations =
            Family::<OperationLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        let received = Family::<OperationLabels, Counter>::default();
        let sent = Family::<OperationLabels, Counter>::default();
        registry.register(
            "strata_requests",
            "S3 requests answered, by operation and HTTP status",
            requests.clone(),
        );
        registry.register(
            "strata_request_duration_seconds",
            "Time from a request's arrival until its response headers are ready, by operation",
            durations.clone(),
        );
        registry.register(
            "strata_received_bytes",
            "Request body bytes (Content-Length, or the decoded length), by operation",
            received.clone(),
        );
        registry.register(
            "strata_sent_bytes",
            "Response body bytes (the announced length), by operation",
            sent.clone(),
        );
        Self {
            auth: config.auth,
            token: config.token.clone(),
            usage,
            registry,
            requests,
            durations,
            received,
            sent,
            heal: Mutex::new(HealTotals::default()),
            totals: RequestTotals::default(),
        }
    }

    pub fn totals(&self) -> &RequestTotals {
        &self.totals
    }

    /// Counts one answered request.
    pub fn record(
        &self,
        operation: &'static str,
        response: &Response,
        elapsed: Duration,
        received: u64,
    ) {
        let status = response.status().as_u16();
        self.requests
            .get_or_create(&RequestLabels { operation, status })
            .inc();
        let by_operation = OperationLabels { operation };
        self.durations
            .get_or_create(&by_operation)
            .observe(elapsed.as_secs_f64());
        self.received.get_or_create(&by_operation).inc_by(received);
        let sent = response_bytes(response);
        self.sent.get_or_create(&by_operation).inc_by(sent);
        use std::sync::atomic::Ordering::Relaxed;
        let totals = &self.totals;
        totals.requests.fetch_add(1, Relaxed);
        if status >= 500 {
            totals.server_errors.fetch_add(1, Relaxed);
        }
        totals.micros.fetch_add(elapsed.as_micros() as u64, Relaxed);
        totals.received_bytes.fetch_add(received, Relaxed);
        totals.sent_bytes.fetch_add(sent, Relaxed);
    }

    fn observe_heal(&self, status: &HealStatus) -> HealTotals {
        let mut totals = self.heal.lock().expect("not poisoned");
        totals.observe(status);
        totals.clone()
    }

    /// What a scrape reports besides the request metrics, read now.
    pub async fn snapshot(
        &self,
        deployment: &Deployment,
        healer: &Healer,
        store: &ObjectStore,
        lifecycle: &crate::lifecycle::LifecycleStatus,
    ) -> Snapshot {
        let spaces = futures::future::join_all(deployment.drives.iter().map(|drive| async move {
            if !drive.is_online() || drive.is_stalled() {
                return None;
            }
            tokio::time::timeout(DISK_INFO_TIMEOUT, drive.slot.disk_info())
                .await
                .ok()?
                .ok()
        }))
        .await;
        let drives = deployment
            .drives
            .iter()
            .zip(spaces)
            .map(|(drive, space)| DriveSample {
                pool: 1
                    + (deployment.pools.iter())
                        .position(|pool| pool.sets.contains(&drive.set_index))
                        .unwrap_or(0),
                set: drive.set_index + 1,
                drive: drive.path.display().to_string(),
                online: drive.is_online(),
                healing: drive.is_healing(),
                stalled: drive.is_stalled(),
                space,
            })
            .collect();
        Snapshot {
            drives,
            heal: healer.status(store),
            lifecycle: lifecycle.all(),
            usage: self.usage.latest(),
            pools: Vec::new(),
            rebalanced_keys: 0,
            rebalanced_bytes: 0,
        }
    }

    /// The exposition: request metrics, then what `snapshot` read.
    pub fn encode(&self, snapshot: &Snapshot) -> String {
        let heal = self.observe_heal(&snapshot.heal);
        let mut registry = Registry::default();

        let drive_gauge = |registry: &mut Registry, name: &str, help: &str| {
            let family = Family::<DriveLabels, Gauge>::default();
            registry.register(name, help, family.clone());
            family
        };
        let online = drive_gauge(
            &mut registry,
            "strata_drive_online",
            "1 while the drive is in service, 0 while it is offline",
        );
        let healing = drive_gauge(
            &mut registry,
            "strata_drive_healing",
            "1 while the drive is back in service but not yet given everything it missed",
        );
        let stalled = drive_gauge(
            &mut registry,
            "strata_drive_stalled",
            "1 while the drive misses its deadlines and requests are served around it",
        );
        let free = drive_gauge(
            &mut registry,
            "strata_drive_free_bytes",
            "Bytes available to the server on the drive's filesystem (online drives)",
        );
        let total = drive_gauge(
            &mut registry,
            "strata_drive_total_bytes",
            "Size of the drive's filesystem (online drives)",
        );
        for drive in &snapshot.drives {
            let labels = DriveLabels {
                set: drive.set,
                drive: drive.drive.clone(),
            };
            online.get_or_create(&labels).set(drive.online.into());
            healing.get_or_create(&labels).set(drive.healing.into());
            stalled.get_or_create(&labels).set(drive.stalled.into());
            if let Some(space) = &drive.space {
                free.get_or_create(&labels).set(saturating_i64(space.free));
                total
                    .get_or_create(&labels)
                    .set(saturating_i64(space.total));
            }
        }
        let pool_gauge = |registry: &mut Registry, name: &str, help: &str| {
            let family = Family::<PoolLabels, Gauge>::default();
            registry.register(name, help, family.clone());
            family
        };
        let pool_free = pool_gauge(
            &mut registry,
            "strata_pool_free_bytes",
            "Bytes available on the server pool's online drives, summed",
        );
        let pool_total = pool_gauge(
            &mut registry,
            "strata_pool_total_bytes",
            "Size of the server pool's online drives, summed",
        );
        let state_of = |pool: usize| snapshot.pools.get(pool - 1).map_or("active", |p| p.state);
        for drive in &snapshot.drives {
            let labels = PoolLabels {
                pool: drive.pool,
                state: state_of(drive.pool),
            };
            let (free, total) = (
                pool_free.get_or_create(&labels),
                pool_total.get_or_create(&labels),
            );
            if let Some(space) = &drive.space {
                free.inc_by(saturating_i64(space.free));
                total.inc_by(saturating_i64(space.total));
            }
        }
        let moved = |registry: &mut Registry, name: &str, help: &str| {
            let family = Family::<PoolLabels, Counter>::default();
            registry.register(name, help, family.clone());
            family
        };
        let moved_keys = moved(
            &mut registry,
            "strata_pool_decommission_moved_objects",
            "Keys a decommission moved out of the server pool, since the start",
        );
        let moved_bytes = moved(
            &mut registry,
            "strata_pool_decommission_moved_bytes",
            "Bytes of data a decommission moved out of the server pool, since the start",
        );
        for (index, pool) in snapshot.pools.iter().enumerate() {
            let labels = PoolLabels {
                pool: index + 1,
                state: pool.state,
            };
            moved_keys.get_or_create(&labels).inc_by(pool.moved_keys);
            moved_bytes.get_or_create(&labels).inc_by(pool.moved_bytes);
        }
        let counted = snapshot
            .usage
            .as_ref()
            .map_or(&[][..], |u| u.pools.as_slice());
        if !counted.is_empty() {
            let objects = pool_gauge(
                &mut registry,
                "strata_pool_objects",
                "Keys with data the server pool holds, at the last usage scan",
            );
            let versions = pool_gauge(
                &mut registry,
                "strata_pool_versions",
                "Object versions with data the server pool holds, at the last usage scan",
            );
            let bytes = pool_gauge(
                &mut registry,
                "strata_pool_data_bytes",
                "Bytes of object data the server pool holds (as stored), at the last usage scan",
            );
            for (index, usage) in counted.iter().enumerate() {
                let Some(usage) = usage else { continue };
                let labels = PoolLabels {
                    pool: index + 1,
                    state: state_of(index + 1),
                };
                objects
                    .get_or_create(&labels)
                    .set(saturating_i64(usage.keys));
                versions
                    .get_or_create(&labels)
                    .set(saturating_i64(usage.versions));
                bytes
                    .get_or_create(&labels)
                    .set(saturating_i64(usage.bytes));
            }
        }
        if snapshot.pools.len() > 1 {
            for (name, help, value) in [
                (
                    "strata_pool_rebalance_moved_objects",
                    "Keys the rebalance moved between server pools, since it or the server started",
                    snapshot.rebalanced_keys,
                ),
                (
                    "strata_pool_rebalance_moved_bytes",
                    "Bytes of data the rebalance moved between server pools, since it or the server started",
                    snapshot.rebalanced_bytes,
                ),
            ] {
                registry.register(name, help, ConstCounter::new(value));
            }
        }

        let status = &snapshot.heal;
        registry.register(
            "strata_heal_objects_checked",
            "Objects heal passes and heals after damaged reads went over, since the start",
            ConstCounter::new(heal.checked),
        );
        registry.register(
            "strata_heal_objects_healed",
            "Objects that had something repaired, since the start",
            ConstCounter::new(heal.healed),
        );
        let gauge = |registry: &mut Registry, name: &str, help: &str, value: i64| {
            let gauge = Gauge::<i64>::default();
            gauge.set(value);
            registry.register(name, help, gauge);
        };
        gauge(
            &mut registry,
            "strata_heal_running",
            "1 while a heal pass runs",
            status.running.is_some().into(),
        );
        gauge(
            &mut registry,
            "strata_heal_objects_remaining",
            "Objects known to wait for healing: the running pass's rest and damaged reads queued",
            saturating_i64(status.objects_to_heal()),
        );
        let running = status.running.as_ref();
        gauge(
            &mut registry,
            "strata_heal_pass_objects",
            "Objects the running heal pass goes over (0 with none running)",
            saturating_i64(running.map_or(0, |p| p.objects_total)),
        );
        gauge(
            &mut registry,
            "strata_heal_pass_objects_checked",
            "Objects the running heal pass went over so far (0 with none running)",
            saturating_i64(running.map_or(0, |p| p.report.objects_checked)),
        );
        if let Some(finished) = status.last.as_ref().and_then(|p| p.finished_ms) {
            let last = Gauge::<f64, AtomicU64>::default();
            last.set(finished as f64 / 1000.0);
            registry.register(
                "strata_heal_last_pass_timestamp_seconds",
                "When the last heal pass finished, Unix seconds",
                last,
            );
        }

        // One counter per kind of lifecycle action, by bucket and rule.
        let rule_counts: [RuleCount; 7] = [
            (
                "strata_lifecycle_expired",
                "Objects the lifecycle scanner expired, by bucket and rule",
                |a| a.expired,
            ),
            (
                "strata_lifecycle_uploads_aborted",
                "Incomplete multipart uploads the lifecycle scanner aborted, by bucket and rule",
                |a| a.uploads_aborted,
            ),
            (
                "strata_lifecycle_transitions_skipped",
                "Transitions due but not done (no tier of that storage class), by bucket and rule",
                |a| a.transitions_skipped,
            ),
            (
                "strata_lifecycle_versions_removed",
                "Noncurrent versions the lifecycle scanner removed, by bucket and rule",
                |a| a.versions_removed,
            ),
            (
                "strata_lifecycle_delete_markers_removed",
                "Expired delete markers the lifecycle scanner removed, by bucket and rule",
                |a| a.markers_removed,
            ),
            (
                "strata_lifecycle_transitioned",
                "Object versions the lifecycle scanner moved to a tier, by bucket and rule",
                |a| a.transitioned,
            ),
            (
                "strata_lifecycle_transitions_failed",
                "Transitions that failed (a tier unreachable) and are retried, by bucket and rule",
                |a| a.transitions_failed,
            ),
        ];
        let rule_families: Vec<_> = rule_counts
            .iter()
            .map(|(name, help, count)| {
                let family = Family::<RuleLabels, Counter>::default();
                registry.register(*name, *help, family.clone());
                (family, count)
            })
            .collect();
        let last_scan = Family::<BucketLabels, Gauge<f64, AtomicU64>>::default();
        registry.register(
            "strata_lifecycle_last_scan_timestamp_seconds",
            "When the lifecycle scanner last finished a bucket, Unix seconds",
            last_scan.clone(),
        );
        let scanned = Family::<BucketLabels, Gauge>::default();
        registry.register(
            "strata_lifecycle_objects_scanned",
            "Object versions the lifecycle scanner's last pass over a bucket judged",
            scanned.clone(),
        );
        for (bucket, activity) in &snapshot.lifecycle {
            for (rule, counts) in &activity.rules {
                let labels = RuleLabels {
                    bucket: bucket.clone(),
                    rule: rule.clone(),
                };
                for (family, count) in &rule_families {
                    family.get_or_create(&labels).inc_by(count(counts));
                }
            }
            if let Some(at) = activity.last_scan_ms {
                let labels = BucketLabels {
                    bucket: bucket.clone(),
                };
                last_scan.get_or_create(&labels).set(at as f64 / 1000.0);
                scanned
                    .get_or_create(&labels)
                    .set(activity.objects_scanned as i64);
            }
        }

        if let Some(usage) = &snapshot.usage {
            let objects = Family::<BucketLabels, Gauge>::default();
            let bytes = Family::<BucketLabels, Gauge>::default();
            registry.register(
                "strata_bucket_objects",
                "Objects in the bucket at the last usage scan",
                objects.clone(),
            );
            registry.register(
                "strata_bucket_bytes",
                "Bytes of object data in the bucket at the last usage scan",
                bytes.clone(),
            );
            let noncurrent = Family::<BucketLabels, Gauge>::default();
            let noncurrent_bytes = Family::<BucketLabels, Gauge>::default();
            registry.register(
                "strata_bucket_noncurrent_versions",
                "Noncurrent object versions a versioned bucket keeps, at the last usage scan",
                noncurrent.clone(),
            );
            registry.register(
                "strata_bucket_noncurrent_bytes",
                "Bytes of the noncurrent versions a versioned bucket keeps, at the last usage scan",
                noncurrent_bytes.clone(),
            );
            for (bucket, counted) in &usage.buckets {
                let labels = BucketLabels {
                    bucket: bucket.clone(),
                };
                objects
                    .get_or_create(&labels)
                    .set(saturating_i64(counted.objects));
                bytes
                    .get_or_create(&labels)
                    .set(saturating_i64(counted.bytes));
                noncurrent
                    .get_or_create(&labels)
                    .set(saturating_i64(counted.noncurrent_versions));
                noncurrent_bytes
                    .get_or_create(&labels)
                    .set(saturating_i64(counted.noncurrent_bytes));
            }
            let finished = Gauge::<f64, AtomicU64>::default();
            finished.set(
                usage
                    .finished
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs_f64(),
            );
            registry.register(
                "strata_usage_scan_timestamp_seconds",
                "When the last bucket usage scan finished, Unix seconds",
                finished,
            );
            let took = Gauge::<f64, AtomicU64>::default();
            took.set(usage.took.as_secs_f64());
            registry.register(
                "strata_usage_scan_duration_seconds",
                "How long the last bucket usage scan took",
                took,
            );
        }

        let mut out = String::new();
        prometheus_text::encode(&mut out, &self.registry).expect("writing to a String");
        prometheus_text::encode(&mut out, &registry).expect("writing to a String");
        out
    }

    /// The answer when the scraper may not read the metrics; `None` when it may.
    fn refusal(&self, headers: &HeaderMap) -> Option<Response> {
        if self.auth == MetricsAuth::Public {
            return None;
        }
        let Some(token) = &self.token else {
            return Some(text_response(
                StatusCode::FORBIDDEN,
                "Metrics need a bearer token, and none is configured: set STRATA_METRICS_TOKEN \
                 and scrape with 'Authorization: Bearer <token>', or set \
                 STRATA_METRICS_AUTH=public to let anyone who reaches the server scrape.\n",
            ));
        };
        let sent = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token);
        match sent {
            Some(sent) if bool::from(sent.as_bytes().ct_eq(token.as_bytes())) => None,
            _ => {
                let mut response = text_response(
                    StatusCode::UNAUTHORIZED,
                    "Scrape with 'Authorization: Bearer <STRATA_METRICS_TOKEN>'.\n",
                );
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer realm=\"strata metrics\""),
                );
                Some(response)
            }
        }
    }
}

/// The heal counters: every finished pass once, plus the running pass and the heals after
/// damaged reads so far. Never lower than what a scrape saw before.
#[derive(Debug, Clone, Default)]
struct HealTotals {
    /// Start and end of the last finished pass counted.
    counted_pass: Option<(i64, Option<i64>)>,
    finished_checked: u64,
    finished_healed: u64,
    checked: u64,
    healed: u64,
}

impl HealTotals {
    fn observe(&mut self, status: &HealStatus) {
        if let Some(last) = &status.last {
            let id = (last.started_ms, last.finished_ms);
            if self.counted_pass != Some(id) {
                self.counted_pass = Some(id);
                self.finished_checked += last.report.objects_checked;
                self.finished_healed += last.report.objects_healed;
            }
        }
        let (running_checked, running_healed) = status.running.as_ref().map_or((0, 0), |p| {
            (p.report.objects_checked, p.report.objects_healed)
        });
        let reads = &status.healed_after_reads;
        let checked = self.finished_checked + running_checked + reads.objects_checked;
        let healed = self.finished_healed + running_healed + reads.objects_healed;
        self.checked = self.checked.max(checked);
        self.healed = self.healed.max(healed);
    }
}

/// One drive as a scrape sees it.
#[derive(Debug, Clone)]
pub struct DriveSample {
    /// Server pool, from 1.
    pub pool: usize,
    /// Erasure set, from 1.
    pub set: usize,
    pub drive: String,
    pub online: bool,
    pub healing: bool,
    pub stalled: bool,
    /// `None` for drives offline, stalled or too slow to answer.
    pub space: Option<DiskInfo>,
}

/// What a scrape reads besides the request metrics.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub drives: Vec<DriveSample>,
    pub heal: HealStatus,
    /// What the lifecycle scanner did, per bucket.
    pub lifecycle: std::collections::BTreeMap<String, crate::lifecycle::engine::BucketActivity>,
    /// `None` until the usage scanner's first count.
    pub usage: Option<UsageSnapshot>,
    /// Each server pool, in order.
    pub pools: Vec<PoolSample>,
    /// Keys and bytes the rebalance moved since this server started it (or started).
    pub rebalanced_keys: u64,
    pub rebalanced_bytes: u64,
}

/// One server pool at a scrape.
#[derive(Debug, Clone, Default)]
pub struct PoolSample {
    pub state: &'static str,
    /// Keys and bytes its decommission moved out since the server started.
    pub moved_keys: u64,
    pub moved_bytes: u64,
}

/// Request body bytes: `Content-Length`, or the decoded length of an `aws-chunked` body sent
/// without one.
pub fn request_bytes(headers: &HeaderMap) -> u64 {
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    number("content-length")
        .or_else(|| number("x-amz-decoded-content-length"))
        .unwrap_or(0)
}

/// Response body bytes: the body's exact length when it is in memory (0 for HEAD), else the
/// announced `Content-Length` (streamed GET bodies).
fn response_bytes(response: &Response) -> u64 {
    if let Some(exact) = response.body().size_hint().exact() {
        return exact;
    }
    response
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Whether the request could be a scrape: an unsigned `GET /metrics` (the front door also
/// checks that it is not a virtual-hosted bucket's key `metrics`). A bearer token is not an
/// S3 signature.
pub fn may_be_scrape(request: &Request) -> bool {
    if request.method() != Method::GET || request.uri().path() != "/metrics" {
        return false;
    }
    let signed_header = request
        .headers()
        .get(header::AUTHORIZATION)
        .is_some_and(|v| v.to_str().map_or(true, |v| bearer_token(v).is_none()));
    let presigned = request.uri().query().is_some_and(|q| {
        ["X-Amz-Signature", "X-Amz-Credential", "AWSAccessKeyId"]
            .iter()
            .any(|p| q.contains(p))
    });
    !signed_header && !presigned
}

/// What a scrape reports on.
pub struct Sources<'a> {
    pub deployment: &'a Deployment,
    pub healer: &'a Healer,
    pub store: &'a ObjectStore,
    pub lifecycle: &'a crate::lifecycle::LifecycleStatus,
    pub drains: &'a crate::background::decommission::Drains,
    pub rebalancing: &'a crate::background::rebalance::Rebalancing,
}

/// Answers a scrape.
pub async fn answer(metrics: &Metrics, sources: Sources<'_>, headers: &HeaderMap) -> Response {
    if let Some(refused) = metrics.refusal(headers) {
        return refused;
    }
    let mut snapshot = metrics
        .snapshot(
            sources.deployment,
            sources.healer,
            sources.store,
            sources.lifecycle,
        )
        .await;
    snapshot.pools = (sources.store.pools().iter().enumerate())
        .map(|(index, pool)| {
            let progress = &sources.drains.pool(index).progress;
            PoolSample {
                state: pool.state().as_str(),
                moved_keys: progress.keys.load(std::sync::atomic::Ordering::Relaxed),
                moved_bytes: progress.bytes.load(std::sync::atomic::Ordering::Relaxed),
            }
        })
        .collect();
    let rebalanced = &sources.rebalancing.progress;
    snapshot.rebalanced_keys = rebalanced.keys.load(std::sync::atomic::Ordering::Relaxed);
    snapshot.rebalanced_bytes = rebalanced.bytes.load(std::sync::atomic::Ordering::Relaxed);
    let body = metrics.encode(&snapshot);
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, CONTENT_TYPE)
        .header(header::CACHE_CONTROL, "no-store")
        .header("server", "Strata")
        .body(Body::from(body))
        .expect("static headers are valid")
}

fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn text_response(status: StatusCode, message: &'static str) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header("server", "Strata")
        .body(Body::from(message))
        .expect("static headers are valid")
}

fn saturating_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The metric names of samples in a text exposition (`name{labels} value` lines).
pub fn sample_names(exposition: &str) -> BTreeSet<String> {
    exposition
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| {
            line.split(|c: char| c == '{' || c.is_whitespace())
                .next()
                .map(str::to_string)
        })
        .collect()
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
