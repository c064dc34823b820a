//! `strata admin`: the admin API from a terminal. Requests are signed with SigV4 like any S3
//! request, with the root credentials from `STRATA_ROOT_USER`/`STRATA_ROOT_PASSWORD` (the
//! server's defaults when neither is set).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context};
use axum::http::{HeaderMap, HeaderValue, Method};
use indicatif::{HumanBytes, HumanDuration, ProgressBar, ProgressStyle};

use super::api::{
    AddedUser, ClusterInfo, DriveState, ErrorBody, HealPassView, HealReportView, HealStarted,
    HealStatusView, Info, KmsKeyStatusView, KmsKeyView, NewUser, PolicyInfo, PoolInfo, UserInfo,
    HEAL_REASON, PATH_PREFIX,
};
use super::pools::RebalanceView;
use crate::api::auth::sigv4;
use crate::background::JobStatus;
use crate::config;
use crate::object::now_ms;
use crate::signing::{Payload, Signer};

/// How often `heal` asks for progress.
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// Without a terminal, how often `heal` prints a progress line.
const LINE_INTERVAL: Duration = Duration::from_secs(5);

/// What `strata admin` can do.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum AdminCommand {
    /// Sets and drives: state, space, and healing.
    Info {
        /// Print the raw JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// This server's background jobs (healing, scrubbing, lifecycle, usage, stale uploads,
    /// a tier pool's own): whether each runs now, its passes and what the last one reported.
    Jobs {
        /// Print the raw JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// Heal everything, a bucket, or a bucket under a key prefix, and report what was fixed.
    Heal {
        /// `BUCKET` or `BUCKET/PREFIX`; everything when absent.
        target: Option<String>,
        /// Also read every shard and verify its checksums (slower).
        #[arg(long)]
        deep: bool,
    },
    /// Server pools: what each holds and has free.
    Pool {
        #[command(subcommand)]
        command: PoolCommand,
    },
    /// Drives: format an empty folder kept offline as a disk that failed to mount.
    Drive {
        #[command(subcommand)]
        command: DriveCommand,
    },
    /// Users: access keys besides the root user's, and the policies they hold.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Named policies (IAM JSON documents) that users hold.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Bucket lifecycle: what the scanner did and will do, dry runs, rules from a file.
    Lifecycle {
        #[command(subcommand)]
        command: LifecycleCommand,
    },
    /// The built-in key service of SSE-S3 and SSE-KMS.
    Kms {
        #[command(subcommand)]
        command: KmsCommand,
    },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum KmsCommand {
    /// Named keys for SSE-KMS.
    Key {
        #[command(subcommand)]
        command: KmsKeyCommand,
    },
    /// Re-seal every key under the current master key, once the server runs with the new
    /// master key and the old one in STRATA_KMS_PREVIOUS_SECRET_KEYS; objects are untouched.
    Rotate,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum KmsKeyCommand {
    /// Create a key (`[A-Za-z0-9._-]`, up to 64 characters).
    Create { name: String },
    /// Every key, with its state.
    List {
        /// Print the raw JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// A key's state, and whether it seals and opens a data key now.
    Status { name: String },
    /// Let a disabled key seal and open data keys again.
    Enable { name: String },
    /// Refuse a key: objects under it cannot be written or read until it is enabled.
    Disable { name: String },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum PoolCommand {
    /// Every pool, in order: its id, state, sets and space.
    List {
        /// Print the raw JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// Drain a pool into the others while it keeps serving; once empty it is retired and
    /// may be dropped from `strata server`'s arguments.
    Decommission {
        #[command(subcommand)]
        command: DecommissionCommand,
    },
    /// Move keys from fuller pools to emptier ones until their used fractions are within
    /// about 10 % of each other (after adding a pool, say).
    Rebalance {
        #[command(subcommand)]
        command: RebalanceCommand,
    },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum RebalanceCommand {
    /// Start evening the active pools; it goes on after a restart until they are even.
    Start,
    /// Where the rebalance stands: what moved, at what rate, and how full each pool is.
    Status {
        /// Print the raw JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// Stop the rebalance; what moved stays moved.
    Stop,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum DecommissionCommand {
    /// Start draining POOL (its place on the command line, 1 for the first, or its id).
    Start { pool: String },
    /// Where the drain of POOL stands: what moved, at what rate, what is left.
    Status {
        pool: String,
        /// Print the raw JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// Stop draining POOL: it takes new keys again; what moved stays moved.
    Cancel { pool: String },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum DriveCommand {
    /// Format the empty folder of an offline drive into its place (for a folder that
    /// `strata admin info` shows as unmounted, once you know no disk belongs there). It is
    /// then healed with everything its set holds.
    Format {
        /// The drive's path, as given to `strata server`.
        path: std::path::PathBuf,
    },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum LifecycleCommand {
    /// Per rule: when it last acted and on how many objects; then what is due now and next.
    Status {
        bucket: String,
        /// Print the raw JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// What new rules (the aws CLI's JSON or S3's XML) would act on now, before they are set.
    DryRun {
        bucket: String,
        file: std::path::PathBuf,
        /// Print the raw JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// Set a bucket's rules from a file (the aws CLI's JSON or S3's XML).
    Set {
        bucket: String,
        file: std::path::PathBuf,
    },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum UserCommand {
    /// Add a user; its name is its access key. Prints a generated secret key once.
    Add {
        name: String,
        /// The secret key (8 to 128 characters); generated when absent.
        #[arg(long, env = "STRATA_NEW_USER_SECRET", hide_env_values = true)]
        secret: Option<Secret>,
        /// A policy to attach (repeatable).
        #[arg(long = "policy")]
        policies: Vec<String>,
    },
    /// Remove a user: its key stops working at once.
    Remove { name: String },
    /// Every user, with its state and policies (never a secret).
    List {
        /// Print the raw JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// Let a disabled user in again.
    Enable { name: String },
    /// Refuse a user's key without removing the user.
    Disable { name: String },
}

/// A secret key on the command line, kept out of `Debug` output.
#[derive(Clone)]
pub struct Secret(pub String);

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Secret(s.to_string()))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum PolicyCommand {
    /// Add or replace a named policy from a JSON file (`-`: standard input).
    Add {
        name: String,
        file: std::path::PathBuf,
    },
    /// Remove a policy no user holds.
    Remove { name: String },
    /// Every policy, with the users holding it.
    List {
        /// Print the raw JSON answer.
        #[arg(long)]
        json: bool,
    },
    /// Print a policy's document.
    Show { name: String },
    /// Give a user a policy.
    Attach { user: String, policy: String },
    /// Take a policy from a user.
    Detach { user: String, policy: String },
}

/// Runs one admin command against the server at `endpoint`.
pub fn run(endpoint: &str, region: &str, command: AdminCommand) -> anyhow::Result<()> {
    let client = AdminClient::new(endpoint, region, Credentials::from_env()?)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        match command {
            AdminCommand::Info { json } => info(&client, json).await,
            AdminCommand::Jobs { json } => jobs(&client, json).await,
            AdminCommand::Heal { target, deep } => heal(&client, target.as_deref(), deep).await,
            AdminCommand::Pool {
                command: PoolCommand::List { json },
            } => pools(&client, json).await,
            AdminCommand::Pool {
                command: PoolCommand::Decommission { command },
            } => decommission(&client, command).await,
            AdminCommand::Pool {
                command: PoolCommand::Rebalance { command },
            } => rebalance(&client, command).await,
            AdminCommand::Drive {
                command: DriveCommand::Format { path },
            } => format_drive(&client, &path).await,
            AdminCommand::User { command } => user(&client, command).await,
            AdminCommand::Policy { command } => policy(&client, command).await,
            AdminCommand::Lifecycle { command } => lifecycle(&client, command).await,
            AdminCommand::Kms { command } => kms(&client, command).await,
        }
    })
}

/// The root user's keys.
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
}

impl Credentials {
    /// From `STRATA_ROOT_USER`/`STRATA_ROOT_PASSWORD`, as the server reads them.
    pub fn from_env() -> anyhow::Result<Self> {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        match (var("STRATA_ROOT_USER"), var("STRATA_ROOT_PASSWORD")) {
            (Some(access_key), Some(secret_key)) => Ok(Self {
                access_key,
                secret_key,
            }),
            (None, None) => Ok(Self {
                access_key: config::DEFAULT_ROOT_USER.to_string(),
                secret_key: config::DEFAULT_ROOT_PASSWORD.to_string(),
            }),
            _ => bail!("set both STRATA_ROOT_USER and STRATA_ROOT_PASSWORD, or neither"),
        }
    }
}

/// A signing HTTP client for the admin API.
pub struct AdminClient {
    endpoint: reqwest::Url,
    signer: Signer,
    http: reqwest::Client,
}

impl AdminClient {
    pub fn new(endpoint: &str, region: &str, credentials: Credentials) -> anyhow::Result<Self> {
        let endpoint = reqwest::Url::parse(endpoint)
            .with_context(|| format!("--endpoint {endpoint:?} is not a URL"))?;
        if endpoint.scheme() != "http" {
            bail!("--endpoint must be an http:// URL (TLS is not supported yet)");
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(60))
            .build()
            .context("building the HTTP client")?;
        let signer = Signer::new(&credentials.access_key, &credentials.secret_key, region);
        Ok(Self {
            endpoint,
            signer,
            http,
        })
    }

    /// Sends a signed request to `PATH_PREFIX + route` and returns the body of a 2xx answer;
    /// any other answer is an error carrying the server's error code and message.
    pub async fn send(
        &self,
        method: Method,
        route: &str,
        query: &[(&str, &str)],
    ) -> anyhow::Result<Vec<u8>> {
        self.send_body(method, route, query, Vec::new()).await
    }

    /// Like [`AdminClient::send`], with a request body (signed by its SHA-256).
    pub async fn send_body(
        &self,
        method: Method,
        route: &str,
        query: &[(&str, &str)],
        body: Vec<u8>,
    ) -> anyhow::Result<Vec<u8>> {
        let path = format!("{PATH_PREFIX}{route}");
        let query: String = query
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    sigv4::uri_encode(k.as_bytes(), true),
                    sigv4::uri_encode(v.as_bytes(), true)
                )
            })
            .collect::<Vec<_>>()
            .join("&");
        let mut url = self.endpoint.clone();
        url.set_path(&path);
        url.set_query((!query.is_empty()).then_some(query.as_str()));
        let headers =
            self.signed_headers(&method, &url, Payload::Bytes(&body), SystemTime::now())?;
        let response = self
            .http
            .request(method.clone(), url.clone())
            .headers(headers)
            .body(body)
            .send()
            .await
            .with_context(|| format!("{method} {url}"))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .with_context(|| format!("reading the answer to {method} {url}"))?;
        if status.is_success() {
            Ok(body.to_vec())
        } else {
            bail!("{} (HTTP {status})", describe_error(&body))
        }
    }

    /// `x-amz-date`, `x-amz-content-sha256` and `authorization` of a request of `url` (the
    /// host, signed as the URL gives it, is sent by the HTTP client).
    fn signed_headers(
        &self,
        method: &Method,
        url: &reqwest::Url,
        payload: Payload<'_>,
        now: SystemTime,
    ) -> anyhow::Result<HeaderMap> {
        let signed = (self.signer).headers(method.as_str(), url.as_str(), payload, now);
        let mut headers = HeaderMap::new();
        for (name, value) in signed.map_err(anyhow::Error::msg)? {
            let name = axum::http::HeaderName::from_bytes(name.as_bytes())?;
            headers.insert(name, HeaderValue::from_str(&value)?);
        }
        Ok(headers)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, route: &str) -> anyhow::Result<T> {
        let body = self.send(Method::GET, route, &[]).await?;
        serde_json::from_slice(&body).with_context(|| format!("the server's {route} answer"))
    }
}

/// `Code: message` of an S3 XML error or an admin JSON error; the raw text otherwise.
fn describe_error(body: &[u8]) -> String {
    if let Ok(parsed) = serde_json::from_slice::<ErrorBody>(body) {
        return format!("{}: {}", parsed.error.code, parsed.error.message);
    }
    let text = String::from_utf8_lossy(body);
    let element = |tag: &str| {
        let open = format!("<{tag}>");
        let start = text.find(&open)? + open.len();
        let end = text[start..].find(&format!("</{tag}>"))? + start;
        Some(text[start..end].to_string())
    };
    match (element("Code"), element("Message")) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(code), None) => code,
        _ if text.trim().is_empty() => "the server gave no reason".to_string(),
        _ => text.trim().to_string(),
    }
}

async fn info(client: &AdminClient, raw_json: bool) -> anyhow::Result<()> {
    if raw_json {
        let body = client.send(Method::GET, "info", &[]).await?;
        let value: serde_json::Value = serde_json::from_slice(&body)?;
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    let info: Info = client.get_json("info").await?;
    print!("{}", render_info(&info, now_ms()));
    Ok(())
}

async fn pools(client: &AdminClient, json: bool) -> anyhow::Result<()> {
    let info: Info = client.get_json("info").await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&info.pools)?);
        return Ok(());
    }
    print!("{}", render_pools(&info));
    Ok(())
}

async fn decommission(client: &AdminClient, command: DecommissionCommand) -> anyhow::Result<()> {
    let (pool, action) = match &command {
        DecommissionCommand::Start { pool } => (pool, "start"),
        DecommissionCommand::Cancel { pool } => (pool, "cancel"),
        DecommissionCommand::Status { pool, json } => {
            let info: Info = client.get_json("info").await?;
            let found = (info.pools.iter())
                .find(|p| *pool == (p.index + 1).to_string() || *pool == p.id)
                .with_context(|| format!("no server pool {pool:?}"))?;
            match json {
                true => println!("{}", serde_json::to_string_pretty(found)?),
                false => println!("{}", render_drain(found, now_ms())),
            }
            return Ok(());
        }
    };
    let body = client
        .send(
            Method::POST,
            "pools/decommission",
            &[("pool", pool), ("action", action)],
        )
        .await?;
    let pool: PoolInfo = serde_json::from_slice(&body).context("the server's answer")?;
    println!("pool {} ({}) is {}", pool.index + 1, pool.id, pool.state);
    Ok(())
}

/// A pool's drain in one line: a bar of the keys moved against those left, the rate, and
/// when it should end at that rate.
fn render_drain(pool: &PoolInfo, now_ms: i64) -> String {
    let head = format!("pool {} ({}): {}", pool.index + 1, pool.id, pool.state);
    let Some(drain) = &pool.decommission else {
        return format!("{head}; no decommission has reported progress since it started");
    };
    let seconds = ((now_ms - drain.started_ms).max(1) as f64) / 1000.0;
    let rate = drain.bytes_moved as f64 / seconds;
    let mut line = format!(
        "{head}; moved {} keys ({} versions, {}) at {}/s",
        drain.keys_moved,
        drain.versions_moved,
        HumanBytes(drain.bytes_moved),
        HumanBytes(rate as u64)
    );
    if let Some(left) = drain.keys_left {
        let total = drain.keys_moved + left;
        let done = match total {
            0 => 1.0,
            total => drain.keys_moved as f64 / total as f64,
        };
        let filled = (done * 30.0).round() as usize;
        line = format!(
            "[{}{}] {:.0}%  {line}",
            "#".repeat(filled),
            "-".repeat(30 - filled),
            done * 100.0
        );
        line.push_str(&format!("; {left} keys left"));
        let keys_per_second = drain.keys_moved as f64 / seconds;
        if left > 0 && keys_per_second > 0.0 {
            let eta = Duration::from_secs_f64(left as f64 / keys_per_second);
            line.push_str(&format!(", about {} more", HumanDuration(eta)));
        }
    }
    if let Some(uploads) = drain.open_uploads.filter(|&n| n > 0) {
        line.push_str(&format!("; waiting for {uploads} multipart uploads to end"));
    }
    if drain.failures > 0 {
        line.push_str(&format!(
            "; {} moves failed and are retried",
            drain.failures
        ));
    }
    line
}

async fn rebalance(client: &AdminClient, command: RebalanceCommand) -> anyhow::Result<()> {
    let body = match command {
        RebalanceCommand::Start => {
            let params = [("action", "start")];
            client
                .send(Method::POST, "pools/rebalance", &params)
                .await?
        }
        RebalanceCommand::Stop => {
            let params = [("action", "stop")];
            client
                .send(Method::POST, "pools/rebalance", &params)
                .await?
        }
        RebalanceCommand::Status { json: true } => {
            let body = client.send(Method::GET, "pools/rebalance", &[]).await?;
            let view: serde_json::Value = serde_json::from_slice(&body)?;
            println!("{}", serde_json::to_string_pretty(&view)?);
            return Ok(());
        }
        RebalanceCommand::Status { json: false } => {
            client.send(Method::GET, "pools/rebalance", &[]).await?
        }
    };
    let view: RebalanceView = serde_json::from_slice(&body).context("the server's answer")?;
    print!("{}", render_rebalance(&view, now_ms()));
    Ok(())
}

/// The rebalance: a line for what moved, then a line a pool for how full it is against the
/// deployment as a whole (1.00× is even).
fn render_rebalance(view: &RebalanceView, now_ms: i64) -> String {
    let mut out = match (view.state.as_str(), view.started_ms) {
        ("none", _) | (_, None) => "no rebalance has run".to_string(),
        (state, Some(started)) => {
            let until = view.ended_ms.unwrap_or(now_ms);
            let seconds = ((until - started).max(1) as f64) / 1000.0;
            format!(
                "rebalance {state} ({} since it started); moved {} keys ({} versions, {}) at {}/s",
                HumanDuration(Duration::from_secs_f64(seconds)),
                view.keys_moved,
                view.versions_moved,
                HumanBytes(view.bytes_moved),
                HumanBytes((view.bytes_moved as f64 / seconds) as u64),
            )
        }
    };
    if view.failures > 0 {
        out.push_str(&format!("; {} moves failed and are retried", view.failures));
    }
    out.push('\n');
    let counted = view.pools.iter().filter_map(|p| p.usage);
    let bytes: u64 = counted.clone().map(|u| u.bytes).sum();
    let capacity: u64 = counted.map(|u| u.capacity).sum();
    let whole = bytes as f64 / capacity.max(1) as f64;
    for pool in &view.pools {
        let Some(usage) = pool.usage else {
            out.push_str(&format!("pool {}: not active\n", pool.index + 1));
            continue;
        };
        let against = match whole > 0.0 {
            true => format!(" ({:.2}× the deployment's)", usage.used_fraction() / whole),
            false => String::new(),
        };
        out.push_str(&format!(
            "pool {}: {} keys, {} versions, {} of {} ({:.4} % used){against}\n",
            pool.index + 1,
            usage.keys,
            usage.versions,
            HumanBytes(usage.bytes),
            HumanBytes(usage.capacity),
            usage.used_fraction() * 100.0,
        ));
    }
    out
}

/// The `pool list` table: one line a pool.
fn render_pools(info: &Info) -> String {
    let width = info
        .pools
        .iter()
        .map(|p| p.id.len())
        .max()
        .unwrap_or(0)
        .max(2);
    let mut out = format!(
        "{:<4}  {:<width$}  {:<15}  {:<9}  {:>9}  {:>11}  {:>11}  {:>11}\n",
        "POOL", "ID", "STATE", "SETS", "OBJECTS", "DATA", "FREE", "TOTAL"
    );
    for pool in &info.pools {
        let sets = match (pool.sets.first(), pool.sets.last()) {
            (Some(first), Some(last)) if first != last => format!("{}-{}", first + 1, last + 1),
            (Some(only), _) => (only + 1).to_string(),
            _ => "-".into(),
        };
        let (objects, data) = match &pool.holds {
            Some(holds) => (holds.keys.to_string(), HumanBytes(holds.bytes).to_string()),
            None => ("-".into(), "-".into()),
        };
        out.push_str(&format!(
            "{:<4}  {:<width$}  {:<15}  {:<9}  {:>9}  {:>11}  {:>11}  {:>11}\n",
            pool.index + 1,
            pool.id,
            pool.state,
            sets,
            objects,
            data,
            HumanBytes(pool.free_bytes).to_string(),
            HumanBytes(pool.total_bytes).to_string(),
        ));
    }
    out
}

async fn jobs(client: &AdminClient, json: bool) -> anyhow::Result<()> {
    let body = client.send(Method::GET, "jobs", &[]).await?;
    if json {
        let value: serde_json::Value = serde_json::from_slice(&body)?;
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    let jobs: Vec<JobStatus> = serde_json::from_slice(&body)?;
    print!("{}", render_jobs(&jobs, now_ms()));
    Ok(())
}

/// The `jobs` table: one line a job, then what its last pass reported.
fn render_jobs(jobs: &[JobStatus], now_ms: i64) -> String {
    let width = jobs.iter().map(|j| j.name.len()).max().unwrap_or(0).max(3);
    let mut out = format!(
        "{:<width$}  {:<7}  {:>7}  {:>6}  {:>8}  LAST PASS\n",
        "JOB", "STATE", "EVERY", "PASSES", "FAILURES"
    );
    for job in jobs {
        let state = if job.running { "running" } else { "waiting" };
        let last = match (job.running, job.last_started_ms, job.last_finished_ms) {
            (true, Some(started), _) => format!("started {} ago", ago(now_ms, started)),
            (false, _, Some(finished)) => format!(
                "{} ago: {}",
                ago(now_ms, finished),
                job.last_outcome.as_deref().unwrap_or("")
            ),
            _ => "none yet".to_string(),
        };
        out.push_str(&format!(
            "{:<width$}  {state:<7}  {:>6}s  {:>6}  {:>8}  {last}\n",
            job.name, job.interval_secs, job.passes, job.failures
        ));
    }
    out
}

/// The nodes of a cluster, and which runs each once-per-cluster job.
fn render_nodes(out: &mut String, cluster: &ClusterInfo, now_ms: i64) {
    let reach = match cluster.etcd_reachable {
        Some(true) => "",
        Some(false) => "  (etcd out of reach from this node: states unknown)",
        None => "  (no etcd: states as this node's pings see them)",
    };
    out.push_str(&format!(
        "\nNodes (answered by {}){reach}\n",
        cluster.this_node
    ));
    let width = (cluster.nodes.iter().map(|n| n.node.len()))
        .max()
        .unwrap_or(0)
        .max("NODE".len());
    out.push_str(&format!(
        "  {:<width$}  {:<7}  {:<9}  UP FOR\n",
        "NODE", "STATE", "VERSION"
    ));
    for node in &cluster.nodes {
        let up_for = node.started.map_or("-".to_string(), |started| {
            ago(now_ms, (started as i64).saturating_mul(1000))
        });
        out.push_str(&format!(
            "  {:<width$}  {:<7}  {:<9}  {up_for}\n",
            node.node,
            node.state,
            node.version.as_deref().unwrap_or("-")
        ));
    }
    for (job, node) in &cluster.elected {
        out.push_str(&format!("  {job} runs on {node}\n"));
    }
    if cluster.etcd_refills > 0 || cluster.records_put_back > 0 {
        out.push_str(&format!(
            "  etcd was found behind the drives' records {} time(s); {} record(s) put back from the drives (see the log)\n",
            cluster.etcd_refills, cluster.records_put_back
        ));
    }
}

/// The `info` table.
fn render_info(info: &Info, now_ms: i64) -> String {
    let mut out = String::new();
    let ready = if info.ready {
        "ready: every set has write quorum"
    } else {
        "NOT READY: a set is below write quorum, writes fail"
    };
    out.push_str(&format!("Deployment {}  ({ready})\n", info.deployment_id));
    if let Some(cluster) = &info.cluster {
        render_nodes(&mut out, cluster, now_ms);
    }
    if info.pools.len() > 1 {
        out.push_str(&format!("\nServer pools\n{}", render_pools(info)));
    }
    let width = info
        .sets
        .iter()
        .flat_map(|s| &s.drives)
        .map(|d| d.path.len())
        .max()
        .unwrap_or(0)
        .max("DRIVE".len());
    for set in &info.sets {
        out.push_str(&format!(
            "\nSet {}  {}+{}  {}/{} drives online  (write quorum {}, read quorum {})\n",
            set.index + 1,
            set.data_shards,
            set.parity_shards,
            set.online,
            set.drives.len(),
            set.write_quorum,
            set.read_quorum
        ));
        out.push_str(&format!(
            "  {:<width$}  {:<9}  {:>11}  {:>11}  {:>11}\n",
            "DRIVE", "STATE", "USED", "FREE", "TOTAL"
        ));
        for drive in &set.drives {
            let bytes = |b: Option<u64>| b.map_or("-".to_string(), |b| HumanBytes(b).to_string());
            let state = match drive.state {
                DriveState::Online => "online",
                DriveState::Offline => "offline",
                DriveState::Healing => "healing",
                DriveState::Stalled => "stalled",
                DriveState::Unmounted => "unmounted",
            };
            out.push_str(&format!(
                "  {:<width$}  {:<9}  {:>11}  {:>11}  {:>11}\n",
                drive.path,
                state,
                bytes(drive.used_bytes),
                bytes(drive.free_bytes),
                bytes(drive.total_bytes)
            ));
        }
    }
    out.push_str("\nHealing\n");
    out.push_str(&format!(
        "  objects to heal: {} ({} found damaged by reads, waiting)\n",
        info.heal.objects_to_heal, info.heal.queued_after_reads
    ));
    match &info.heal.running {
        Some(pass) => out.push_str(&format!(
            "  running:  {} since {} ago: {}\n",
            describe_pass(pass),
            ago(now_ms, pass.started_ms),
            progress_line(&pass.report)
        )),
        None => out.push_str("  running:  none\n"),
    }
    match &info.heal.last {
        Some(pass) => {
            let when = pass
                .finished_ms
                .map_or("?".to_string(), |f| format!("{} ago", ago(now_ms, f)));
            out.push_str(&format!(
                "  last:     {}, finished {when}: {}\n",
                describe_pass(pass),
                report_line(&pass.report)
            ));
            if let Some(error) = &pass.error {
                out.push_str(&format!("            failed: {error}\n"));
            }
        }
        None => out.push_str("  last:     none since the server started\n"),
    }
    let reads = &info.heal.healed_after_reads;
    out.push_str(&format!(
        "  after damaged reads: {} objects healed, {} shards rebuilt\n",
        reads.objects_healed, reads.shards_rebuilt
    ));
    let unmounted: Vec<&str> = (info.sets.iter().flat_map(|s| &s.drives))
        .filter(|d| d.state == DriveState::Unmounted)
        .map(|d| d.path.as_str())
        .collect();
    if !unmounted.is_empty() {
        out.push_str(&format!(
            "\nUnmounted: {} empty and on the system disk while the other drives of the set \
             are mount points. Mount the disk; if none belongs there, `strata admin drive \
             format PATH`.\n",
            unmounted.join(", ")
        ));
    }
    out
}

/// `drive format PATH`.
async fn format_drive(client: &AdminClient, path: &std::path::Path) -> anyhow::Result<()> {
    let path = path.display().to_string();
    client
        .send(Method::POST, "drives/format", &[("path", &path)])
        .await?;
    println!("formatted {path} into its place; it is healed at the drive monitor's next look");
    Ok(())
}

/// `admin pass over photos/2024/ (deep)`-like words for a pass.
fn describe_pass(pass: &HealPassView) -> String {
    let scope = if pass.scope.is_empty() {
        "everything"
    } else {
        &pass.scope
    };
    format!("{} pass over {scope}", pass.reason)
}

fn ago(now_ms: i64, then_ms: i64) -> String {
    let millis = u64::try_from(now_ms.saturating_sub(then_ms)).unwrap_or(0);
    HumanDuration(Duration::from_millis(millis)).to_string()
}

fn progress_line(r: &HealReportView) -> String {
    format!(
        "{} objects checked ({}), {} healed, {} shards rebuilt",
        r.objects_checked,
        HumanBytes(r.bytes_checked),
        r.objects_healed,
        r.shards_rebuilt
    )
}

fn report_line(r: &HealReportView) -> String {
    format!(
        "{} objects checked, {} healed, {} shards rebuilt, {} records repaired, \
         {} stale records purged, {} unresolved",
        r.objects_checked,
        r.objects_healed,
        r.shards_rebuilt,
        r.records_repaired,
        r.stale_purged,
        r.unresolved
    )
}

/// Starts a heal pass, follows it to its end and prints what it fixed.
async fn heal(client: &AdminClient, target: Option<&str>, deep: bool) -> anyhow::Result<()> {
    let (bucket, prefix) = match target {
        Some(target) => {
            let (bucket, prefix) = target.split_once('/').unwrap_or((target, ""));
            if bucket.is_empty() {
                bail!("the heal target is BUCKET or BUCKET/PREFIX, got {target:?}");
            }
            (bucket, prefix)
        }
        None => ("", ""),
    };
    let mut query = vec![("deep", if deep { "true" } else { "false" })];
    if !bucket.is_empty() {
        query.push(("bucket", bucket));
        query.push(("prefix", prefix));
    }
    let body = client.send(Method::POST, "heal", &query).await?;
    let started: HealStarted =
        serde_json::from_slice(&body).context("the server's answer to the heal request")?;
    let scope = if started.scope.is_empty() {
        "everything".to_string()
    } else {
        started.scope.clone()
    };
    let depth = if started.deep { "deep" } else { "quick" };
    let began = Instant::now();
    let mut display = Progress::new(&format!("Healing {scope} ({depth})"));
    let pass = loop {
        let status: HealStatusView = client.get_json("heal").await?;
        let ours = |pass: &&HealPassView| {
            pass.reason == HEAL_REASON && pass.started_ms >= started.requested_ms
        };
        if let Some(done) = status.last.as_ref().filter(ours) {
            break done.clone();
        }
        match status.running.as_ref().filter(ours) {
            Some(running) => display.update_counts(
                running.report.objects_checked,
                running.objects_total,
                &progress_line(&running.report),
            ),
            None => display.update("waiting for the heal pass running before it to finish"),
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    };
    display.finish();
    let r = &pass.report;
    println!(
        "Healed {scope} ({depth}) in {:.1} s",
        began.elapsed().as_secs_f64()
    );
    let rows = [
        ("objects checked", r.objects_checked.to_string()),
        ("bytes checked", HumanBytes(r.bytes_checked).to_string()),
        ("objects healed", r.objects_healed.to_string()),
        ("shards rebuilt", r.shards_rebuilt.to_string()),
        ("records repaired", r.records_repaired.to_string()),
        ("stale records purged", r.stale_purged.to_string()),
        ("unresolved", r.unresolved.to_string()),
    ];
    for (name, value) in rows {
        println!("  {name:<22}{value}");
    }
    if let Some(error) = &pass.error {
        bail!("the heal pass failed: {error}");
    }
    if r.unresolved > 0 {
        bail!(
            "{} objects could not be healed (their drives disagree); the server log names them",
            r.unresolved
        );
    }
    Ok(())
}

async fn user(client: &AdminClient, command: UserCommand) -> anyhow::Result<()> {
    match command {
        UserCommand::Add {
            name,
            secret,
            policies,
        } => {
            let new = NewUser {
                secret: secret.map(|s| s.0),
                policies,
            };
            let body = serde_json::to_vec(&new)?;
            let answer = client
                .send_body(Method::POST, "users", &[("name", &name)], body)
                .await?;
            let added: AddedUser =
                serde_json::from_slice(&answer).context("the server's answer to user add")?;
            println!("Added user {}", added.name);
            if let Some(secret) = added.secret {
                println!("Access key: {}", added.name);
                println!("Secret key: {secret}");
                println!("(The secret key is shown only this once.)");
            }
        }
        UserCommand::Remove { name } => {
            client
                .send(Method::DELETE, "users", &[("name", &name)])
                .await?;
            println!("Removed user {name}");
        }
        UserCommand::Enable { name } => {
            client
                .send(Method::POST, "users/enable", &[("name", &name)])
                .await?;
            println!("Enabled user {name}");
        }
        UserCommand::Disable { name } => {
            client
                .send(Method::POST, "users/disable", &[("name", &name)])
                .await?;
            println!("Disabled user {name}");
        }
        UserCommand::List { json } => {
            let body = client.send(Method::GET, "users", &[]).await?;
            if json {
                let value: serde_json::Value = serde_json::from_slice(&body)?;
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                let users: Vec<UserInfo> = serde_json::from_slice(&body)?;
                print!("{}", render_users(&users));
            }
        }
    }
    Ok(())
}

/// The `user list` table.
fn render_users(users: &[UserInfo]) -> String {
    if users.is_empty() {
        return "No users (only the root user)\n".to_string();
    }
    let width = users.iter().map(|u| u.name.len()).max().unwrap_or(0).max(4);
    let mut out = format!("{:<width$}  {:<8}  POLICIES\n", "USER", "STATE");
    for user in users {
        let state = match (user.enabled, user.usable) {
            (_, false) => "unusable",
            (true, true) => "enabled",
            (false, true) => "disabled",
        };
        let policies = if user.policies.is_empty() {
            "-".to_string()
        } else {
            user.policies.join(", ")
        };
        out.push_str(&format!("{:<width$}  {state:<8}  {policies}\n", user.name));
    }
    if users.iter().any(|u| !u.usable) {
        out.push_str(
            "(unusable: the secret key was sealed under other root credentials; add the user again)\n",
        );
    }
    out
}

async fn kms(client: &AdminClient, command: KmsCommand) -> anyhow::Result<()> {
    let key_command = match command {
        KmsCommand::Rotate => {
            let answer = client.send(Method::POST, "kms/rotate", &[]).await?;
            let answer: serde_json::Value = serde_json::from_slice(&answer)?;
            println!(
                "Re-sealed {} key(s) under the current master key",
                answer["resealed"]
            );
            return Ok(());
        }
        KmsCommand::Key { command } => command,
    };
    match key_command {
        KmsKeyCommand::Create { name } => {
            client
                .send(Method::POST, "kms/keys", &[("name", &name)])
                .await?;
            println!("Created key {name}");
        }
        KmsKeyCommand::Enable { name } => {
            client
                .send(Method::POST, "kms/keys/enable", &[("name", &name)])
                .await?;
            println!("Enabled key {name}");
        }
        KmsKeyCommand::Disable { name } => {
            client
                .send(Method::POST, "kms/keys/disable", &[("name", &name)])
                .await?;
            println!("Disabled key {name}");
        }
        KmsKeyCommand::List { json } => {
            let body = client.send(Method::GET, "kms/keys", &[]).await?;
            if json {
                let value: serde_json::Value = serde_json::from_slice(&body)?;
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                let keys: Vec<KmsKeyView> = serde_json::from_slice(&body)?;
                print!("{}", render_kms_keys(&keys));
            }
        }
        KmsKeyCommand::Status { name } => {
            let body = client
                .send(Method::GET, "kms/keys/status", &[("name", &name)])
                .await?;
            let status: KmsKeyStatusView = serde_json::from_slice(&body)?;
            println!("Key:        {}", status.key.name);
            println!("State:      {}", state_of(status.key.enabled));
            println!(
                "Default:    {}",
                if status.key.default { "yes" } else { "no" }
            );
            match status.error {
                None if status.encryption_works => println!("Encryption: works"),
                None => println!("Encryption: FAILS (a data key did not open again)"),
                Some(error) => println!("Encryption: FAILS ({error})"),
            }
        }
    }
    Ok(())
}

fn state_of(enabled: bool) -> &'static str {
    if enabled {
        "enabled"
    } else {
        "disabled"
    }
}

fn render_kms_keys(keys: &[KmsKeyView]) -> String {
    let width = keys.iter().map(|k| k.name.len()).max().unwrap_or(0).max(3);
    let mut out = format!("{:<width$}  STATE     DEFAULT\n", "KEY");
    for key in keys {
        let default = if key.default { "yes" } else { "" };
        let state = state_of(key.enabled);
        out.push_str(&format!("{:<width$}  {state:<8}  {default}\n", key.name));
    }
    out
}

async fn lifecycle(client: &AdminClient, command: LifecycleCommand) -> anyhow::Result<()> {
    let when = |ms: Option<i64>| {
        ms.and_then(|ms| time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000)).ok())
            .map_or("never".to_string(), |t| t.to_string())
    };
    let print_plan = |plan: &serde_json::Value| {
        let list = |name: &str| plan[name].as_array().cloned().unwrap_or_default();
        println!(
            "Due now: {} (of {} objects looked at{})",
            plan["due_now_count"],
            plan["objects_looked_at"],
            if plan["truncated"] == true {
                ", more not looked at"
            } else {
                ""
            }
        );
        for item in list("due_now") {
            println!(
                "  {:<40} {:<24} rule {}",
                item["key"].as_str().unwrap_or(""),
                item["action"].as_str().unwrap_or(""),
                item["rule"].as_str().unwrap_or("")
            );
        }
        println!("Next:");
        for item in list("upcoming") {
            println!(
                "  {:<40} {:<24} rule {} at {}",
                item["key"].as_str().unwrap_or(""),
                item["action"].as_str().unwrap_or(""),
                item["rule"].as_str().unwrap_or(""),
                when(item["due_ms"].as_i64())
            );
        }
    };
    match command {
        LifecycleCommand::Status { bucket, json } => {
            let body = client
                .send(Method::GET, "lifecycle", &[("bucket", &bucket)])
                .await?;
            let status: serde_json::Value = serde_json::from_slice(&body)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
                return Ok(());
            }
            println!(
                "Bucket {bucket}: last scanned {} ({} object versions)",
                when(status["last_scan_ms"].as_i64()),
                status["objects_scanned"]
            );
            for rule in status["rules"].as_array().cloned().unwrap_or_default() {
                println!(
                    "  rule {:<20} {:<8} expired {:>6}  noncurrent removed {:>6}  markers removed {:>6}  transitioned {:>6} (failed {}, skipped {})  uploads aborted {:>6}  last acted {}",
                    rule["id"].as_str().unwrap_or(""),
                    if rule["enabled"] == true { "enabled" } else { "disabled" },
                    rule["expired"],
                    rule["versions_removed"],
                    rule["markers_removed"],
                    rule["transitioned"],
                    rule["transitions_failed"],
                    rule["transitions_skipped"],
                    rule["uploads_aborted"],
                    when(rule["last_action_ms"].as_i64())
                );
            }
            print_plan(&status["plan"]);
        }
        LifecycleCommand::DryRun { bucket, file, json } => {
            let rules =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let body = client
                .send_body(
                    Method::POST,
                    "lifecycle/dry-run",
                    &[("bucket", &bucket)],
                    rules,
                )
                .await?;
            let plan: serde_json::Value = serde_json::from_slice(&body)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&plan)?);
            } else {
                println!(
                    "Dry run of {} on bucket {bucket} (nothing changed)",
                    file.display()
                );
                print_plan(&plan);
            }
        }
        LifecycleCommand::Set { bucket, file } => {
            let rules =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            client
                .send_body(Method::PUT, "lifecycle", &[("bucket", &bucket)], rules)
                .await?;
            println!(
                "Set the lifecycle rules of {bucket} from {}",
                file.display()
            );
        }
    }
    Ok(())
}

