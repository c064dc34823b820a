//! Server configuration: command-line drive lists, erasure geometry, credentials.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};

/// Credentials used when none are configured. They are public, so the server then listens
/// only on loopback.
pub const DEFAULT_ROOT_USER: &str = "strataadmin";
pub const DEFAULT_ROOT_PASSWORD: &str = "strataadmin";

/// The region a server answers for unless told otherwise: S3's first, whose endpoint also
/// takes buckets created for other regions.
pub const DEFAULT_REGION: &str = "us-east-1";

/// Checks a region name as S3 spells them (`us-east-1`, `eu-central-1`, `us-gov-west-1`).
pub fn parse_region(region: &str) -> anyhow::Result<String> {
    if !is_region_name(region) {
        bail!(
            "--region {region:?}: a region is lowercase letters, digits and dashes, like us-east-1"
        );
    }
    Ok(region.to_string())
}

/// Whether `name` has the shape of an S3 region name.
pub fn is_region_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// One server pool as given: how many drives it has, and its erasure geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSpec {
    pub drives: usize,
    pub data_shards: usize,
    pub parity_shards: usize,
}

impl PoolSpec {
    pub fn set_size(&self) -> usize {
        self.data_shards + self.parity_shards
    }
}

/// Everything `strata server` needs to start.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub address: SocketAddr,
    /// Every drive, pool after pool.
    pub drives: Vec<PathBuf>,
    /// Each server pool's share of `drives`, in order (empty: one pool of them all, at
    /// `data_shards` + `parity_shards`).
    pub pools: Vec<PoolSpec>,
    pub data_shards: usize,
    pub parity_shards: usize,
    pub block_size: usize,
    pub root_user: String,
    pub root_password: String,
    /// True when the root credentials are the built-in defaults.
    pub default_credentials: bool,
    pub region: String,
    /// The Object Ownership of a bucket created without `x-amz-object-ownership`, by S3's
    /// name, checked at start (`None`: S3's default, `BucketOwnerEnforced`: ACLs off).
    pub default_object_ownership: Option<String>,
    /// Host name for virtual-hosted-style requests: `bucket.DOMAIN`.
    pub domain: Option<String>,
    /// Multipart uploads older than this are aborted by the stale-upload cleaner.
    pub stale_upload_expiry: std::time::Duration,
    /// How often the stale-upload cleaner looks.
    pub stale_upload_scan: std::time::Duration,
    pub healing: HealingConfig,
    /// TLS and connection-level limits of the HTTP server.
    pub listener: ListenerConfig,
    /// The Prometheus endpoint and the bucket usage scanner.
    pub metrics: MetricsConfig,
    /// Request-level limits.
    pub limits: LimitsConfig,
    pub lifecycle: LifecycleConfig,
    /// The share of time a pool's decommission works (`STRATA_DECOMMISSION_DUTY`, in
    /// `[0.01, 1]`).
    pub decommission_duty: f64,
    /// Distributed mode: this node's place among several (`None`: one node, local drives).
    pub cluster: Option<ClusterConfig>,
    /// Where the web console listens.
    pub console: ConsoleAddress,
}

/// Where the web console listens (`--console-address`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsoleAddress {
    /// Not served (`none`).
    Off,
    /// The default, [`DEFAULT_CONSOLE_ADDRESS`]: served if the port is free, else the server
    /// goes on without it (a second server on one machine, say).
    Default(SocketAddr),
    /// Named by the operator: the server does not start without it.
    Given(SocketAddr),
}

pub const DEFAULT_CONSOLE_ADDRESS: &str = "127.0.0.1:9001";

impl ConsoleAddress {
    /// `--console-address`: an address, or `none`; not given, the default.
    pub fn parse(given: Option<&str>) -> anyhow::Result<Self> {
        Ok(match given.map(str::trim) {
            None => ConsoleAddress::Default(DEFAULT_CONSOLE_ADDRESS.parse()?),
            Some(none) if none.eq_ignore_ascii_case("none") => ConsoleAddress::Off,
            Some(address) => ConsoleAddress::Given(address.parse().map_err(|_| {
                anyhow::anyhow!("--console-address: expected HOST:PORT or none, got {address:?}")
            })?),
        })
    }

