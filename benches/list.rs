//! ListObjectsV2 page latency as a bucket grows to 10k, 100k and 1M keys, through the real
//! HTTP path (the release `strata` binary over 9 drive folders, 6+3, signed GETs with
//! reqwest) and, beside it, `ObjectStore::list_objects` in-process.
//!
//! Goal (from the issue): a 1,000-key page in under 20 ms median at 1M keys, and within 1.5x
//! of the time at 10k keys, for every scenario below.
//!
//! Filling a million keys by PUT would take hours (a durable transaction on 9 drives per
//! key), so the bench writes zero-byte object records straight into every drive's metadata
//! database, 25,000 keys per transaction, exactly as a PUT of an empty body leaves them
//! (record and empty inline chunk), then lists them through the server. Each size has its
//! own deployment, all of them filled first and then measured side by side; key `i` is the
//! same at every size.
//!
//! Key layout (fractions of the keys, hence 500,000 under `big/` at 1M):
//!
//! - 50% `big/part-NNNNNNN.parquet`: one prefix that a root delimiter listing must skip;
//! - 20% `dataset/shard-SSSSS/sample-NNNNNN.bin`: 1,024 shards (about 2 keys each at 10k,
//!   195 at 1M), so listing `dataset/` with a delimiter yields a page of 1,000 common
//!   prefixes;
//! - 20% `events-NNNNNNN.json` at the root, after the prefixes;
//! - 10% `checkpoints/step-NNNNNNN/model.safetensors`, except 500 `annotations-NNNN.json` at
//!   the root, before `big/`.
//!
//! Run: `cargo bench --bench list`. Overrides (env): STRATA_BENCH_LIST_MAX (largest size,
//! 1000000; e.g. 100000 for a quick run), STRATA_BENCH_LIST_RUNS (timed pages per scenario
//! and size, 30). The drive folders live under `CARGO_TARGET_TMPDIR` (target/tmp) and are
//! removed at the end.

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use percent_encoding::utf8_percent_encode;
use strata::object::{ListEntry, ListQuery, ObjectStore};

use common::fill::{fill, template};
use common::request::{element, get};
use common::server::{print_warnings, Server};
use common::sigv4::QUERY_VALUE;
use common::stats::Figures;
use common::store::{bucket, open_store};
use common::{env_or, DATA, PARITY};

const BUCKET: &str = "bench";
const PAGE: usize = 1000;
const SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];
/// Untimed pages before each scenario's timed ones.
const WARM_UP: usize = 3;
const GOAL_MS: f64 = 20.0;
const GOAL_RATIO: f64 = 1.5;
const SHARDS: usize = 1024;
const ANNOTATIONS: usize = 500;

/// Key number `i` of the bucket; see the module comment for the layout.
fn key(i: usize) -> String {
    match i % 10 {
        0 | 2 | 4 | 6 | 8 => format!("big/part-{:07}.parquet", i / 2),
        1 | 3 => {
            let n = i / 10 * 2 + (i % 10 == 3) as usize;
            format!(
                "dataset/shard-{:05}/sample-{:06}.bin",
                n % SHARDS,
                n / SHARDS
            )
        }
        5 if i / 10 < ANNOTATIONS => format!("annotations-{:04}.json", i / 10),
        5 => format!("checkpoints/step-{:07}/model.safetensors", i / 10),
        _ => format!("events-{:07}.json", i / 10 * 2 + (i % 10 == 9) as usize),
    }
}

/// One timed listing.
struct Scenario {
    name: &'static str,
    prefix: &'static str,
    delimiter: Option<&'static str>,
    /// Where the page starts (sent as a continuation token, as a client paging would).
    after: Option<&'static str>,
    /// The first entry the page must hold.
    first: &'static str,
}

static SCENARIOS: [Scenario; 5] = [
    Scenario {
        name: "first page, no delimiter",
        prefix: "",
        delimiter: None,
        after: None,
        first: "annotations-0000.json",
    },
    Scenario {
        name: "mid-bucket continuation, no delimiter",
        prefix: "",
        delimiter: None,
        after: Some("dataset/shard-00500/"),
        first: "dataset/shard-00500/sample-000000.bin",
    },
    Scenario {
        name: "root, delimiter / (skips big/)",
        prefix: "",
        delimiter: Some("/"),
        after: None,
        first: "annotations-0000.json",
    },
    Scenario {
        name: "dataset/, delimiter / (1000 prefixes)",
        prefix: "dataset/",
        delimiter: Some("/"),
        after: None,
        first: "dataset/shard-00000/",
    },
    Scenario {
        name: "delimiter /, resuming just before big/",
        prefix: "",
        delimiter: Some("/"),
        after: Some("annotations-0499.json"),
        first: "big/",
    },
];

