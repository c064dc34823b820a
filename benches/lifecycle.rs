//! How much the background lifecycle scanner slows foreground S3 traffic, through the real
//! HTTP path: the release `strata` binary over 9 drive folders (6+3), signed requests with
//! reqwest.
//!
//! Goal: while the scanner works, the median latency of each foreground operation stays
//! within 1.10x of its median when the scanner has nothing to do.
//!
//! One bucket (`scanned`) holds N zero-byte objects, written straight into every drive's
//! metadata database exactly as a PUT of an empty body leaves them (with
//! `benches/common/fill.rs`, like `benches/list.rs`; filling by PUT would take hours). The
//! server runs with `STRATA_LIFECYCLE_DAY_SECONDS=24`, so the scanner starts a pass one second
//! after the last one ended. A far-future expiration rule (36,500 days) makes it list and
//! evaluate every object without acting.
//!
//! The foreground mix, one of each per round, in another bucket except the listing:
//!
//! - GET of a 4 KiB object;
//! - PUT of a 64 KiB object (a new key each time);
//! - ListObjectsV2 page of 1,000 keys of the scanned bucket, from a random place in it.
//!
//! Phases alternate: idle (no rule on the bucket: each pass only lists the buckets) and busy
//! (the rule is on), several of each, so that the load other work puts on this shared
//! machine weighs on both kinds alike. The server logs each pass of the scanner
//! (`strata::background` at debug); the bench reads those lines to learn when each pass ran
//! (from one second after the previous pass ended to its own end), which gives:
//!
//! - the scanner's rate, alone before the phases and under the foreground traffic;
//! - its duty in each busy phase (the share of the phase it spent in a pass; a check that it
//!   really ran);
//! - the slowdown **while scanning**, the goal figure: requests of busy phases that ran
//!   entirely inside a pass, against all requests of idle phases. This is what the clients
//!   of a bucket big enough to keep the scanner busy all the time would see, whatever N is.
//!   Requests of busy phases between passes are reported too, as a check (they should match
//!   idle). A scanner that paces itself inside a pass is judged with its pauses.
//!
//! Whole busy phases are compared with idle ones as well, but their medians say little:
//! with the scanner busy half the time and slowing requests down threefold, fewer than a
//! third of the requests run during a pass and the median barely moves; the mean shows it.
//! The bucket usage scanner and the scrubber are pushed out to a day so that they do not run
//! during the measurement.
//!
//! Run: `cargo bench --bench lifecycle`. Overrides (env): STRATA_BENCH_LIFECYCLE_KEYS (objects
//! in the scanned bucket, 200000), STRATA_BENCH_LIFECYCLE_ROUNDS (rounds per phase, 200),
//! STRATA_BENCH_LIFECYCLE_PHASES (idle/busy pairs, 3). A quick run:
//! `STRATA_BENCH_LIFECYCLE_KEYS=20000 STRATA_BENCH_LIFECYCLE_ROUNDS=100 cargo bench --bench
//! lifecycle` (with few keys a pass is short, so few requests run inside one: read the
//! counts). The server inherits the bench's environment, so server settings given there (the
//! scanner's pace, for one) are measured too. The drive folders live under
//! `CARGO_TARGET_TMPDIR` (target/tmp) and are removed at the end.

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use md5::Digest;
use percent_encoding::utf8_percent_encode;

use common::fill::{fill, template};
use common::request::{self, element, send, Payload, Span};
use common::server::{print_warnings, Server};
use common::sigv4::QUERY_VALUE;
use common::stats::{median, Figures};
use common::store::open_store;
use common::{env_or, DATA, PARITY};

