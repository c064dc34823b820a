//! The tiers file: which tiers a server has and how to reach them, validated once here so that
//! building a tier never meets a malformed value.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::Deserialize;

use crate::config::expand_drive_args;
use crate::erasure::DEFAULT_BLOCK_SIZE;
use crate::object::BucketName;

/// Storage classes every server has; a tier may not take their names.
const RESERVED_NAMES: [&str; 2] = ["STANDARD", "REDUCED_REDUNDANCY"];

/// Longest tier name: it travels in `x-amz-storage-class` headers and object records.
const MAX_NAME_LEN: usize = 64;

/// Every tier of a tiers file, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierConfigs {
    pub tiers: Vec<TierConfig>,
}

/// One tier: its name (the storage class transition rules name) and where its bytes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierConfig {
    pub name: String,
    pub kind: TierKind,
}

/// Where a tier keeps its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TierKind {
    /// A second pool of local drives with its own erasure layout.
    Pool(PoolConfig),
    /// A bucket on a remote S3-compatible endpoint.
    S3(RemoteConfig),
}

/// A local drive pool: `drives.len()` is a multiple of `data_shards + parity_shards`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Drive folders in set order; formatted on first use, like the server's own drives.
    pub drives: Vec<PathBuf>,
    pub data_shards: usize,
    pub parity_shards: usize,
    /// Erasure block size in bytes.
    pub block_size: usize,
}

/// A remote S3-compatible bucket, addressed path-style.
#[derive(Clone, PartialEq, Eq)]
pub struct RemoteConfig {
    /// `http://host:port` or `https://host:port`, without a path.
    pub endpoint: String,
    pub bucket: String,
    /// Prepended to every object name; lets several servers share one bucket.
    pub prefix: String,
    pub access_key: String,
    pub secret_key: String,
    pub region: String,
    /// Objects larger than this go up as multipart uploads in parts of this size (S3 takes
    /// at most 5 GiB in one PUT).
    pub part_size: u64,
}

/// Default part size of multipart uploads to a remote tier.
pub const DEFAULT_PART_SIZE: u64 = 256 << 20;
/// S3's bounds on a part (all but the last).
const PART_SIZES: std::ops::RangeInclusive<u64> = (5 << 20)..=(5 << 30);

/// The secret key stays out of logs.
impl std::fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteConfig")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("prefix", &self.prefix)
            .field("access_key", &self.access_key)
            .field("secret_key", &"<set>")
            .field("region", &self.region)
            .field("part_size", &self.part_size)
            .finish()
    }
}

/// The file as written: `{"tiers": [...]}`. Tiers are kept as JSON values so that each one's
/// errors can name it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    tiers: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(tag = "type", deny_unknown_fields)]
enum TierDoc {
    #[serde(rename = "pool")]
    Pool {
        name: String,
        drives: Vec<String>,
        data_shards: usize,
        parity_shards: usize,
        block_size: Option<usize>,
    },
    #[serde(rename = "s3")]
    S3 {
        name: String,
        endpoint: String,
        bucket: String,
        #[serde(default)]
        prefix: String,
        access_key: String,
        secret_key: String,
        region: Option<String>,
        part_size: Option<u64>,
    },
}

/// Reads and validates a tiers file (`--tiers FILE`).
pub fn load_tiers(path: &Path) -> anyhow::Result<TierConfigs> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading tiers file {}", path.display()))?;
    parse_tiers(&text).with_context(|| format!("tiers file {}", path.display()))
}

/// Parses and validates the text of a tiers file.
pub fn parse_tiers(text: &str) -> anyhow::Result<TierConfigs> {
    let doc: FileDoc = serde_json::from_str(text).context("not a valid tiers document")?;
    let mut tiers = Vec::with_capacity(doc.tiers.len());
    for (index, value) in doc.tiers.into_iter().enumerate() {
        let label = match value.get("name").and_then(|n| n.as_str()) {
            Some(name) => format!("tiers[{index}] ({name})"),
            None => format!("tiers[{index}]"),
        };
        let tier = serde_json::from_value::<TierDoc>(value)
            .map_err(anyhow::Error::from)
            .and_then(TierConfig::try_from)
            .with_context(|| label)?;
        tiers.push(tier);
    }
    let configs = TierConfigs { tiers };
    configs.check_apart()?;
    Ok(configs)
}

