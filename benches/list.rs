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

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use strata::config::ServerConfig;
use strata::erasure::DEFAULT_BLOCK_SIZE;
use strata::object::{
    BucketName, ListEntry, ListQuery, ObjectKey, ObjectRecord, ObjectStore, PutOptions,
};
use strata::storage::{MetaOp, MetaTable};

const DATA: usize = 6;
const PARITY: usize = 3;
const BUCKET: &str = "bench";
/// Holds the one object written by a real PUT, whose stored form the fill copies.
const TEMPLATE_BUCKET: &str = "template";
const TEMPLATE_KEY: &str = "empty";
const USER: &str = "bench-admin";
const PASSWORD: &str = "bench-password-0123456789";
const REGION: &str = "us-east-1";
const PAGE: usize = 1000;
/// Keys per metadata transaction while filling.
const FILL_BATCH: usize = 25_000;
const SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];
/// Untimed pages before each scenario's timed ones.
const WARM_UP: usize = 3;
const GOAL_MS: f64 = 20.0;
const GOAL_RATIO: f64 = 1.5;
const SHARDS: usize = 1024;
const ANNOTATIONS: usize = 500;
/// Format byte in front of every stored record (`src/object/record.rs`); checked against a
/// record the server wrote before the fill uses it.
const RECORD_VERSION: u8 = 1;
/// SHA-256 of an empty payload, for `x-amz-content-sha256`.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// Query values as SigV4 canonicalises them: everything but unreserved characters escaped.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

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

/// Median and 90th percentile of page times, in milliseconds.
#[derive(Clone, Copy)]
struct Figures {
    median: f64,
    p90: f64,
}

impl Figures {
    fn of(mut ms: Vec<f64>) -> Self {
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
        Figures {
            median: at(0.5),
            p90: at(0.9),
        }
    }
}

fn config(drives: &[PathBuf]) -> ServerConfig {
    ServerConfig {
        address: "127.0.0.1:0".parse().expect("address"),
        drives: drives.to_vec(),
        data_shards: DATA,
        parity_shards: PARITY,
        block_size: DEFAULT_BLOCK_SIZE,
        root_user: USER.into(),
        root_password: PASSWORD.into(),
        default_credentials: false,
        region: REGION.into(),
        domain: None,
        stale_upload_expiry: Duration::from_secs(3600),
        stale_upload_scan: Duration::from_secs(3600),
        healing: Default::default(),
        listener: Default::default(),
        metrics: Default::default(),
        limits: Default::default(),
        lifecycle: Default::default(),
    }
}

/// The store opened in-process over the drives, the way the server opens it. It must be
/// dropped before the server starts: each drive's database admits one process.
fn open_store(drives: &[PathBuf]) -> Arc<ObjectStore> {
    let deployment = strata::deployment::open(&config(drives)).expect("drives open");
    assert_eq!(
        deployment.sets.len(),
        1,
        "the fill places every key in set 0"
    );
    ObjectStore::new(deployment.sets, &deployment.id)
}

fn bucket(name: &str) -> BucketName {
    BucketName::parse(name).expect("valid bucket name")
}

/// Database key of an object (`src/object/record.rs`): bucket, NUL, key.
fn object_key(bucket: &str, key: &str) -> Vec<u8> {
    [bucket.as_bytes(), &[0], key.as_bytes()].concat()
}

/// Database key of an inline object's chunk: the object key, NUL, the data id.
fn inline_key(bucket: &str, key: &str, data_id: uuid::Uuid) -> Vec<u8> {
    [object_key(bucket, key).as_slice(), &[0], data_id.as_bytes()].concat()
}

fn encode(record: &ObjectRecord) -> Vec<u8> {
    let mut out = vec![RECORD_VERSION];
    out.extend(rmp_serde::to_vec_named(record).expect("record serialises"));
    out
}

/// Creates the buckets and PUTs one empty object for real; returns its record, after checking
/// that this file writes records and keys byte for byte as the store does.
async fn template(store: &ObjectStore) -> ObjectRecord {
    for name in [BUCKET, TEMPLATE_BUCKET] {
        store.create_bucket(&bucket(name)).await.expect("bucket");
    }
    let empty: strata::body::ByteStream = Box::pin(futures::stream::empty());
    let key = ObjectKey::parse(TEMPLATE_KEY).expect("valid key");
    store
        .put_object(&bucket(TEMPLATE_BUCKET), &key, empty, PutOptions::default())
        .await
        .expect("PUT of the template");
    let drive = &store.sets()[0].drives()[0];
    let stored = drive
        .meta_get(
            MetaTable::Objects,
            object_key(TEMPLATE_BUCKET, TEMPLATE_KEY),
        )
        .await
        .expect("drive answers")
        .expect("the object key layout matches the store's");
    let record: ObjectRecord = rmp_serde::from_slice(&stored[1..]).expect("record decodes");
    assert!(
        encode(&record) == stored,
        "the record encoding changed: update encode() in benches/list.rs"
    );
    assert!(record.inline && record.size == 0 && record.superseded.is_none());
    let chunk = drive
        .meta_get(
            MetaTable::Inline,
            inline_key(TEMPLATE_BUCKET, TEMPLATE_KEY, record.data_id),
        )
        .await
        .expect("drive answers")
        .expect("the inline key layout matches the store's");
    assert!(chunk.is_empty(), "an empty object has empty inline chunks");
    record
}