/// The bucket the scanner walks (and the foreground listing pages through).
const SCANNED_BUCKET: &str = "scanned";
/// The bucket of the foreground GETs and PUTs; it never has rules.
const FOREGROUND_BUCKET: &str = "foreground";
const SMALL_KEY: &str = "small-4k";
const SMALL_SIZE: usize = 4 << 10;
const PUT_SIZE: usize = 64 << 10;
const PAGE: usize = 1000;
/// A lifecycle day of 24 s: a pass every second (the shortest pause the scanner takes).
const DAY_SECONDS: &str = "24";
/// The pause between two passes with that day; a pass starts this long after the last ended.
const PASS_PAUSE: Duration = Duration::from_secs(1);
/// Untimed rounds before anything is measured.
const WARM_UP: usize = 20;
const GOAL_RATIO: f64 = 1.10;
/// Every object is evaluated, none is due for a century.
const FAR_RULE: &str = "<LifecycleConfiguration><Rule><ID>far</ID><Status>Enabled</Status>\
    <Filter><Prefix></Prefix></Filter><Expiration><Days>36500</Days></Expiration></Rule>\
    </LifecycleConfiguration>";

/// Key number `i` of the scanned bucket; zero-padded, so key order is number order.
fn key(i: usize) -> String {
    format!("data/obj-{i:09}")
}

/// One finished pass of the lifecycle scanner, as the server logged it.
#[derive(Clone, Copy)]
struct Pass {
    /// When the server logged it, as the pass returned.
    done: Instant,
    /// Buckets with rules the pass walked.
    buckets: usize,
}

/// The scanner's passes so far, appended by the thread that reads the server's log.
#[derive(Clone, Default)]
struct Passes(Arc<Mutex<Vec<Pass>>>);

impl Passes {
    /// Records the pass if `line` is a `pass done` line of the lifecycle worker; says whether
    /// it was.
    fn record(&self, line: &str) -> bool {
        let Some(buckets) = lifecycle_pass(line) else {
            return false;
        };
        self.0.lock().expect("not poisoned").push(Pass {
            done: logged_at(line),
            buckets,
        });
        true
    }

    fn all(&self) -> Vec<Pass> {
        self.0.lock().expect("not poisoned").clone()
    }

