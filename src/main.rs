//! The `strata` command line.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use strata::cluster::etcd::EtcdAccess;
use strata::cluster::layout;
use strata::config::{self, ServerConfig};
use zeroize::Zeroizing;

#[derive(Parser)]
#[command(
    name = "strata",
    version,
    about = "An S3-compatible, erasure-coded object store"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of a variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Serve the S3 API over a set of drive folders.
    Server {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:9000")]
        address: SocketAddr,
        /// Erasure coding as DATA+PARITY shards per set.
        #[arg(long, default_value = "6+3")]
        ec: String,
        /// Erasure block size in bytes.
        #[arg(long, default_value_t = strata::erasure::DEFAULT_BLOCK_SIZE)]
        block_size: usize,
        /// Log as JSON lines.
        #[arg(long)]
        json_logs: bool,
        /// Serve virtual-hosted-style requests (`bucket.DOMAIN`) besides path-style ones.
        #[arg(long, env = "STRATA_DOMAIN")]
        domain: Option<String>,
        /// The region the server answers for: requests are signed for it, and buckets
        /// report it as their location.
        #[arg(long, env = "STRATA_REGION", default_value = config::DEFAULT_REGION)]
        region: String,
        /// The Object Ownership of buckets created without one: BucketOwnerEnforced (ACLs
        /// off, as on S3), or ObjectWriter / BucketOwnerPreferred to take ACLs as older S3
        /// and other servers did.
        #[arg(
            long,
            env = "STRATA_DEFAULT_OBJECT_OWNERSHIP",
            value_name = "OWNERSHIP"
        )]
        default_object_ownership: Option<String>,
        /// Serve HTTPS with `DIR/public.crt` (certificate chain) and `DIR/private.key`;
        /// both are reloaded when they change.
        #[arg(long, env = "STRATA_CERTS_DIR", value_name = "DIR")]
        certs_dir: Option<PathBuf>,
        // Not a clap default: an address taken by default is not fatal, one given is.
        #[arg(
            long,
            env = "STRATA_CONSOLE_ADDRESS",
            value_name = "HOST:PORT",
            help = "Where the web console listens (HTTPS with --certs-dir), or none [default: 127.0.0.1:9001]"
        )]
        console_address: Option<String>,
        /// Tiers for lifecycle transitions: a JSON file naming drive pools and remote S3
        /// endpoints (see README).
        #[arg(long, env = "STRATA_TIERS_FILE", value_name = "FILE")]
        tiers: Option<PathBuf>,
        /// Accept a cluster layout where losing one node would stop a set's writes.
        #[arg(long)]
        allow_node_loss_risk: bool,
        /// Several nodes: this node as the drive URLs name it (`host:port`), where
        /// `--address` cannot tell (every node listening on 0.0.0.0:9000, say).
        #[arg(long, env = "STRATA_NODE", value_name = "HOST:PORT")]
        node: Option<String>,
        /// Several nodes: the interface the drive service listens on (a private network the
        /// nodes share, say), on the S3 port + 100. Default: `--address`'s.
        #[arg(long, env = "STRATA_DRIVE_ADDRESS", value_name = "IP")]
        drive_address: Option<std::net::IpAddr>,
        #[command(flatten)]
        etcd: EtcdArgs,
        /// A server pool: its drive folders, space-separated (`--pool "/mnt/a{1...9}"`), or
        /// in a cluster its drive URLs (`--pool "http://node{1...3}:9000/mnt/d{1...2}"`).
        /// A pool may have its own erasure geometry: `--pool "ec=4+2 /mnt/b{1...6}"`.
        /// Repeat it to give each pool, in order; a deployment may add pools at a restart
        /// but never drop or change one (see README, "Growing a deployment").
        #[arg(long = "pool", value_name = "DRIVES", conflicts_with = "drives")]
        pools: Vec<String>,
        /// Drive folders; `/data/d{1...9}` expands. Default: ./data/d1 … ./data/d9. Several
        /// nodes: one URL per drive, `http://node{1...4}:9000/mnt/disk{1...9}`, the same on
        /// every node (needs STRATA_CLUSTER_SECRET).
        drives: Vec<String>,
    },
    /// Operate a running server (as the root user of STRATA_ROOT_USER/STRATA_ROOT_PASSWORD).
    Admin {
        /// The server's S3 endpoint.
        #[arg(long, global = true, default_value = "http://127.0.0.1:9000")]
        endpoint: String,
        /// The region the server answers for (its `--region`).
        #[arg(long, global = true, env = "STRATA_REGION", default_value = config::DEFAULT_REGION)]
        region: String,
        #[command(subcommand)]
        command: strata::admin::cli::AdminCommand,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Server {
            address,
            ec,
            block_size,
            json_logs,
            domain,
            region,
            default_object_ownership,
            certs_dir,
            console_address,
            tiers,
            allow_node_loss_risk,
            node,
            drive_address,
            etcd,
            pools,
            drives,
        } => {
            init_logging(json_logs);
            let layout = Layout {
                drives,
                pools,
                allow_node_loss_risk,
                node,
                drive_address,
                etcd,
            };
            match server_config(address, &ec, block_size, domain, layout).and_then(|mut config| {
                config.listener = listener_config(certs_dir)?;
                config.region = config::parse_region(&region)?;
                config.default_object_ownership = (default_object_ownership.as_deref())
                    .map(object_ownership)
                    .transpose()?;
                config.lifecycle.tiers_file = tiers;
                config.console = config::ConsoleAddress::parse(console_address.as_deref())?;
                Ok(config)
            }) {
                Ok(config) => run(config),
                Err(e) => fail(e),
            }
        }
        Command::Admin {
            endpoint,
            region,
            command,
        } => match strata::admin::cli::run(&endpoint, &region, command) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => fail(e),
        },
    }
}