impl TierConfigs {
    /// Refuses a tier pool that shares a drive with the server's own drives: both would
    /// format and open the same metadata database.
    pub fn check_drives_apart(&self, server_drives: &[PathBuf]) -> anyhow::Result<()> {
        let server: BTreeSet<PathBuf> = server_drives.iter().map(|d| same_path(d)).collect();
        for tier in &self.tiers {
            let TierKind::Pool(pool) = &tier.kind else {
                continue;
            };
            if let Some(drive) = pool.drives.iter().find(|d| server.contains(&same_path(d))) {
                bail!(
                    "tier {}: drive {} is also one of the server's drives",
                    tier.name,
                    drive.display()
                );
            }
        }
        Ok(())
    }

    /// Refuses a tier pool in a cluster: its drives are folders of one node, so what a
    /// transition moved there could not be read back through the others.
    pub fn check_fit_for_a_cluster(&self) -> anyhow::Result<()> {
        match self
            .tiers
            .iter()
            .find(|t| matches!(t.kind, TierKind::Pool(_)))
        {
            Some(tier) => bail!(
                "tier {} is a pool of this node's drive folders: in a cluster every node must \
                 read what a transition moved, so use a remote S3 tier",
                tier.name
            ),
            None => Ok(()),
        }
    }

    /// What every node of a cluster must agree on, by tier name: where the tier's bytes go,
    /// with a digest of its secret rather than the secret.
    pub fn fingerprints(&self) -> std::collections::BTreeMap<String, String> {
        use sha2::Digest;
        (self.tiers.iter())
            .map(|tier| {
                let what = match &tier.kind {
                    TierKind::Pool(pool) => format!(
                        "pool {:?} {}+{} {}",
                        pool.drives, pool.data_shards, pool.parity_shards, pool.block_size
                    ),
                    TierKind::S3(remote) => {
                        let secret = sha2::Sha256::digest(remote.secret_key.as_bytes());
                        format!(
                            "s3 {}/{}/{} region {} key {} secret sha256:{} parts {}",
                            remote.endpoint,
                            remote.bucket,
                            remote.prefix,
                            remote.region,
                            remote.access_key,
                            &hex::encode(secret)[..16],
                            remote.part_size
                        )
                    }
                };
                (tier.name.clone(), what)
            })
            .collect()
    }

    /// Names are unique, and no drive belongs to two pools (or twice to one).
    fn check_apart(&self) -> anyhow::Result<()> {
        let mut names = BTreeSet::new();
        let mut drives = BTreeSet::new();
        for tier in &self.tiers {
            if !names.insert(tier.name.as_str()) {
                bail!("tier name {} is used twice", tier.name);
            }
            let TierKind::Pool(pool) = &tier.kind else {
                continue;
            };
            for drive in &pool.drives {
                if !drives.insert(same_path(drive)) {
                    bail!(
                        "tier {}: drive {} is listed twice (drives must be distinct across all tiers)",
                        tier.name,
                        drive.display()
                    );
                }
            }
        }
        Ok(())
    }
}

impl TryFrom<TierDoc> for TierConfig {
    type Error = anyhow::Error;

    fn try_from(doc: TierDoc) -> anyhow::Result<Self> {
        match doc {
            TierDoc::Pool {
                name,
                drives,
                data_shards,
                parity_shards,
                block_size,
            } => {
                check_name(&name)?;
                if drives.is_empty() {
                    bail!("field drives: at least one drive is needed");
                }
                let drives = expand_drive_args(&drives).context("field drives")?;
                if data_shards == 0 || parity_shards == 0 || parity_shards > data_shards {
                    bail!(
                        "fields data_shards/parity_shards: need 1 ≤ parity_shards ≤ data_shards, \
                         got {data_shards}+{parity_shards}"
                    );
                }
                if data_shards + parity_shards > 256 {
                    bail!("fields data_shards/parity_shards: at most 256 drives per set");
                }
                let set_size = data_shards + parity_shards;
                if !drives.len().is_multiple_of(set_size) {
                    bail!(
                        "field drives: {} drives do not make whole erasure sets of {set_size} \
                         (data_shards + parity_shards); give a multiple of {set_size}",
                        drives.len()
                    );
                }
                let block_size = block_size.unwrap_or(DEFAULT_BLOCK_SIZE);
                if !(64 * 1024..=64 << 20).contains(&block_size) {
                    bail!("field block_size: must be between 64 KiB and 64 MiB, got {block_size}");
                }
                Ok(TierConfig {
                    name,
                    kind: TierKind::Pool(PoolConfig {
                        drives,
                        data_shards,
                        parity_shards,
                        block_size,
                    }),
                })
            }
            TierDoc::S3 {
                name,
                endpoint,
                bucket,
                prefix,
                access_key,
                secret_key,
                region,
                part_size,
            } => {
                check_name(&name)?;
                let endpoint = check_endpoint(&endpoint)?;
                BucketName::parse(&bucket).map_err(|_| {
                    anyhow::anyhow!("field bucket: {bucket:?} is not a valid bucket name")
                })?;
                if prefix.starts_with('/') || prefix.contains('\0') {
                    bail!("field prefix: must not start with '/' or contain NUL, got {prefix:?}");
                }
                if access_key.is_empty() {
                    bail!("field access_key: must not be empty");
                }
                if secret_key.is_empty() {
                    bail!("field secret_key: must not be empty");
                }
                let region = region.unwrap_or_else(|| "us-east-1".to_string());
                if region.is_empty() {
                    bail!("field region: must not be empty");
                }
                let part_size = part_size.unwrap_or(DEFAULT_PART_SIZE);
                if !PART_SIZES.contains(&part_size) {
                    bail!("field part_size: must be between 5 MiB and 5 GiB, got {part_size}");
                }
                Ok(TierConfig {
                    name,
                    kind: TierKind::S3(RemoteConfig {
                        endpoint,
                        bucket,
                        prefix,
                        access_key,
                        secret_key,
                        region,
                        part_size,
                    }),
                })
            }
        }
    }
}