    /// Waits for the first pass that ends after `after` and walked a number of buckets that
    /// `wanted` accepts.
    async fn after(&self, after: Instant, wanted: impl Fn(usize) -> bool) -> Pass {
        let deadline = Instant::now() + Duration::from_secs(1800);
        loop {
            let found = self
                .all()
                .into_iter()
                .find(|p| p.done > after && wanted(p.buckets));
            if let Some(pass) = found {
                return pass;
            }
            assert!(
                Instant::now() < deadline,
                "the lifecycle scanner logged no such pass in 30 minutes"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The buckets count of a `pass done` line of the lifecycle worker, if `line` is one.
fn lifecycle_pass(line: &str) -> Option<usize> {
    if !line.contains("pass done") || !line.contains("lifecycle") {
        return None;
    }
    let (before, _) = line.split_once(" buckets with rules scanned")?;
    before.rsplit(['=', ' ', '"']).next()?.parse().ok()
}

/// When the server wrote a log line, from its leading RFC 3339 timestamp, on this process's
/// clock; when the line was read if it has none. The bench's log reader shares two cores with
/// the foreground traffic and the server, so it may read a line milliseconds late.
fn logged_at(line: &str) -> Instant {
    let (read, now) = (Instant::now(), SystemTime::now());
    let written = line.split_whitespace().next().and_then(|stamp| {
        time::OffsetDateTime::parse(stamp, &time::format_description::well_known::Rfc3339).ok()
    });
    match written.and_then(|at| now.duration_since(SystemTime::from(at)).ok()) {
        Some(ago) => read.checked_sub(ago).unwrap_or(read),
        None => read,
    }
}

/// Starts the server with a pass every second, logging each worker's `pass done`, which go
/// to `passes`.
fn start_server(drives: &[PathBuf], passes: &Passes) -> Server {
    let env = [
        ("STRATA_LIFECYCLE_DAY_SECONDS", DAY_SECONDS),
        // The other scanners over every bucket stay out of the figures.
        ("STRATA_USAGE_SCAN_SECS", "86400"),
        ("STRATA_SCRUB_INTERVAL_SECS", "86400"),
        // Warnings, the `listening on` line, and each worker's `pass done`.
        (
            "STRATA_LOG",
            "warn,strata::server=info,strata::background=debug",
        ),
    ];
    let passes = passes.clone();
    Server::start(drives, &env, move |line| {
        if !passes.record(line) {
            print_warnings(line);
        }
    })
}

/// When the scanner was walking the bucket: from a pass's start (the pause after the
/// previous pass) to its end, for each pass that walked a bucket.
fn scans(passes: &[Pass]) -> Vec<(Instant, Instant)> {
    passes
        .windows(2)
        .filter(|w| w[1].buckets > 0)
        .map(|w| ((w[0].done + PASS_PAUSE).min(w[1].done), w[1].done))
        .collect()
}

/// How long the scans overlap `from..to`.
fn overlap(scans: &[(Instant, Instant)], from: Instant, to: Instant) -> Duration {
    scans
        .iter()
        .map(|&(start, end)| end.min(to).saturating_duration_since(start.max(from)))
        .sum()
}

// Where a request ran against the scanner's passes; `Span` is `common::request`'s.
impl Span {
    /// Whether the request ran entirely inside one of `scans`.
    fn inside(&self, scans: &[(Instant, Instant)]) -> bool {
        scans
            .iter()
            .any(|&(start, end)| start <= self.start && self.end <= end)
    }

    /// Whether the request ran entirely outside every one of `scans`.
    fn outside(&self, scans: &[(Instant, Instant)]) -> bool {
        scans
            .iter()
            .all(|&(start, end)| self.end <= start || end <= self.start)
    }
}

/// The foreground operations, in the order of a round.
const OPERATIONS: [&str; 3] = ["GET 4 KiB", "PUT 64 KiB", "LIST 1000 keys"];

/// The client side of the bench: the foreground traffic and the rule switch.
struct Foreground {
    client: reqwest::Client,
    endpoint: String,
    keys: usize,
    small: Payload,
    put: Payload,
    rule: Payload,
    puts: usize,
}

impl Foreground {
    fn url(&self, path_and_query: &str) -> String {
        format!("{}{path_and_query}", self.endpoint)
    }

    async fn put_small(&self) {
        let url = self.url(&format!("/{FOREGROUND_BUCKET}/{SMALL_KEY}"));
        send(&self.client, reqwest::Method::PUT, &url, &self.small, &[]).await;
    }

    /// One GET, one PUT and one LIST, each checked; when they ran, in `OPERATIONS` order.
    async fn round(&mut self) -> [Span; 3] {
        let url = self.url(&format!("/{FOREGROUND_BUCKET}/{SMALL_KEY}"));
        let (body, get) = request::get(&self.client, &url).await;
        assert!(body == self.small.body, "GET returns the small object");

        self.puts += 1;
        let url = self.url(&format!("/{FOREGROUND_BUCKET}/put-{:06}", self.puts));
        let (_, put) = send(&self.client, reqwest::Method::PUT, &url, &self.put, &[]).await;

        let first = rand::random_range(0..self.keys - PAGE);
        let url = self.url(&format!(
            "/{SCANNED_BUCKET}?list-type=2&max-keys={PAGE}&start-after={}",
            utf8_percent_encode(&key(first), QUERY_VALUE)
        ));
        let (body, list) = request::get(&self.client, &url).await;
        let xml = String::from_utf8_lossy(&body);
        assert_eq!(element(&xml, "KeyCount"), Some("1000"), "a full page");
        let expected = key(first + 1);
        assert_eq!(
            element(&xml, "Contents").and_then(|c| element(c, "Key")),
            Some(expected.as_str()),
            "the page starts after start-after"
        );
        [get, put, list]
    }

    async fn set_rule(&self, on: bool) {
        let url = self.url(&format!("/{SCANNED_BUCKET}?lifecycle"));
        if on {
            let md5 =
                base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(&self.rule.body));
            let headers = [("content-md5", md5)];
            send(
                &self.client,
                reqwest::Method::PUT,
                &url,
                &self.rule,
                &headers,
            )
            .await;
        } else {
            let empty = Payload::empty();
            send(&self.client, reqwest::Method::DELETE, &url, &empty, &[]).await;
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Idle,
    Busy,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Idle => "idle",
            Kind::Busy => "busy",
        }
    }
}

/// One timed phase: its kind, when it ran and when each request of each operation ran.
struct Phase {
    kind: Kind,
    start: Instant,
    end: Instant,
    spans: [Vec<Span>; 3],
}

impl Phase {
    fn ms(&self, op: usize) -> Vec<f64> {
        self.spans[op].iter().map(Span::ms).collect()
    }
}

/// Runs `rounds` timed rounds.
async fn phase(fg: &mut Foreground, kind: Kind, rounds: usize) -> Phase {
    let mut spans: [Vec<Span>; 3] = Default::default();
    let start = Instant::now();
    for _ in 0..rounds {
        for (op, span) in spans.iter_mut().zip(fg.round().await) {
            op.push(span);
        }
    }
    Phase {
        kind,
        start,
        end: Instant::now(),
        spans,
    }
}

/// Objects per second of each full scan of `keys` objects in `scans`.
fn rates(keys: usize, scans: &[(Instant, Instant)]) -> Vec<f64> {
    scans
        .iter()
        .map(|(start, end)| keys as f64 / (*end - *start).as_secs_f64())
        .collect()
}

fn main() {
    let keys: usize = env_or("STRATA_BENCH_LIFECYCLE_KEYS", 200_000);
    let rounds: usize = env_or("STRATA_BENCH_LIFECYCLE_ROUNDS", 200);
    let pairs: usize = env_or("STRATA_BENCH_LIFECYCLE_PHASES", 3);
    assert!(
        keys > PAGE,
        "STRATA_BENCH_LIFECYCLE_KEYS must exceed the {PAGE}-key page"
    );
    assert!(
        rounds >= 1 && pairs >= 1,
        "need at least one round and pair"
    );
    // Removed on drop, after the server is gone.
    let dir = common::temp_dir("lifecycle-bench-");
    let drives = common::drives(dir.path());
    println!(
        "lifecycle scanner vs foreground traffic: {keys} objects in the scanned bucket, \
         {DATA}+{PARITY} over {} drive folders under {}; {pairs} idle and {pairs} busy phases \
         of {rounds} rounds (GET 4 KiB, PUT 64 KiB, LIST {PAGE} keys) after {WARM_UP} untimed",
        DATA + PARITY,
        dir.path().display()
    );
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");

    runtime.block_on(async {
        let store = open_store(&drives);
        let template = template(&store, &[SCANNED_BUCKET, FOREGROUND_BUCKET]).await;
        let start = Instant::now();
        fill(&store, &template, SCANNED_BUCKET, keys, key).await;
        let took = start.elapsed().as_secs_f64();
        println!(
            "filled {keys} keys in {took:.1} s ({:.0} keys/s)",
            keys as f64 / took
        );
        // Closes the databases for the server.
    });

    let passes = Passes::default();
    let server = start_server(&drives, &passes);
    let mut fg = Foreground {
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .expect("reqwest client"),
        endpoint: server.endpoint.clone(),
        keys,
        small: Payload::new(vec![0x5a; SMALL_SIZE]),
        put: Payload::new(vec![0xa5; PUT_SIZE]),
        rule: Payload::new(FAR_RULE),
        puts: 0,
    };
    let phases = runtime.block_on(async {
        fg.put_small().await;
        for _ in 0..WARM_UP {
            fg.round().await;
        }

        // The scanner alone: two full passes with no foreground traffic, after one without
        // rules (a pass's start is known from the end of the one before).
        passes.after(Instant::now(), |b| b == 0).await;
        let on = Instant::now();
        fg.set_rule(true).await;
        let first = passes.after(on, |b| b > 0).await;
        let second = passes.after(first.done, |b| b > 0).await;
        let alone = scans(&passes.all())
            .into_iter()
            .filter(|&(start, end)| start >= on && end <= second.done)
            .collect::<Vec<_>>();
        println!(
            "scanner alone: {:.0} objects/s (passes of {keys} objects in {} s)",
            median(&rates(keys, &alone)),
            alone
                .iter()
                .map(|(s, e)| format!("{:.2}", (*e - *s).as_secs_f64()))
                .collect::<Vec<_>>()
                .join(", ")
        );

        let mut phases = Vec::new();
        for _ in 0..pairs {
            for kind in [Kind::Idle, Kind::Busy] {
                let switched = Instant::now();
                match kind {
                    Kind::Idle => {
                        fg.set_rule(false).await;
                        // A pass that walks no bucket: the one in flight at the switch is over.
                        passes.after(switched, |b| b == 0).await;
                    }
                    Kind::Busy => {
                        fg.set_rule(true).await;
                        // The next pass starts within the pause after the last (a pass without
                        // rules takes milliseconds) and sees the rule.
                        tokio::time::sleep(PASS_PAUSE + Duration::from_millis(200)).await;
                    }
                }
                phases.push(phase(&mut fg, kind, rounds).await);
            }
        }
        // The pass in flight when the last busy phase ended, so its scan is on record.
        let end = Instant::now();
        fg.set_rule(false).await;
        passes.after(end, |b| b == 0).await;
        phases
    });

    drop(server);
    report(keys, &phases, &passes.all());
}

/// The busy/idle ratios of one operation's median, mean and 90th percentile.
#[derive(Clone, Copy)]
struct Ratios {
    median: f64,
    mean: f64,
    p90: f64,
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Prints one table of figures per operation, idle-phase requests against `busy` ones, and
/// returns each operation's ratios.
fn print_table(title: &str, busy_label: &str, idle: &[Vec<f64>], busy: &[Vec<f64>]) -> Vec<Ratios> {
    println!("\n{title}");
    println!(
        "{:<16} | {:>24} | {:>27} | {:>6} | {:>6} | {:>6}",
        "operation",
        "idle median / p90 ms (n)",
        format!("{busy_label} median / p90 ms (n)"),
        "median",
        "mean",
        "p90"
    );
    println!("{}", "-".repeat(100));
    let mut ratios = Vec::new();
    for (op, name) in OPERATIONS.iter().enumerate() {
        let (i, b) = (Figures::of(&idle[op]), Figures::of(&busy[op]));
        let r = Ratios {
            median: b.median / i.median,
            mean: mean(&busy[op]) / mean(&idle[op]),
            p90: b.p90 / i.p90,
        };
        ratios.push(r);
        println!(
            "{name:<16} | {:>6.2} / {:>6.2} ({:>5}) | {:>9.2} / {:>6.2} ({:>5}) | {:>5.2}x | \
             {:>5.2}x | {:>5.2}x",
            i.median,
            i.p90,
            idle[op].len(),
            b.median,
            b.p90,
            busy[op].len(),
            r.median,
            r.mean,
            r.p90
        );
    }
    ratios
}

fn report(keys: usize, phases: &[Phase], passes: &[Pass]) {
    let scans = scans(passes);
    println!("\nper phase: median ms (GET / PUT / LIST), and how much of it the scanner ran");
    for (i, p) in phases.iter().enumerate() {
        let length = p.end - p.start;
        let duty = overlap(&scans, p.start, p.end).as_secs_f64() / length.as_secs_f64();
        let medians: Vec<String> = (0..OPERATIONS.len())
            .map(|op| format!("{:6.2}", median(&p.ms(op))))
            .collect();
        println!(
            "  {:>2} {} {:5.1} s: {} | scanner duty {:3.0}%{}",
            i + 1,
            p.kind.name(),
            length.as_secs_f64(),
            medians.join(" / "),
            duty * 100.0,
            match (p.kind, duty) {
                (Kind::Busy, d) if d < 0.3 => "  (WARNING: the scanner was mostly asleep)",
                (Kind::Idle, d) if d > 0.0 => "  (WARNING: the scanner ran in an idle phase)",
                _ => "",
            }
        );
    }

    // Times of one operation's requests of a kind of phase that `keep` accepts.
    let pooled = |kind: Kind, keep: &dyn Fn(&Span) -> bool| -> Vec<Vec<f64>> {
        (0..OPERATIONS.len())
            .map(|op| {
                phases
                    .iter()
                    .filter(|p| p.kind == kind)
                    .flat_map(|p| p.spans[op].iter().filter(|s| keep(s)).map(Span::ms))
                    .collect()
            })
            .collect()
    };
    let idle = pooled(Kind::Idle, &|_| true);
    let busy_time: Duration = phases
        .iter()
        .filter(|p| p.kind == Kind::Busy)
        .map(|p| p.end - p.start)
        .sum();
    let scanning: Duration = phases
        .iter()
        .filter(|p| p.kind == Kind::Busy)
        .map(|p| overlap(&scans, p.start, p.end))
        .sum();
    let duty = scanning.as_secs_f64() / busy_time.as_secs_f64();
    let whole = print_table(
        &format!(
            "busy phases as a whole (the scanner ran {:.0}% of the time, pausing {} s between \
             passes) against idle phases",
            duty * 100.0,
            PASS_PAUSE.as_secs()
        ),
        "busy",
        &idle,
        &pooled(Kind::Busy, &|_| true),
    );
    let during = print_table(
        "requests of busy phases that ran entirely during a pass of the scanner, against idle \
         phases: the slowdown while the scanner works (as on a bucket big enough to keep it \
         busy)",
        "in-pass",
        &idle,
        &pooled(Kind::Busy, &|s| s.inside(&scans)),
    );
    let between = pooled(Kind::Busy, &|s| s.outside(&scans));
    println!(
        "check: requests of busy phases between passes, median ms: {} (should match idle)",
        (0..OPERATIONS.len())
            .map(|op| format!(
                "{} {:.2} ({})",
                OPERATIONS[op].split(' ').next().unwrap_or_default(),
                median(&between[op]),
                between[op].len()
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );

    // Passes at least half inside busy phases: the scanner's rate under foreground traffic.
    let loaded: Vec<(Instant, Instant)> = scans
        .iter()
        .copied()
        .filter(|&(start, end)| {
            let inside: Duration = phases
                .iter()
                .filter(|p| p.kind == Kind::Busy)
                .map(|p| overlap(&[(start, end)], p.start, p.end))
                .sum();
            inside * 2 >= end - start
        })
        .collect();
    println!(
        "\nscanner under foreground traffic: {:.0} objects/s (median of {} passes of {keys} \
         objects, each at least half inside a busy phase)",
        median(&rates(keys, &loaded)),
        loaded.len(),
    );
    let met = during.iter().all(|r| r.median <= GOAL_RATIO);
    println!(
        "slowdown over whole busy phases (scanner duty {:.0}%), median (mean): GET {:.2}× \
         ({:.2}×), PUT {:.2}× ({:.2}×), LIST {:.2}× ({:.2}×)",
        duty * 100.0,
        whole[0].median,
        whole[0].mean,
        whole[1].median,
        whole[1].mean,
        whole[2].median,
        whole[2].mean
    );
    println!(
        "while scanning, mean and p90: GET {:.2}× / {:.2}×, PUT {:.2}× / {:.2}×, LIST {:.2}× / \
         {:.2}×",
        during[0].mean, during[0].p90, during[1].mean, during[1].p90, during[2].mean, during[2].p90
    );
    println!(
        "foreground slowdown while scanning: GET {:.2}×, PUT {:.2}×, LIST {:.2}× (goal ≤ \
         {GOAL_RATIO:.2}×): {}",
        during[0].median,
        during[1].median,
        during[2].median,
        if met { "met" } else { "NOT met" }
    );
}