    pub fn is_default(self) -> bool {
        matches!(self, ConsoleAddress::Default(_))
    }

    pub fn address(self) -> Option<SocketAddr> {
        match self {
            ConsoleAddress::Off => None,
            ConsoleAddress::Default(address) | ConsoleAddress::Given(address) => Some(address),
        }
    }
}

impl ServerConfig {
    /// One node on local `drives`, everything else at its default: the deployment a pool
    /// tier opens, and the tests'. It listens on a port of the system's choosing and takes
    /// no S3 requests (no credentials).
    pub fn on_drives(drives: Vec<PathBuf>, data_shards: usize, parity_shards: usize) -> Self {
        ServerConfig {
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            drives,
            pools: Vec::new(),
            data_shards,
            parity_shards,
            block_size: crate::erasure::DEFAULT_BLOCK_SIZE,
            root_user: String::new(),
            root_password: String::new(),
            default_credentials: false,
            region: DEFAULT_REGION.into(),
            default_object_ownership: None,
            domain: None,
            stale_upload_expiry: Duration::from_secs(DEFAULT_STALE_UPLOAD_EXPIRY_SECS),
            stale_upload_scan: Duration::from_secs(DEFAULT_STALE_UPLOAD_SCAN_SECS),
            healing: HealingConfig::default(),
            listener: ListenerConfig::default(),
            metrics: MetricsConfig::default(),
            limits: LimitsConfig::default(),
            lifecycle: LifecycleConfig::default(),
            decommission_duty: DEFAULT_DECOMMISSION_DUTY,
            cluster: None,
            console: ConsoleAddress::Off,
        }
    }
}

/// Where a node of a cluster stands: the layout every node was started with, which node this
/// is, and how nodes reach and trust each other's drives.
#[derive(Clone)]
pub struct ClusterConfig {
    pub layout: crate::cluster::layout::ClusterLayout,
    /// The deployment's id: the first pool's (see [`ClusterLayout::deployment_id`]) until
    /// the start finds it recorded, in etcd or on this node's drives.
    ///
    /// [`ClusterLayout::deployment_id`]: crate::cluster::layout::ClusterLayout::deployment_id
    pub deployment_id: String,
    /// This node, as the layout names it (`host:port`).
    pub this_node: String,
    /// Authenticates node-to-node drive calls (`STRATA_CLUSTER_SECRET`).
    pub secret: zeroize::Zeroizing<Vec<u8>>,
    /// The etcd members holding the control plane (`--etcd`) and how to prove this node to
    /// them; no endpoints: nodes go without one.
    pub etcd: crate::cluster::etcd::EtcdAccess,
    /// The interface the drive service listens on (`--drive-address`); `None`: the S3
    /// address's.
    pub drive_ip: Option<std::net::IpAddr>,
}

impl ClusterConfig {
    /// What signs this node's drive calls to the others and checks theirs to it: the
    /// cluster secret, bound to the layout's deployment.
    pub fn auth(&self) -> anyhow::Result<crate::storage::remote::ClusterAuth> {
        let auth = crate::storage::remote::ClusterAuth::new(&self.secret, &self.deployment_id)?;
        Ok(auth)
    }
}

impl std::fmt::Debug for ClusterConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterConfig")
            .field("layout", &self.layout)
            .field("deployment_id", &self.deployment_id)
            .field("this_node", &self.this_node)
            .field("etcd", &self.etcd)
            .field("drive_ip", &self.drive_ip)
            .finish_non_exhaustive()
    }
}

/// Each node serves its drives to the others on its S3 port plus this: an internal port, never
/// behind the clients' load balancer.
pub const DRIVE_PORT_OFFSET: u16 = 100;