/// Puts keys `0..count` in the bucket on every drive, `FILL_BATCH` keys per transaction.
async fn fill(store: &ObjectStore, template: &ObjectRecord, count: usize) {
    let drives = store.sets()[0].drives();
    let mut start = 0;
    while start < count {
        let end = (start + FILL_BATCH).min(count);
        // Sorted, so each transaction inserts in key order.
        let mut keys: Vec<String> = (start..end).map(key).collect();
        keys.sort_unstable();
        let mut ops = Vec::with_capacity(2 * keys.len());
        for key in &keys {
            let mut record = template.clone();
            record.data_id = uuid::Uuid::now_v7();
            ops.push(MetaOp::Put {
                table: MetaTable::Inline,
                key: inline_key(BUCKET, key, record.data_id),
                value: Vec::new(),
            });
            ops.push(MetaOp::Put {
                table: MetaTable::Objects,
                key: object_key(BUCKET, key),
                value: encode(&record),
            });
        }
        let applied = futures::future::join_all(drives.iter().map(|d| d.meta_apply(ops.clone())));
        for result in applied.await {
            result.expect("fill transaction");
        }
        start = end;
    }
}

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

/// The server child; stopped on drop, also when the bench panics.
struct Server {
    child: Child,
    endpoint: String,
}

impl Server {
    fn start(drives: &[PathBuf]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["server", "--address", "127.0.0.1:0"])
            .args(drives)
            .env("STRATA_ROOT_USER", USER)
            .env("STRATA_ROOT_PASSWORD", PASSWORD)
            // Warnings only, except the `listening on` line of `strata::server`.
            .env("STRATA_LOG", "warn,strata::server=info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn strata");
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().expect("piped stderr");
        // Keeps draining stderr after the address is known: a full pipe would block the server.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some((_, rest)) = line.split_once("listening on http://") {
                    let addr = rest.split_whitespace().next().unwrap_or_default();
                    let _ = tx.send(addr.to_string());
                } else if !line.contains(" INFO ") {
                    eprintln!("[strata] {line}");
                }
            }
        });
        // Guarded before waiting, so a server that never announces itself is killed too.
        let mut server = Server {
            child,
            endpoint: String::new(),
        };
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("server announces `listening on http://ADDR`");
        server.endpoint = format!("http://{addr}");
        server
    }
}

impl Drop for Server {
    /// SIGTERM first: a killed server leaves its databases to be repaired at the next open,
    /// which at 1M keys takes longer than the listing figures.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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

/// SigV4 headers for a GET of `url` with an empty body, signed now.
fn sign_get(url: &str) -> Vec<(String, String)> {
    use aws_sigv4::http_request::{
        sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest,
        SigningSettings, UriPathNormalizationMode,
    };
    let identity =
        aws_credential_types::Credentials::new(USER, PASSWORD, None, None, "bench").into();
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(REGION)
        .name("s3")
        .time(SystemTime::now())
        .settings(settings)
        .build()
        .expect("signing params")
        .into();
    let request = SignableRequest::new(
        "GET",
        url,
        std::iter::empty(),
        SignableBody::Precomputed(EMPTY_SHA256.to_string()),
    )
    .expect("signable request");
    let (instructions, _) = sign(request, &params).expect("sign").into_parts();
    instructions
        .headers()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Text of the first `<tag>...</tag>` of a document.
fn element<'a>(xml: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{tag}>"))? + start;
    Some(&xml[start..end])
}

/// One signed ListObjectsV2 page over HTTP, body read whole and checked; returns its time
/// (signing included: a client pays it too).
async fn page_http(client: &reqwest::Client, endpoint: &str, scenario: &Scenario) -> Duration {
    let url = list_url(endpoint, scenario);
    let start = Instant::now();
    let mut request = client.get(&url);
    for (name, value) in sign_get(&url) {
        request = request.header(name, value);
    }
    let response = request.send().await.expect("ListObjectsV2 request");
    let status = response.status();
    let body = response.bytes().await.expect("ListObjectsV2 body");
    let elapsed = start.elapsed();
    let xml = String::from_utf8_lossy(&body);
    assert!(status.is_success(), "{}: {status} {xml}", scenario.name);
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
    elapsed
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
            table[size].push(Figures::of(times));
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
    // Under target/tmp, on the repository's disk (/tmp may be tmpfs); removed on drop, after
    // the servers are gone.
    let dir = tempfile::Builder::new()
        .prefix("list-bench-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temp folder");
    // One deployment per size, all measured side by side.
    let deployments: Vec<Vec<PathBuf>> = sizes
        .iter()
        .map(|size| {
            (1..=DATA + PARITY)
                .map(|i| dir.path().join(format!("{}/d{i}", thousands(*size))))
                .collect()
        })
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
            let template = template(&store).await;
            let start = Instant::now();
            fill(&store, &template, *size).await;
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

    let servers: Vec<Server> = deployments.iter().map(|d| Server::start(d)).collect();
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