/// One page through `ObjectStore::list_objects`, checked; returns its time.
async fn page_in_process(store: &ObjectStore, scenario: &Scenario) -> Duration {
    let query = ListQuery {
        prefix: scenario.prefix.to_string(),
        delimiter: scenario.delimiter.map(str::to_string),
        after: scenario.after.map(str::to_string),
        max_keys: PAGE,
    };
    let start = Instant::now();
    let page = store
        .list_objects(&bucket(BUCKET), &query)
        .await
        .expect("listing");
    let elapsed = start.elapsed();
    let first = page.entries.first().map(ListEntry::name);
    assert_eq!(first, Some(scenario.first), "{}", scenario.name);
    assert!(
        page.entries.len() == PAGE && page.truncated,
        "{}: a full, truncated page",
        scenario.name
    );
    elapsed
}

/// The URL of a ListObjectsV2 page, query values escaped as SigV4 expects.
fn list_url(endpoint: &str, scenario: &Scenario) -> String {
    let mut params = vec![
        ("list-type", "2".to_string()),
        ("max-keys", PAGE.to_string()),
    ];
    if !scenario.prefix.is_empty() {
        params.push(("prefix", scenario.prefix.to_string()));
    }
    if let Some(delimiter) = scenario.delimiter {
        params.push(("delimiter", delimiter.to_string()));
    }
    if let Some(after) = scenario.after {
        // The server's tokens are the base64 of where the page ended.
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(after);
        params.push(("continuation-token", token));
    }
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}={}", utf8_percent_encode(v, QUERY_VALUE)))
        .collect();
    format!("{endpoint}/{BUCKET}?{}", query.join("&"))
}

/// One signed ListObjectsV2 page over HTTP, body read whole and checked; returns its time
/// (signing included: a client pays it too).
async fn page_http(client: &reqwest::Client, endpoint: &str, scenario: &Scenario) -> Duration {
    let url = list_url(endpoint, scenario);
    let (body, span) = get(client, &url).await;
    let xml = String::from_utf8_lossy(&body);
    assert_eq!(element(&xml, "KeyCount"), Some("1000"), "{}", scenario.name);
    assert_eq!(
        element(&xml, "IsTruncated"),
        Some("true"),
        "{}",
        scenario.name
    );
    let first = match scenario.first.ends_with('/') {
        true => element(&xml, "CommonPrefixes").and_then(|p| element(p, "Prefix")),
        false => element(&xml, "Contents").and_then(|c| element(c, "Key")),
    };
    assert_eq!(first, Some(scenario.first), "{}", scenario.name);
    span.elapsed()
}

/// Median and 90th percentile, per scenario, of each size.
type Table = Vec<Vec<Figures>>;

/// Times every scenario at every size: per scenario, untimed warm-up pages at each size, then
/// `runs` rounds of one page per size, so that the load other work puts on this shared
/// machine weighs on every size alike.
async fn time_pages<F, Fut>(sizes: usize, runs: usize, page: F) -> Table
where
    F: Fn(usize, &'static Scenario) -> Fut,
    Fut: std::future::Future<Output = Duration>,
{
    let mut table = vec![Vec::new(); sizes];
    for scenario in &SCENARIOS {
        let mut ms = vec![Vec::with_capacity(runs); sizes];
        for size in 0..sizes {
            for _ in 0..WARM_UP {
                page(size, scenario).await;
            }
        }
        for _ in 0..runs {
            for (size, times) in ms.iter_mut().enumerate() {
                times.push(page(size, scenario).await.as_secs_f64() * 1e3);
            }
        }
        for (size, times) in ms.into_iter().enumerate() {
            table[size].push(Figures::of(&times));
        }
    }
    table
}

fn print_table(title: &str, sizes: &[usize], table: &Table) {
    println!("\n{title}: median / p90 ms of a {PAGE}-entry page");
    let mut header = format!("{:<40}", "scenario");
    for size in sizes {
        header.push_str(&format!(" | {:>15}", format!("{} keys", thousands(*size))));
    }
    let ratio = format!(
        "{}/{}",
        thousands(sizes[sizes.len() - 1]),
        thousands(sizes[0])
    );
    header.push_str(&format!(" | {ratio:>9}"));
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    for (s, scenario) in SCENARIOS.iter().enumerate() {
        let mut line = format!("{:<40}", scenario.name);
        for figures in table {
            let f = figures[s];
            line.push_str(&format!(" | {:>6.2} / {:>6.2}", f.median, f.p90));
        }
        let last = table[table.len() - 1][s].median / table[0][s].median;
        line.push_str(&format!(" | {last:>8.2}x"));
        println!("{line}");
    }
}

fn thousands(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1000 && n % 1000 == 0 => format!("{}k", n / 1000),
        n => n.to_string(),
    }
}