async fn policy(client: &AdminClient, command: PolicyCommand) -> anyhow::Result<()> {
    match command {
        PolicyCommand::Add { name, file } => {
            let document = if file.as_os_str() == "-" {
                let mut document = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut document)
                    .context("reading the policy from standard input")?;
                document
            } else {
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?
            };
            client
                .send_body(Method::PUT, "policies", &[("name", &name)], document)
                .await?;
            println!("Put policy {name}");
        }
        PolicyCommand::Remove { name } => {
            client
                .send(Method::DELETE, "policies", &[("name", &name)])
                .await?;
            println!("Removed policy {name}");
        }
        PolicyCommand::List { json } => {
            let body = client.send(Method::GET, "policies", &[]).await?;
            if json {
                let value: serde_json::Value = serde_json::from_slice(&body)?;
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                let policies: Vec<PolicyInfo> = serde_json::from_slice(&body)?;
                print!("{}", render_policies(&policies));
            }
        }
        PolicyCommand::Show { name } => {
            let body = client
                .send(Method::GET, "policies", &[("name", &name)])
                .await?;
            match serde_json::from_slice::<serde_json::Value>(&body) {
                Ok(value) => println!("{}", serde_json::to_string_pretty(&value)?),
                Err(_) => println!("{}", String::from_utf8_lossy(&body)),
            }
        }
        PolicyCommand::Attach { user, policy } => {
            let query = [("name", user.as_str()), ("policy", policy.as_str())];
            client.send(Method::POST, "users/attach", &query).await?;
            println!("Attached policy {policy} to user {user}");
        }
        PolicyCommand::Detach { user, policy } => {
            let query = [("name", user.as_str()), ("policy", policy.as_str())];
            client.send(Method::POST, "users/detach", &query).await?;
            println!("Detached policy {policy} from user {user}");
        }
    }
    Ok(())
}