/// Where the node named `host:port` in a layout serves its drives: `host:port+100`.
pub fn drive_service_address(node: &str) -> anyhow::Result<String> {
    let (host, port) = node
        .rsplit_once(':')
        .with_context(|| format!("node {node} names no port"))?;
    let port: u16 = port
        .parse()
        .with_context(|| format!("node {node}: bad port"))?;
    let port = port
        .checked_add(DRIVE_PORT_OFFSET)
        .with_context(|| format!("node {node}: port too high for a drive service port"))?;
    Ok(format!("{host}:{port}"))
}

/// How the lifecycle engine counts time.
#[derive(Debug, Clone)]
pub struct LifecycleConfig {
    /// How long a lifecycle "day" lasts: a real day, or `STRATA_LIFECYCLE_DAY_SECONDS` for tests
    /// and demos (the scanner's cycle shortens to match).
    pub day: Duration,
    /// The tiers transitions move data to (`--tiers FILE`, see `crate::tier`).
    pub tiers_file: Option<PathBuf>,
    /// The share of time the scanner may work (`STRATA_LIFECYCLE_DUTY`, in `[0.01, 1]`);
    /// `None`: the lifecycle's default (`crate::lifecycle::Pace`).
    pub duty: Option<f64>,
    /// Objects the scanner evaluates per second at most
    /// (`STRATA_LIFECYCLE_MAX_OBJECTS_PER_SEC`); `None`: no bound.
    pub max_objects_per_sec: Option<u64>,
}

impl Default for LifecycleConfig {
    fn default() -> Self {
        Self {
            day: Duration::from_secs(24 * 3600),
            tiers_file: None,
            duty: None,
            max_objects_per_sec: None,
        }
    }
}

/// Default for `STRATA_DECOMMISSION_DUTY`: half the time, since the operator asked for the
/// drain, while clients still come first.
pub const DEFAULT_DECOMMISSION_DUTY: f64 = 0.5;

/// Default for `STRATA_MAX_REQUESTS`: S3 requests served at once before `SlowDown`.
pub const DEFAULT_MAX_REQUESTS: usize = 1024;

/// Request-level limits (connection-level ones live with the HTTP server).
#[derive(Debug, Clone)]
pub struct LimitsConfig {
    /// S3 requests in flight at most; one more is answered `503 SlowDown` at once.
    pub max_requests: usize,
    /// The longest Object Lock retention a request may set, in days (`None`: S3's own
    /// limits only).
    pub max_retention_days: Option<u32>,
    /// Bytes that uploads in flight may hold in buffers, together.
    pub memory_budget: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_requests: DEFAULT_MAX_REQUESTS,
            max_retention_days: None,
            memory_budget: DEFAULT_MEMORY_BUDGET_MIB << 20,
        }
    }
}

/// Suits a machine of 4–8 GiB: about 370 large uploads buffering at once with 6+3 and 1 MiB
/// blocks (5.5 MiB each), the rest waiting.
pub const DEFAULT_MEMORY_BUDGET_MIB: usize = 2048;

/// When and how fast the server checks drives and heals.
#[derive(Debug, Clone)]
pub struct HealingConfig {
    /// Pause between two looks at the drives (returned or replaced drives are taken back).
    pub drive_check: Duration,
    /// Pause between two scrubs (every shard read and verified).
    pub scrub_interval: Duration,
    /// Object bytes a scrub verifies per second at most.
    pub scrub_rate: u64,
    /// Data folders no record refers to are removed once unchanged this long (younger ones
    /// may belong to writes in flight).
    pub orphan_age: Duration,
    /// How long one drive call may take before the drive is marked offline (stalled).
    pub drive_timeout: Duration,
}

impl Default for HealingConfig {
    fn default() -> Self {
        Self {
            drive_check: Duration::from_secs(10),
            scrub_interval: Duration::from_secs(24 * 3600),
            scrub_rate: 64 << 20,
            orphan_age: Duration::from_secs(600),
            drive_timeout: Duration::from_secs(30),
        }
    }
}