fn main() {
    let max: usize = env_or("STRATA_BENCH_LIST_MAX", 1_000_000);
    let runs: usize = env_or("STRATA_BENCH_LIST_RUNS", 30);
    assert!(runs >= 1, "need STRATA_BENCH_LIST_RUNS >= 1");
    // Below 10k keys, pages would miss annotations or shards and not be the same pages.
    assert!(
        max >= SIZES[0],
        "STRATA_BENCH_LIST_MAX must be at least {}",
        SIZES[0]
    );
    let mut sizes: Vec<usize> = SIZES.iter().copied().filter(|&s| s <= max).collect();
    if sizes.last() != Some(&max) {
        sizes.push(max);
    }
    // Removed on drop, after the servers are gone.
    let dir = common::temp_dir("list-bench-");
    // One deployment per size, all measured side by side.
    let deployments: Vec<Vec<PathBuf>> = sizes
        .iter()
        .map(|size| common::drives(&dir.path().join(thousands(*size))))
        .collect();
    println!(
        "ListObjectsV2 pages of {PAGE} over buckets of {} keys, each in its own {DATA}+{PARITY} \
         deployment of {} drive folders under {}; {runs} timed pages per figure after {WARM_UP} \
         untimed",
        sizes
            .iter()
            .map(|s| thousands(*s))
            .collect::<Vec<_>>()
            .join(", "),
        DATA + PARITY,
        dir.path().display()
    );
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");

    let fill_start = Instant::now();
    let stores: Vec<Arc<ObjectStore>> = runtime.block_on(async {
        let mut stores = Vec::new();
        for (size, drives) in sizes.iter().zip(&deployments) {
            let store = open_store(drives);
            let template = template(&store, &[BUCKET]).await;
            let start = Instant::now();
            fill(&store, &template, BUCKET, *size, key).await;
            let took = start.elapsed();
            println!(
                "filled {} keys in {:.1} s ({:.0} keys/s)",
                thousands(*size),
                took.as_secs_f64(),
                *size as f64 / took.as_secs_f64()
            );
            stores.push(store);
        }
        stores
    });
    let fill_time = fill_start.elapsed();

    let in_process = runtime.block_on(time_pages(sizes.len(), runs, |size, scenario| {
        page_in_process(&stores[size], scenario)
    }));
    // Closes the databases for the servers.
    drop(stores);

    let servers: Vec<Server> = deployments
        .iter()
        .map(|d| Server::start(d, &[], print_warnings))
        .collect();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .expect("reqwest client");
    let http = runtime.block_on(time_pages(sizes.len(), runs, |size, scenario| {
        page_http(&client, &servers[size].endpoint, scenario)
    }));
    drop(servers);

    print_table("HTTP (signed GET, body read)", &sizes, &http);
    print_table("in-process ObjectStore::list_objects", &sizes, &in_process);
    let (largest, smallest) = (&http[http.len() - 1], &http[0]);
    let met = largest
        .iter()
        .zip(smallest)
        .all(|(large, small)| large.median < GOAL_MS && large.median <= GOAL_RATIO * small.median);
    println!(
        "\nsummary: fill {:.1} s in all | goal at {} keys (HTTP median < {GOAL_MS} ms and <= \
         {GOAL_RATIO}x the {} figure, every scenario): {}",
        fill_time.as_secs_f64(),
        thousands(sizes[sizes.len() - 1]),
        thousands(sizes[0]),
        if met { "met" } else { "NOT met" }
    );
}