/// Tier names are storage classes: upper-case letters, digits, `_` and `-`.
fn check_name(name: &str) -> anyhow::Result<()> {
    let well_formed = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !well_formed {
        bail!(
            "field name: {name:?} must be 1 to {MAX_NAME_LEN} upper-case letters, digits, '_' or '-'"
        );
    }
    if RESERVED_NAMES.contains(&name) {
        bail!("field name: {name} is a built-in storage class, not a tier");
    }
    Ok(())
}

/// An endpoint is a scheme and an authority; the bucket goes in the path.
fn check_endpoint(endpoint: &str) -> anyhow::Result<String> {
    let url = reqwest::Url::parse(endpoint)
        .with_context(|| format!("field endpoint: {endpoint:?} is not a URL"))?;
    if !matches!(url.scheme(), "http" | "https") {
        bail!("field endpoint: {endpoint:?} must start with http:// or https://");
    }
    if url.host_str().is_none_or(str::is_empty) {
        bail!("field endpoint: {endpoint:?} has no host");
    }
    if url.path() != "/" || url.query().is_some() || !url.username().is_empty() {
        bail!(
            "field endpoint: {endpoint:?} must be only scheme, host and port (the bucket is a \
             separate field)"
        );
    }
    Ok(endpoint.trim_end_matches('/').to_string())
}