/// Who may scrape `GET /metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricsAuth {
    /// Anyone who can reach the server.
    Public,
    /// Only requests with `Authorization: Bearer <STRATA_METRICS_TOKEN>`.
    #[default]
    Bearer,
}

/// The Prometheus endpoint and the bucket usage it reports.
#[derive(Clone)]
pub struct MetricsConfig {
    pub auth: MetricsAuth,
    /// The bearer token scrapers must send; without one, `bearer` scrapes are refused.
    pub token: Option<String>,
    /// Pause between two counts of every bucket's objects and bytes.
    pub usage_scan: Duration,
}

/// Default pause between two bucket usage scans: five minutes.
pub const DEFAULT_USAGE_SCAN_SECS: u64 = 300;

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            auth: MetricsAuth::Bearer,
            token: None,
            usage_scan: Duration::from_secs(DEFAULT_USAGE_SCAN_SECS),
        }
    }
}

/// The token stays out of logs.
impl std::fmt::Debug for MetricsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsConfig")
            .field("auth", &self.auth)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("usage_scan", &self.usage_scan)
            .finish()
    }
}

/// Parses `STRATA_METRICS_AUTH`: `public` or `bearer`.
pub fn parse_metrics_auth(value: &str) -> anyhow::Result<MetricsAuth> {
    match value.trim().to_ascii_lowercase().as_str() {
        "public" => Ok(MetricsAuth::Public),
        "bearer" => Ok(MetricsAuth::Bearer),
        _ => bail!("STRATA_METRICS_AUTH must be public or bearer, got {value:?}"),
    }
}

/// How the server listens: TLS certificates and connection-level limits.
#[derive(Debug, Clone)]
pub struct ListenerConfig {
    /// Folder with `public.crt` and `private.key` (MinIO's layout): serve HTTPS only.
    pub certs_dir: Option<PathBuf>,
    /// How often the certificate files are checked for changes.
    pub cert_check_interval: Duration,
    /// A request head (request line and headers), and a TLS handshake, must arrive within this.
    pub header_read_timeout: Duration,
    /// A connection on which nothing moves this long while the server waits for the client
    /// (idle between requests, a stalled upload, a download the client stopped reading) is
    /// closed.
    pub idle_timeout: Duration,
    /// Largest request head in bytes; a larger one is answered 431.
    pub max_header_bytes: usize,
    /// Most header fields in one request; more are answered 431.
    pub max_headers: usize,
    /// After SIGTERM/SIGINT, requests in flight get this long to finish.
    pub shutdown_grace: Duration,
    /// Open connections at most; more are closed as they arrive.
    pub max_connections: usize,
    /// Open connections from one client address at most (a proxy in front counts as one
    /// client: raise it there).
    pub max_connections_per_client: usize,
    /// A request body must arrive at this many bytes per second at least, on average from
    /// its first byte once `min_upload_rate_grace` has passed; a slower one is cut off (0:
    /// no minimum).
    pub min_upload_rate: u64,
    /// How long a request body may arrive slower than `min_upload_rate` at first.
    pub min_upload_rate_grace: Duration,
    /// Take SSE-C keys over plain HTTP too (`STRATA_SSE_C_ALLOW_HTTP=true`): S3 refuses
    /// them there, since the key crosses the network in the clear.
    pub sse_c_over_http: bool,
}

impl Default for ListenerConfig {
    fn default() -> Self {
        Self {
            certs_dir: None,
            cert_check_interval: Duration::from_secs(1),
            header_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            max_header_bytes: 64 * 1024,
            max_headers: 128,
            shutdown_grace: Duration::from_secs(30),
            max_connections: 8192,
            max_connections_per_client: 1024,
            min_upload_rate: 1024,
            min_upload_rate_grace: Duration::from_secs(30),
            sse_c_over_http: false,
        }
    }
}