/// The `policy list` table.
fn render_policies(policies: &[PolicyInfo]) -> String {
    if policies.is_empty() {
        return "No policies\n".to_string();
    }
    let width = policies
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0)
        .max(6);
    let mut out = format!("{:<width$}  USERS\n", "POLICY");
    for policy in policies {
        let users = if policy.users.is_empty() {
            "-".to_string()
        } else {
            policy.users.join(", ")
        };
        out.push_str(&format!("{:<width$}  {users}\n", policy.name));
    }
    out
}

/// Heal progress: a bar (objects checked of the pass's total) with the counts on a
/// terminal, a line now and then otherwise.
enum Progress {
    Bar(ProgressBar),
    Lines {
        title: String,
        last: Option<(Instant, String)>,
    },
}

impl Progress {
    fn new(title: &str) -> Self {
        if std::io::stdout().is_terminal() {
            // A spinner until the server has counted the objects of the pass.
            let bar = ProgressBar::new(0).with_style(
                ProgressStyle::with_template(
                    "{spinner} {prefix} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}",
                )
                .expect("a valid template"),
            );
            bar.set_prefix(title.to_string());
            bar.set_message("starting");
            bar.enable_steady_tick(Duration::from_millis(100));
            Progress::Bar(bar)
        } else {
            Progress::Lines {
                title: title.to_string(),
                last: None,
            }
        }
    }