/// The drive arguments of `strata server`, and where this node stands among them.
struct Layout {
    drives: Vec<String>,
    /// `--pool` arguments, each a space-separated list of drive arguments.
    pools: Vec<String>,
    allow_node_loss_risk: bool,
    node: Option<String>,
    drive_address: Option<std::net::IpAddr>,
    etcd: EtcdArgs,
}

/// Where the control plane of several nodes lives, and how a node proves itself to it. The
/// etcd user's password comes from the environment only (STRATA_ETCD_PASSWORD or the file
/// STRATA_ETCD_PASSWORD_FILE names), never the command line.
#[derive(clap::Args)]
struct EtcdArgs {
    /// Several nodes: the etcd members that hold the control plane (layout, membership,
    /// elections, the change feed, buckets, users and keys), comma-separated:
    /// `https://host:2379`, or `http://` on loopback (beyond it, see --etcd-insecure).
    #[arg(
        long = "etcd",
        env = "STRATA_ETCD_ENDPOINTS",
        value_name = "URLS",
        value_delimiter = ','
    )]
    endpoints: Vec<String>,
    /// PEM certificates of the CA that signs the etcd members' certificates (the only roots
    /// trusted for them).
    #[arg(long = "etcd-ca", env = "STRATA_ETCD_CA", value_name = "FILE")]
    ca: Option<PathBuf>,
    /// PEM client certificate (chain) this node shows etcd members that check them.
    #[arg(
        long = "etcd-cert",
        env = "STRATA_ETCD_CERT",
        value_name = "FILE",
        requires = "key"
    )]
    cert: Option<PathBuf>,
    /// The PEM private key of --etcd-cert.
    #[arg(
        long = "etcd-key",
        env = "STRATA_ETCD_KEY",
        value_name = "FILE",
        requires = "cert"
    )]
    key: Option<PathBuf>,
    /// The etcd user this node signs in as, when etcd's authentication is on.
    #[arg(long = "etcd-user", env = "STRATA_ETCD_USER", value_name = "NAME")]
    user: Option<String>,
    /// Accept plain http:// etcd members beyond loopback: whoever reaches them reads and
    /// rewrites who may do what (only on a network nobody else can reach).
    #[arg(long = "etcd-insecure", env = "STRATA_ETCD_INSECURE")]
    insecure: bool,
}