/// A path as compared for overlaps: resolved when it exists, as written otherwise.
fn same_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{"tiers": [
        {"name": "COLD", "type": "pool", "drives": ["/t/c{1...6}"],
         "data_shards": 4, "parity_shards": 2},
        {"name": "ARCHIVE", "type": "s3", "endpoint": "http://127.0.0.1:9100/",
         "bucket": "archive", "prefix": "strata/", "access_key": "ak", "secret_key": "sk-secret"}
    ]}"#;

    fn error_of(text: &str) -> String {
        format!("{:#}", parse_tiers(text).unwrap_err())
    }

    fn pool(name: &str, extra: &str) -> String {
        format!(
            r#"{{"tiers": [{{"name": "{name}", "type": "pool", "drives": ["/a", "/b", "/c"],
                "data_shards": 2, "parity_shards": 1{extra}}}]}}"#
        )
    }

    #[test]
    fn the_sample_parses_with_defaults() {
        let configs = parse_tiers(SAMPLE).unwrap();
        assert_eq!(configs.tiers.len(), 2);
        let TierKind::Pool(cold) = &configs.tiers[0].kind else {
            panic!("COLD is a pool")
        };
        assert_eq!(configs.tiers[0].name, "COLD");
        assert_eq!(cold.drives.len(), 6);
        assert_eq!(cold.drives[5], PathBuf::from("/t/c6"));
        assert_eq!((cold.data_shards, cold.parity_shards), (4, 2));
        assert_eq!(cold.block_size, DEFAULT_BLOCK_SIZE);
        let TierKind::S3(archive) = &configs.tiers[1].kind else {
            panic!("ARCHIVE is s3")
        };
        assert_eq!(archive.endpoint, "http://127.0.0.1:9100");
        assert_eq!(archive.region, "us-east-1");
        assert_eq!(archive.prefix, "strata/");
        assert!(!format!("{configs:?}").contains("sk-secret"));
    }

    #[test]
    fn names_are_checked() {
        for bad in ["cold", "", "CO LD", "COLD!", &"A".repeat(65)] {
            let err = error_of(&pool(bad, ""));
            assert!(err.contains("field name"), "{bad:?}: {err}");
        }
        for reserved in ["STANDARD", "REDUCED_REDUNDANCY"] {
            let err = error_of(&pool(reserved, ""));
            assert!(err.contains("built-in storage class"), "{err}");
        }
        for good in ["GLACIER", "COLD_2", "WARM-1"] {
            assert!(parse_tiers(&pool(good, "")).is_ok(), "{good}");
        }
    }

    #[test]
    fn duplicates_are_refused() {
        let twice = r#"{"tiers": [
            {"name": "COLD", "type": "pool", "drives": ["/a", "/b", "/c"], "data_shards": 2, "parity_shards": 1},
            {"name": "COLD", "type": "pool", "drives": ["/d", "/e", "/f"], "data_shards": 2, "parity_shards": 1}
        ]}"#;
        assert!(error_of(twice).contains("used twice"));
        let shared = r#"{"tiers": [
            {"name": "A", "type": "pool", "drives": ["/a", "/b", "/c"], "data_shards": 2, "parity_shards": 1},
            {"name": "B", "type": "pool", "drives": ["/d", "/e", "/c"], "data_shards": 2, "parity_shards": 1}
        ]}"#;
        let err = error_of(shared);
        assert!(err.contains("tier B") && err.contains("/c"), "{err}");
    }

    #[test]
    fn errors_name_the_tier_and_the_field() {
        let err = error_of(&pool("COLD", r#", "colour": "blue""#));
        assert!(
            err.contains("tiers[0] (COLD)") && err.contains("colour"),
            "{err}"
        );
        let err = error_of(r#"{"tiers": [{"name": "X", "type": "tape"}]}"#);
        assert!(
            err.contains("tiers[0] (X)") && err.contains("tape"),
            "{err}"
        );
        let err = error_of(r#"{"tiers": [{"name": "X", "drives": []}]}"#);
        assert!(err.contains("type"), "{err}");
        let err = error_of(r#"{"tiers": [{"name": "X", "type": "s3", "endpoint": "http://h"}]}"#);
        assert!(err.contains("missing field `bucket`"), "{err}");
        assert!(error_of(r#"{"tier": []}"#).contains("tiers"));
        assert!(error_of("not json").contains("not a valid tiers document"));
    }

    #[test]
    fn pool_layouts_are_checked() {
        let layout = |drives: &str, data: usize, parity: usize| {
            format!(
                r#"{{"tiers": [{{"name": "C", "type": "pool", "drives": {drives},
                    "data_shards": {data}, "parity_shards": {parity}}}]}}"#
            )
        };
        assert!(error_of(&layout(r#"["/a","/b"]"#, 2, 1)).contains("multiple of 3"));
        assert!(error_of(&layout(r#"["/a","/b","/c"]"#, 1, 2)).contains("parity_shards"));
        assert!(error_of(&layout(r#"["/a","/b"]"#, 2, 0)).contains("parity_shards"));
        assert!(error_of(&layout("[]", 2, 1)).contains("field drives"));
        assert!(error_of(&layout(r#"["/a","/a","/c"]"#, 2, 1)).contains("listed twice"));
        assert!(error_of(&pool("C", r#", "block_size": 1024"#)).contains("field block_size"));
        assert!(parse_tiers(&pool("C", r#", "block_size": 65536"#)).is_ok());
    }

    #[test]
    fn remote_fields_are_checked() {
        let s3 = |endpoint: &str, bucket: &str, prefix: &str, secret: &str| {
            format!(
                r#"{{"tiers": [{{"name": "R", "type": "s3", "endpoint": "{endpoint}",
                    "bucket": "{bucket}", "prefix": "{prefix}", "access_key": "a",
                    "secret_key": "{secret}", "region": "eu-west-1"}}]}}"#
            )
        };
        assert!(parse_tiers(&s3("https://s3.example.com", "b-1", "", "s")).is_ok());
        for endpoint in ["ftp://h", "h:9000", "http://h/bucket", "http://h/?x=1"] {
            let err = error_of(&s3(endpoint, "bkt", "", "s"));
            assert!(err.contains("field endpoint"), "{endpoint}: {err}");
        }
        assert!(error_of(&s3("http://h", "Bad_Bucket", "", "s")).contains("field bucket"));
        assert!(error_of(&s3("http://h", "bkt", "/p", "s")).contains("field prefix"));
        assert!(error_of(&s3("http://h", "bkt", "", "")).contains("field secret_key"));
    }

    #[test]
    fn pools_may_not_share_the_servers_drives() {
        let configs = parse_tiers(&pool("C", "")).unwrap();
        assert!(configs
            .check_drives_apart(&[PathBuf::from("/x"), PathBuf::from("/y")])
            .is_ok());
        let err = configs
            .check_drives_apart(&[PathBuf::from("/b")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("tier C") && err.contains("/b"), "{err}");
    }
}