/// Default lifetime of an abandoned multipart upload: 7 days.
pub const DEFAULT_STALE_UPLOAD_EXPIRY_SECS: u64 = 7 * 24 * 3600;
/// Default pause between two stale-upload scans: one hour.
pub const DEFAULT_STALE_UPLOAD_SCAN_SECS: u64 = 3600;

/// Expands MinIO-style ranges: `/data/d{1...9}` → `/data/d1` … `/data/d9`. Several ranges in
/// one argument expand as a cross product.
pub fn expand_drive_args(args: &[String]) -> anyhow::Result<Vec<PathBuf>> {
    let mut drives = Vec::new();
    for arg in args {
        for expanded in crate::cluster::layout::expand_ellipses(arg)? {
            drives.push(PathBuf::from(expanded));
        }
    }
    Ok(drives)
}

/// Parses `--ec D+P`.
pub fn parse_erasure(spec: &str) -> anyhow::Result<(usize, usize)> {
    let (d, p) = spec
        .split_once('+')
        .with_context(|| format!("--ec must look like 6+3, got {spec:?}"))?;
    let data: usize = d
        .trim()
        .parse()
        .with_context(|| format!("bad data count in --ec {spec:?}"))?;
    let parity: usize = p
        .trim()
        .parse()
        .with_context(|| format!("bad parity count in --ec {spec:?}"))?;
    if data == 0 || parity == 0 || parity > data || data + parity > 256 {
        bail!("--ec {spec}: need 1 ≤ parity ≤ data and at most 256 drives per set");
    }
    Ok((data, parity))
}

/// Checks that the drive count forms whole erasure sets.
pub fn check_drive_count(drives: usize, data: usize, parity: usize) -> anyhow::Result<usize> {
    let set_size = data + parity;
    if drives == 0 || !drives.is_multiple_of(set_size) {
        bail!(
            "{drives} drives given, but with --ec {data}+{parity} the drive count must be a \
             multiple of {set_size} (each erasure set has {set_size} drives)"
        );
    }
    Ok(drives / set_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_expand_like_minio() {
        let got = expand_drive_args(&["/d/x{1...3}".into(), "/e".into()]).unwrap();
        let got: Vec<_> = got.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(got, ["/d/x1", "/d/x2", "/d/x3", "/e"]);
        let got = expand_drive_args(&["/n{1...2}/d{01...02}".into()]).unwrap();
        let got: Vec<_> = got.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(got, ["/n1/d01", "/n1/d02", "/n2/d01", "/n2/d02"]);
        assert!(expand_drive_args(&["/d{3...1}".into()]).is_err());
        assert!(expand_drive_args(&["/d{1..3}".into()]).is_err());
    }

    #[test]
    fn erasure_specs_and_counts_are_checked() {
        assert_eq!(parse_erasure("6+3").unwrap(), (6, 3));
        assert!(parse_erasure("6").is_err());
        assert!(parse_erasure("2+3").is_err());
        assert!(parse_erasure("0+1").is_err());
        assert_eq!(check_drive_count(18, 6, 3).unwrap(), 2);
        let err = check_drive_count(8, 6, 3).unwrap_err().to_string();
        assert!(
            err.contains("8 drives") && err.contains("multiple of 9"),
            "{err}"
        );
    }

    #[test]
    fn metrics_auth_is_public_or_bearer_and_the_token_is_not_logged() {
        assert_eq!(parse_metrics_auth("public").unwrap(), MetricsAuth::Public);
        assert_eq!(parse_metrics_auth(" Bearer ").unwrap(), MetricsAuth::Bearer);
        assert!(parse_metrics_auth("basic").is_err());
        let config = MetricsConfig {
            token: Some("s3cr3t-token".into()),
            ..MetricsConfig::default()
        };
        assert_eq!(config.auth, MetricsAuth::Bearer);
        assert!(!format!("{config:?}").contains("s3cr3t-token"));
    }
}