impl EtcdArgs {
    /// The members named, and the credentials read, as the etcd client takes them.
    fn access(&self) -> anyhow::Result<EtcdAccess> {
        let endpoints: Vec<String> = (self.endpoints.iter())
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty())
            .collect();
        if let Some(bad) =
            (endpoints.iter()).find(|e| !e.starts_with("http://") && !e.starts_with("https://"))
        {
            anyhow::bail!("--etcd {bad}: etcd members are named https://host:port (or http://)");
        }
        let read = |flag: &str, path: &PathBuf| {
            std::fs::read(path).with_context(|| format!("{flag} {}", path.display()))
        };
        let identity = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                let mut pem = Zeroizing::new(read("--etcd-cert", cert)?);
                pem.push(b'\n');
                pem.extend_from_slice(&read("--etcd-key", key)?);
                Some(pem)
            }
            _ => None,
        };
        let password = secret_from_env("STRATA_ETCD_PASSWORD")?
            .map(|bytes| String::from_utf8(bytes.to_vec()).map(Zeroizing::new))
            .transpose()
            .context("the etcd password is text")?;
        let user = match (&self.user, password) {
            (Some(user), Some(password)) => Some((user.clone(), password)),
            (None, None) => None,
            (Some(_), None) => anyhow::bail!(
                "--etcd-user needs its password in STRATA_ETCD_PASSWORD (or a file named by \
                 STRATA_ETCD_PASSWORD_FILE)"
            ),
            (None, Some(_)) => anyhow::bail!("an etcd password needs --etcd-user"),
        };
        let access = EtcdAccess {
            endpoints,
            ca_pem: self
                .ca
                .as_ref()
                .map(|ca| read("--etcd-ca", ca))
                .transpose()?,
            identity_pem: identity,
            user,
        };
        let plaintext = access.plaintext_beyond_loopback();
        if !plaintext.is_empty() && !self.insecure {
            anyhow::bail!(
                "--etcd {}: plain http:// beyond this machine lets whoever reaches the network \
                 read the control plane and rewrite it (bucket policies, users, keys). Use \
                 https:// with --etcd-ca (and --etcd-cert/--etcd-key or --etcd-user), or, on a \
                 network nobody else reaches, acknowledge it with --etcd-insecure",
                plaintext.join(",")
            );
        }
        Ok(access)
    }

    fn is_empty(&self) -> bool {
        self.endpoints.iter().all(|e| e.trim().is_empty())
    }
}

/// Checks `--default-object-ownership` against the settings S3 knows.
fn object_ownership(name: &str) -> anyhow::Result<String> {
    use strata::object::acl::ObjectOwnership;
    if ObjectOwnership::parse(name).is_none() {
        let known: Vec<&str> = ObjectOwnership::ALL.iter().map(|o| o.as_str()).collect();
        anyhow::bail!(
            "--default-object-ownership {name:?}: one of {}",
            known.join(", ")
        );
    }
    Ok(name.to_string())
}