    /// Progress of the pass: `checked` of `total` objects.
    fn update_counts(&mut self, checked: u64, total: u64, message: &str) {
        if let Progress::Bar(bar) = self {
            bar.set_length(total.max(checked));
            bar.set_position(checked);
        }
        self.update(message);
    }

    fn update(&mut self, message: &str) {
        match self {
            Progress::Bar(bar) => bar.set_message(message.to_string()),
            Progress::Lines { title, last } => {
                let due = last.as_ref().is_none_or(|(at, previous)| {
                    previous != message && at.elapsed() >= LINE_INTERVAL
                });
                if due {
                    println!("{title}: {message}");
                    let _ = std::io::stdout().flush();
                    *last = Some((Instant::now(), message.to_string()));
                }
            }
        }
    }

    fn finish(self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::api::{DriveInfo, PoolInfo, SetInfo};

    #[test]
    fn requests_are_signed_as_the_server_checks_them() {
        let client = AdminClient::new(
            "http://127.0.0.1:9000",
            crate::config::DEFAULT_REGION,
            Credentials {
                access_key: "root".into(),
                secret_key: "secret-secret".into(),
            },
        )
        .unwrap();
        let now = SystemTime::now();
        let url =
            reqwest::Url::parse("http://127.0.0.1:9000/_strata/admin/v1/heal?deep=true").unwrap();
        let mut headers =
            (client.signed_headers(&Method::POST, &url, Payload::Bytes(b""), now)).expect("signed");
        // What the HTTP client adds when it sends the request.
        headers.insert("host", HeaderValue::from_static("127.0.0.1:9000"));
        let now = time::OffsetDateTime::from(now);
        let uri: axum::http::Uri = "/_strata/admin/v1/heal?deep=true".parse().unwrap();
        let keyring = crate::api::auth::Keyring::new(
            crate::api::auth::Credentials {
                access_key: "root".into(),
                secret_key: "secret-secret".into(),
            },
            crate::config::DEFAULT_REGION,
        );
        let auth =
            crate::api::auth::authenticate(&Method::POST, &uri, &headers, &keyring, None, now)
                .expect("the signature verifies")
                .expect("the request is signed");
        assert_eq!(auth.access_key, "root");
    }

    #[test]
    fn user_and_policy_tables() {
        let users = [
            UserInfo {
                name: "alice".into(),
                enabled: true,
                policies: vec!["readonly".into(), "team-a".into()],
                usable: true,
            },
            UserInfo {
                name: "ci-bot".into(),
                enabled: false,
                policies: vec![],
                usable: true,
            },
        ];
        assert_eq!(
            render_users(&users),
            "USER    STATE     POLICIES\n\
             alice   enabled   readonly, team-a\n\
             ci-bot  disabled  -\n"
        );
        let policies = [PolicyInfo {
            name: "readonly".into(),
            users: vec!["alice".into()],
        }];
        assert_eq!(
            render_policies(&policies),
            "POLICY    USERS\nreadonly  alice\n"
        );
        assert_eq!(render_users(&[]), "No users (only the root user)\n");
    }

    #[test]
    fn errors_show_code_and_message() {
        let xml = b"<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code>\
                    <Message>Access Denied</Message></Error>";
        assert_eq!(describe_error(xml), "AccessDenied: Access Denied");
        let json = br#"{"error":{"code":"HealRunning","message":"busy"}}"#;
        assert_eq!(describe_error(json), "HealRunning: busy");
        assert_eq!(describe_error(b""), "the server gave no reason");
    }

    #[test]
    fn the_info_table_lists_every_drive() {
        let drive = |path: &str, state| DriveInfo {
            path: path.into(),
            state,
            total_bytes: Some(10 << 30),
            used_bytes: Some(1 << 30),
            free_bytes: Some(9 << 30),
        };
        let info = Info {
            deployment_id: "dep".into(),
            ready: true,
            sets: vec![SetInfo {
                index: 0,
                data_shards: 2,
                parity_shards: 1,
                write_quorum: 2,
                read_quorum: 2,
                online: 2,
                drives: vec![
                    drive("/d1", DriveState::Online),
                    drive("/d2", DriveState::Healing),
                    DriveInfo {
                        total_bytes: None,
                        used_bytes: None,
                        free_bytes: None,
                        ..drive("/d3", DriveState::Offline)
                    },
                ],
            }],
            pools: Vec::new(),
            heal: HealStatusView::default(),
            cluster: None,
        };
        let table = render_info(&info, 0);
        let row = |path: &str| {
            let row = table.lines().find(|l| l.trim_start().starts_with(path));
            row.unwrap_or_else(|| panic!("no row for {path}:\n{table}"))
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert!(table.contains("Set 1  2+1  2/3 drives online"), "{table}");
        assert_eq!(row("/d1"), "/d1 online 1.00 GiB 9.00 GiB 10.00 GiB");
        assert_eq!(row("/d2"), "/d2 healing 1.00 GiB 9.00 GiB 10.00 GiB");
        assert_eq!(row("/d3"), "/d3 offline - - -");
        assert!(
            !table.contains("Server pools"),
            "one pool is not shown:\n{table}"
        );
    }

    #[test]
    fn pools_are_listed_one_line_each() {
        let pool = |index: usize, sets: Vec<usize>| PoolInfo {
            index,
            id: format!("pool-{index}"),
            state: "active".into(),
            sets,
            total_bytes: 20 << 30,
            free_bytes: 5 << 30,
            holds: (index == 1).then_some(crate::object::PoolUsage {
                keys: 1200,
                versions: 1300,
                bytes: 3 << 30,
                capacity: 10 << 30,
            }),
            decommission: None,
        };
        let info = Info {
            deployment_id: "dep".into(),
            ready: true,
            sets: Vec::new(),
            pools: vec![pool(0, vec![0]), pool(1, vec![1, 2])],
            heal: HealStatusView::default(),
            cluster: None,
        };
        let table = render_pools(&info);
        let rows: Vec<String> = (table.lines().skip(1))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            rows,
            [
                "1 pool-0 active 1 - - 5.00 GiB 20.00 GiB",
                "2 pool-1 active 2-3 1200 3.00 GiB 5.00 GiB 20.00 GiB"
            ]
        );
        assert!(render_info(&info, 0).contains("Server pools"));
    }

    #[test]
    fn a_drain_shows_a_bar_its_rate_and_what_is_left() {
        use crate::admin::api::DrainView;
        let mut pool = PoolInfo {
            index: 0,
            id: "old".into(),
            state: "decommissioning".into(),
            sets: vec![0],
            total_bytes: 0,
            free_bytes: 0,
            holds: None,
            decommission: None,
        };
        assert!(render_drain(&pool, 0).contains("no decommission has reported progress"));
        pool.decommission = Some(DrainView {
            started_ms: 0,
            keys_moved: 75,
            versions_moved: 80,
            bytes_moved: 10 << 20,
            failures: 0,
            keys_left: Some(25),
            open_uploads: Some(2),
        });
        let line = render_drain(&pool, 10_000);
        assert!(
            line.starts_with(&format!("[{}{}] 75%", "#".repeat(23), "-".repeat(7))),
            "{line}"
        );
        assert!(
            line.contains("moved 75 keys (80 versions, 10.00 MiB) at 1.00 MiB/s"),
            "{line}"
        );
        assert!(
            line.contains("25 keys left, about 3 seconds more"),
            "{line}"
        );
        assert!(
            line.contains("waiting for 2 multipart uploads to end"),
            "{line}"
        );
    }

    #[test]
    fn a_rebalance_shows_what_moved_and_each_pool_against_the_whole() {
        use crate::admin::pools::PoolFill;
        use crate::object::PoolUsage;
        let usage = |bytes| PoolUsage {
            keys: bytes / 100,
            versions: bytes / 100,
            bytes,
            capacity: 10_000,
        };
        let view = RebalanceView {
            state: "running".into(),
            started_ms: Some(1_000),
            ended_ms: None,
            keys_moved: 12,
            versions_moved: 13,
            bytes_moved: 4 << 20,
            failures: 0,
            pools: vec![
                PoolFill {
                    index: 0,
                    usage: Some(usage(3000)),
                },
                PoolFill {
                    index: 1,
                    usage: Some(usage(1000)),
                },
                PoolFill {
                    index: 2,
                    usage: None,
                },
            ],
        };
        let text = render_rebalance(&view, 5_000);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("rebalance running (4 seconds since it started)")
                && lines[0].contains("moved 12 keys (13 versions, 4.00 MiB) at 1.00 MiB/s"),
            "{text}"
        );
        assert!(
            lines[1].contains("pool 1: 30 keys") && lines[1].contains("1.50×"),
            "{text}"
        );
        assert!(lines[2].contains("(10.0000 % used) (0.50×"), "{text}");
        assert_eq!(lines[3], "pool 3: not active");
        let none = RebalanceView {
            state: "none".into(),
            ..RebalanceView::default()
        };
        assert!(render_rebalance(&none, 0).starts_with("no rebalance has run"));
    }
}