fn server_config(
    address: SocketAddr,
    ec: &str,
    block_size: usize,
    domain: Option<String>,
    layout: Layout,
) -> anyhow::Result<ServerConfig> {
    let (data_shards, parity_shards) = config::parse_erasure(ec)?;
    let pool_args: Vec<Vec<String>> = (layout.pools.iter())
        .map(|pool| pool.split_whitespace().map(str::to_string).collect())
        .collect();
    let mut pools = Vec::new();
    let distributed = match pool_args.is_empty() {
        true => vec![layout.drives.clone()],
        false => pool_args.clone(),
    };
    let (drives, cluster) = if layout::is_distributed(&distributed.concat()) {
        let cluster = cluster_config(address, data_shards, parity_shards, &layout, distributed)?;
        pools = (cluster.layout.pools().iter())
            .map(|pool| config::PoolSpec {
                drives: pool.sets.iter().map(Vec::len).sum(),
                data_shards: pool.data,
                parity_shards: pool.parity,
            })
            .collect();
        let here = (cluster.layout.sets.iter().flatten())
            .filter(|drive| drive.node == cluster.this_node)
            .map(|drive| PathBuf::from(&drive.path))
            .collect();
        (here, Some(cluster))
    } else if !layout.etcd.is_empty() || layout.node.is_some() || layout.drive_address.is_some() {
        anyhow::bail!(
            "--etcd, --node and --drive-address are for several nodes, whose drives are URLs \
             (http://node{{1...4}}:9000/mnt/disk{{1...9}}); one node needs none of them"
        );
    } else if !pool_args.is_empty() {
        let mut drives = Vec::new();
        for (index, pool) in pool_args.iter().enumerate() {
            let (folders, data, parity) = pool_geometry(index, pool, (data_shards, parity_shards))?;
            let pool_drives = config::expand_drive_args(&folders)?;
            config::check_drive_count(pool_drives.len(), data, parity)
                .with_context(|| format!("pool {}", index + 1))?;
            pools.push(config::PoolSpec {
                drives: pool_drives.len(),
                data_shards: data,
                parity_shards: parity,
            });
            drives.extend(pool_drives);
        }
        (drives, None)
    } else if layout.drives.is_empty() {
        let defaults = (1..=data_shards + parity_shards)
            .map(|i| PathBuf::from(format!("./data/d{i}")))
            .collect();
        (defaults, None)
    } else {
        let drives = config::expand_drive_args(&layout.drives)?;
        config::check_drive_count(drives.len(), data_shards, parity_shards)?;
        (drives, None)
    };
    if !(64 * 1024..=64 << 20).contains(&block_size) {
        anyhow::bail!("--block-size must be between 64 KiB and 64 MiB");
    }
    let user = std::env::var("STRATA_ROOT_USER")
        .ok()
        .filter(|v| !v.is_empty());
    let password = std::env::var("STRATA_ROOT_PASSWORD")
        .ok()
        .filter(|v| !v.is_empty());
    let (root_user, root_password, default_credentials) = match (user, password) {
        (Some(u), Some(p)) => (u, p, false),
        (None, None) => (
            config::DEFAULT_ROOT_USER.to_string(),
            config::DEFAULT_ROOT_PASSWORD.to_string(),
            true,
        ),
        _ => anyhow::bail!("set both STRATA_ROOT_USER and STRATA_ROOT_PASSWORD, or neither"),
    };
    if !default_credentials && root_password.len() < 8 {
        anyhow::bail!("STRATA_ROOT_PASSWORD must be at least 8 characters");
    }
    Ok(ServerConfig {
        address,
        drives,
        pools,
        data_shards,
        parity_shards,
        block_size,
        root_user,
        root_password,
        default_credentials,
        region: config::DEFAULT_REGION.into(),
        default_object_ownership: None,
        domain: domain.map(|d| d.trim_matches('.').to_ascii_lowercase()),
        stale_upload_expiry: seconds_from_env(
            "STRATA_STALE_UPLOAD_EXPIRY_SECS",
            config::DEFAULT_STALE_UPLOAD_EXPIRY_SECS,
        )?,
        stale_upload_scan: seconds_from_env(
            "STRATA_STALE_UPLOAD_SCAN_SECS",
            config::DEFAULT_STALE_UPLOAD_SCAN_SECS,
        )?,
        healing: healing_config()?,
        listener: Default::default(),
        metrics: metrics_config()?,
        limits: limits_config()?,
        lifecycle: lifecycle_config()?,
        decommission_duty: match std::env::var("STRATA_DECOMMISSION_DUTY") {
            Ok(duty) => duty
                .parse::<f64>()
                .ok()
                .filter(|d| (0.01..=1.0).contains(d))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "STRATA_DECOMMISSION_DUTY must be between 0.01 and 1, got {duty:?}"
                    )
                })?,
            Err(_) => config::DEFAULT_DECOMMISSION_DUTY,
        },
        cluster,
        console: config::ConsoleAddress::Off,
    })
}

/// A secret from the environment: the file `NAME_FILE` names (its surrounding whitespace
/// dropped), or `NAME` itself; `None` when neither is set.
fn secret_from_env(name: &str) -> anyhow::Result<Option<Zeroizing<Vec<u8>>>> {
    let file = format!("{name}_FILE");
    if let Some(path) = std::env::var_os(&file).filter(|p| !p.is_empty()) {
        let bytes = std::fs::read(&path)
            .with_context(|| format!("reading {file} {}", path.to_string_lossy()))?;
        return Ok(Some(Zeroizing::new(bytes.trim_ascii().to_vec())));
    }
    let value = std::env::var(name).ok().filter(|v| !v.is_empty());
    Ok(value.map(|v| Zeroizing::new(v.into_bytes())))
}

/// Distributed mode: the layout every node is started with, which node this is, and the
/// secret the nodes share.
/// A `--pool`'s drive arguments and erasure geometry: `ec=D+P` among its arguments gives it
/// its own, else it has `--ec`'s (`default`).
fn pool_geometry(
    index: usize,
    args: &[String],
    default: (usize, usize),
) -> anyhow::Result<(Vec<String>, usize, usize)> {
    let (geometry, drives): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|arg| arg.starts_with("ec="));
    let (data, parity) = match geometry.as_slice() {
        [] => default,
        [ec] => config::parse_erasure(&ec["ec=".len()..])
            .with_context(|| format!("pool {}", index + 1))?,
        _ => anyhow::bail!("pool {}: ec= is given twice", index + 1),
    };
    Ok((drives.into_iter().cloned().collect(), data, parity))
}

fn cluster_config(
    address: SocketAddr,
    data: usize,
    parity: usize,
    arguments: &Layout,
    pools: Vec<Vec<String>>,
) -> anyhow::Result<config::ClusterConfig> {
    let mut planned = Vec::new();
    for (index, pool) in pools.iter().enumerate() {
        let (drives, data, parity) = pool_geometry(index, pool, (data, parity))?;
        planned.push((layout::expand_endpoints(&drives)?, data, parity));
    }
    let plan = layout::plan_pools(planned, arguments.allow_node_loss_risk)?;
    if plan.pool_sets.len() > 1 && arguments.etcd.is_empty() {
        anyhow::bail!(
            "a cluster of several server pools keeps its pool list in etcd: give --etcd (the \
             nodes of one pool can go without)"
        );
    }
    let this_node = layout::find_self(
        &plan,
        arguments.node.as_deref().unwrap_or(&address.to_string()),
    )?;
    let secret = secret_from_env("STRATA_CLUSTER_SECRET")?.unwrap_or_default();
    if secret.len() < 32 {
        anyhow::bail!(
            "several nodes need a shared secret of at least 32 bytes in STRATA_CLUSTER_SECRET \
             (or a file named by STRATA_CLUSTER_SECRET_FILE): it authenticates every call \
             between nodes"
        );
    }
    Ok(config::ClusterConfig {
        deployment_id: plan.deployment_id(),
        layout: plan,
        this_node,
        secret,
        etcd: arguments.etcd.access()?,
        drive_ip: arguments.drive_address,
    })
}

fn limits_config() -> anyhow::Result<config::LimitsConfig> {
    let defaults = config::LimitsConfig::default();
    Ok(config::LimitsConfig {
        max_requests: match std::env::var("STRATA_MAX_REQUESTS") {
            Ok(v) if !v.is_empty() => match v.parse() {
                Ok(n) if n >= 1 => n,
                _ => anyhow::bail!("STRATA_MAX_REQUESTS must be a whole number ≥ 1, got {v:?}"),
            },
            _ => defaults.max_requests,
        },
        memory_budget: whole_number(
            "STRATA_MEMORY_BUDGET_MIB",
            config::DEFAULT_MEMORY_BUDGET_MIB,
            8,
        )? << 20,
        max_retention_days: match std::env::var("STRATA_MAX_RETENTION_DAYS") {
            Ok(v) if !v.is_empty() => match v.parse() {
                Ok(n) if n >= 1 => Some(n),
                _ => anyhow::bail!(
                    "STRATA_MAX_RETENTION_DAYS must be a whole number of days ≥ 1, got {v:?}"
                ),
            },
            _ => defaults.max_retention_days,
        },
    })
}

fn metrics_config() -> anyhow::Result<config::MetricsConfig> {
    let defaults = config::MetricsConfig::default();
    Ok(config::MetricsConfig {
        auth: match std::env::var("STRATA_METRICS_AUTH") {
            Ok(v) if !v.is_empty() => config::parse_metrics_auth(&v)?,
            _ => defaults.auth,
        },
        token: std::env::var("STRATA_METRICS_TOKEN")
            .ok()
            .filter(|v| !v.is_empty()),
        usage_scan: match seconds_from_env("STRATA_USAGE_SCAN_SECS", defaults.usage_scan.as_secs())?
        {
            interval if interval.is_zero() => {
                anyhow::bail!("STRATA_USAGE_SCAN_SECS must be at least 1")
            }
            interval => interval,
        },
    })
}

fn listener_config(certs_dir: Option<PathBuf>) -> anyhow::Result<config::ListenerConfig> {
    let defaults = config::ListenerConfig::default();
    let at_least_one_second =
        |name: &str, default: std::time::Duration| match seconds_from_env(name, default.as_secs())?
        {
            secs if secs.is_zero() => anyhow::bail!("{name} must be at least 1"),
            secs => Ok(secs),
        };
    let max_header_bytes = match std::env::var("STRATA_MAX_HEADER_BYTES") {
        Ok(v) => match v.parse() {
            Ok(n) if n >= 1024 => n,
            _ => anyhow::bail!("STRATA_MAX_HEADER_BYTES must be a whole number ≥ 1024, got {v:?}"),
        },
        Err(_) => defaults.max_header_bytes,
    };
    Ok(config::ListenerConfig {
        certs_dir: certs_dir.filter(|dir| !dir.as_os_str().is_empty()),
        header_read_timeout: at_least_one_second(
            "STRATA_HEADER_TIMEOUT_SECS",
            defaults.header_read_timeout,
        )?,
        idle_timeout: at_least_one_second("STRATA_IDLE_TIMEOUT_SECS", defaults.idle_timeout)?,
        shutdown_grace: seconds_from_env(
            "STRATA_SHUTDOWN_GRACE_SECS",
            defaults.shutdown_grace.as_secs(),
        )?,
        max_header_bytes,
        max_connections: whole_number("STRATA_MAX_CONNECTIONS", defaults.max_connections, 1)?,
        max_connections_per_client: whole_number(
            "STRATA_MAX_CONNECTIONS_PER_CLIENT",
            defaults.max_connections_per_client,
            1,
        )?,
        min_upload_rate: whole_number(
            "STRATA_MIN_UPLOAD_BYTES_PER_SEC",
            defaults.min_upload_rate as usize,
            0,
        )? as u64,
        min_upload_rate_grace: at_least_one_second(
            "STRATA_MIN_UPLOAD_RATE_GRACE_SECS",
            defaults.min_upload_rate_grace,
        )?,
        sse_c_over_http: match std::env::var("STRATA_SSE_C_ALLOW_HTTP").as_deref() {
            Ok("true") => true,
            Ok("false") | Ok("") | Err(_) => false,
            Ok(other) => {
                anyhow::bail!("STRATA_SSE_C_ALLOW_HTTP must be true or false, got {other:?}")
            }
        },
        ..defaults
    })
}

/// A whole number ≥ `least` from the environment, or `default` when unset.
fn whole_number(name: &str, default: usize, least: usize) -> anyhow::Result<usize> {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => match v.parse() {
            Ok(n) if n >= least => Ok(n),
            _ => anyhow::bail!("{name} must be a whole number ≥ {least}, got {v:?}"),
        },
        _ => Ok(default),
    }
}

fn healing_config() -> anyhow::Result<config::HealingConfig> {
    let defaults = config::HealingConfig::default();
    Ok(config::HealingConfig {
        drive_check: seconds_from_env("STRATA_DRIVE_CHECK_SECS", defaults.drive_check.as_secs())?,
        scrub_interval: seconds_from_env(
            "STRATA_SCRUB_INTERVAL_SECS",
            defaults.scrub_interval.as_secs(),
        )?,
        orphan_age: seconds_from_env("STRATA_ORPHAN_MIN_AGE_SECS", defaults.orphan_age.as_secs())?,
        scrub_rate: match std::env::var("STRATA_SCRUB_BYTES_PER_SEC") {
            Ok(v) => v.parse().map_err(|_| {
                anyhow::anyhow!("STRATA_SCRUB_BYTES_PER_SEC must be a whole number, got {v:?}")
            })?,
            Err(_) => defaults.scrub_rate,
        },
        drive_timeout: match seconds_from_env(
            "STRATA_DRIVE_TIMEOUT_SECS",
            defaults.drive_timeout.as_secs(),
        )? {
            timeout if timeout.is_zero() => {
                anyhow::bail!("STRATA_DRIVE_TIMEOUT_SECS must be at least 1")
            }
            timeout => timeout,
        },
    })
}

fn lifecycle_config() -> anyhow::Result<config::LifecycleConfig> {
    let day = seconds_from_env(
        "STRATA_LIFECYCLE_DAY_SECONDS",
        config::LifecycleConfig::default().day.as_secs(),
    )?;
    if day.is_zero() {
        anyhow::bail!("STRATA_LIFECYCLE_DAY_SECONDS must be at least 1");
    }
    let mut lifecycle = config::LifecycleConfig {
        day,
        ..config::LifecycleConfig::default()
    };
    if let Ok(duty) = std::env::var("STRATA_LIFECYCLE_DUTY") {
        lifecycle.duty = Some(
            duty.parse::<f64>()
                .ok()
                .filter(|d| (0.01..=1.0).contains(d))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "STRATA_LIFECYCLE_DUTY must be between 0.01 and 1, got {duty:?}"
                    )
                })?,
        );
    }
    if let Ok(rate) = std::env::var("STRATA_LIFECYCLE_MAX_OBJECTS_PER_SEC") {
        lifecycle.max_objects_per_sec = Some(rate.parse().map_err(|_| {
            anyhow::anyhow!(
                "STRATA_LIFECYCLE_MAX_OBJECTS_PER_SEC must be a whole number, got {rate:?}"
            )
        })?);
    }
    Ok(lifecycle)
}

fn seconds_from_env(name: &str, default: u64) -> anyhow::Result<std::time::Duration> {
    let secs = match std::env::var(name) {
        Ok(v) => v
            .parse()
            .map_err(|_| anyhow::anyhow!("{name} must be a whole number of seconds, got {v:?}"))?,
        Err(_) => default,
    };
    Ok(std::time::Duration::from_secs(secs))
}

fn run(config: ServerConfig) -> std::process::ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime starts");
    match runtime.block_on(strata::server::run(config)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}

fn fail(err: anyhow::Error) -> std::process::ExitCode {
    tracing::error!("{err:#}");
    eprintln!("strata: {err:#}");
    std::process::ExitCode::FAILURE
}

fn init_logging(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STRATA_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}
