//! The cluster layout: from the drive arguments every node is started with to the erasure sets,
//! each drive named by the node that serves it.
//!
//! All nodes run the same command line, so each computes the same layout on its own and checks
//! with its peers, by [`ClusterLayout::fingerprint`], that it did. Drive arguments use MinIO's
//! ellipsis form (`http://node{1...4}:9000/mnt/disk{1...9}`). The drives are dealt to sets
//! round robin over the nodes, so that each set spreads over as many nodes as it can, and a layout
//! in which one lost node takes a set below its write quorum is refused unless asked for.
//!
//! Pure logic: nothing here touches the network, the drives or the clock.

use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::erasure::quorum::write_quorum;

/// Most strings one argument may expand to: a guard against a typo such as `{1...1000000}`
/// filling memory before anything else can complain.
pub const MAX_EXPANSION: usize = 1 << 16;

/// One drive of a distributed deployment.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodeDrive {
    /// The node serving the drive, as `host:port`: host names lower-cased, IP addresses in
    /// their canonical form, IPv6 in brackets (`[::1]:9001`), as `SocketAddr` prints them.
    pub node: String,
    /// Absolute path of the drive folder on that node, without `.`/`..` components, repeated
    /// or trailing slashes.
    pub path: String,
}

/// Which drives form which erasure set, for every node of the deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterLayout {
    /// Every node, in the order it first appears in the drive arguments.
    pub nodes: Vec<String>,
    /// The erasure sets, each of `data + parity` drives; drive `j` of a set holds shard `j`.
    pub sets: Vec<Vec<NodeDrive>>,
    /// Data shards per set.
    pub data: usize,
    /// Parity shards per set.
    pub parity: usize,
    /// How many of `sets` each server pool has, in order; empty: one pool of them all (every
    /// layout recorded before pools existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pool_sets: Vec<usize>,
    /// Each server pool's data and parity shards, in order, beside `pool_sets` (empty: every
    /// pool at `data` + `parity`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pool_geometry: Vec<(usize, usize)>,
}

/// Why drive arguments do not make a layout. The message names the argument, drive, node or
/// set at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LayoutError {
    /// No drive at all.
    #[error("no drives given")]
    NoDrives,
    /// An ellipsis is not `{N...M}` with decimal `N ≤ M`, or expands to too much.
    #[error("malformed ellipsis in {arg:?}: {reason}")]
    Ellipsis { arg: String, reason: String },
    /// Some arguments are drive URLs, others plain folders.
    #[error(
        "{url:?} is a drive URL but {folder:?} is a plain folder: in distributed mode give every \
         drive as http(s)://host:port/path"
    )]
    MixedForms { url: String, folder: String },
    /// No argument is a drive URL: plain folders are the single-node form.
    #[error(
        "{first:?} is a plain folder, not an http(s)://host:port/path drive URL: \
         plain folders are the single-node form"
    )]
    NotDistributed { first: String },
    /// Some drives are reached over http, others over https.
    #[error(
        "{drive:?} uses {scheme}:// but {first_drive:?} uses {first_scheme}://: \
         all nodes must be reached the same way"
    )]
    MixedSchemes {
        first_scheme: String,
        first_drive: String,
        scheme: String,
        drive: String,
    },
    /// A drive URL without a port. There is no default: the port names the node, and the
    /// layout must not depend on the port each node happens to listen on.
    #[error(
        "{drive:?} has no port: write the node as host:port, e.g. http://node1:9000/mnt/disk1"
    )]
    MissingPort { drive: String },
    /// A drive URL whose scheme, host or port is not acceptable.
    #[error("{drive:?}: {reason}")]
    BadUrl { drive: String, reason: String },
    /// A drive URL whose path is missing, the root, relative (`.` or `..` components) or
    /// carries a query or fragment.
    #[error("{drive:?}: {reason}")]
    BadPath { drive: String, reason: String },
    /// The same folder of the same node is given twice.
    #[error("drive {path} of node {node} is given twice")]
    DuplicateDrive { node: String, path: String },
    /// An erasure geometry no set can have.
    #[error("--ec {data}+{parity}: need 1 ≤ parity ≤ data")]
    Geometry { data: usize, parity: usize },
    /// Nodes contribute different numbers of drives.
    #[error(
        "node {node} has {count} drives but node {first_node} has {first_count}: \
         every node must contribute the same number of drives"
    )]
    UnevenNodes {
        first_node: String,
        first_count: usize,
        node: String,
        count: usize,
    },
    /// The drives do not form whole erasure sets.
    #[error(
        "{drives} drives given, but with --ec {data}+{parity} the drive count must be a multiple \
         of {set_size} (each erasure set has {set_size} drives)"
    )]
    NotWholeSets {
        drives: usize,
        data: usize,
        parity: usize,
        set_size: usize,
    },
    /// One node holds so many drives of a set that losing the node stops the set's writes.
    #[error(
        "set {set} of {sets} would have {count} of its {set_size} drives on node {node}: losing \
         that node would leave {left}, fewer than the {quorum} a write needs; add nodes or \
         parity, or accept the risk with --allow-node-loss-risk"
    )]
    NodeLossRisk {
        /// 1-based, as operators count sets.
        set: usize,
        sets: usize,
        node: String,
        count: usize,
        set_size: usize,
        left: usize,
        quorum: usize,
    },
    /// The listen address is none of the layout's nodes.
    #[error(
        "--address {address} is not one of the nodes ({}), neither as host:port nor as the only \
         node on its port: start each node with its own host:port as written in the drive URLs",
        .nodes.join(", ")
    )]
    NotANode { address: String, nodes: Vec<String> },
}

/// True when any argument is an `http://` or `https://` drive URL, i.e. the server runs in
/// distributed mode.
pub fn is_distributed(args: &[String]) -> bool {
    args.iter().any(|arg| url_scheme(arg).is_some())
}

/// Expands distributed-mode drive arguments (`http://node{1...4}:9000/mnt/disk{1...9}`) into one
/// [`NodeDrive`] per drive, in argument order and, within an argument, leftmost ellipsis
/// outermost (so host ranges vary slowest).
///
/// Every argument must be an `http://` or `https://` URL with an explicit port and an absolute
/// path, all with the same scheme, and no drive may appear twice.
pub fn expand_endpoints(args: &[String]) -> Result<Vec<NodeDrive>, LayoutError> {
    if args.is_empty() {
        return Err(LayoutError::NoDrives);
    }
    if let Some(other) = args
        .iter()
        .find(|arg| url_scheme(arg).is_none() && arg.contains("://"))
    {
        return Err(LayoutError::BadUrl {
            drive: other.clone(),
            reason: "only http:// and https:// drive URLs are supported".into(),
        });
    }
    let url = args.iter().find(|arg| url_scheme(arg).is_some());
    let folder = args.iter().find(|arg| url_scheme(arg).is_none());
    match (url, folder) {
        (Some(url), Some(folder)) => {
            return Err(LayoutError::MixedForms {
                url: url.clone(),
                folder: folder.clone(),
            })
        }
        (None, Some(folder)) => {
            return Err(LayoutError::NotDistributed {
                first: folder.clone(),
            })
        }
        _ => {}
    }

    let mut first: Option<(&'static str, String)> = None;
    let mut drives = Vec::new();
    for arg in args {
        for url in expand_ellipses(arg)? {
            let (scheme, drive) = parse_drive_url(&url)?;
            match &first {
                None => first = Some((scheme, url)),
                Some((first_scheme, first_drive)) if *first_scheme != scheme => {
                    return Err(LayoutError::MixedSchemes {
                        first_scheme: first_scheme.to_string(),
                        first_drive: first_drive.clone(),
                        scheme: scheme.into(),
                        drive: url,
                    })
                }
                Some(_) => {}
            }
            drives.push(drive);
        }
    }
    check_unique(&drives)?;
    Ok(drives)
}

/// Expands MinIO's ellipses in one argument: `{N...M}` stands for the decimal numbers N to M.
/// When a bound is written with leading zeros (`{01...16}`) every number is padded to the
/// longer bound's width. Several ellipses expand to their cartesian product, leftmost
/// outermost. An argument without braces expands to itself.
pub fn expand_ellipses(arg: &str) -> Result<Vec<String>, LayoutError> {
    let malformed = |reason: String| LayoutError::Ellipsis {
        arg: arg.to_string(),
        reason,
    };
    let pieces = split_pieces(arg).map_err(malformed)?;
    let count = pieces.iter().try_fold(1usize, |count, piece| match piece {
        Piece::Text(_) => Some(count),
        Piece::Range { from, to, .. } => (to - from)
            .checked_add(1)
            .and_then(|len| usize::try_from(len).ok())
            .and_then(|len| count.checked_mul(len)),
    });
    if count.is_none_or(|count| count > MAX_EXPANSION) {
        return Err(malformed(format!(
            "expands to more than {MAX_EXPANSION} drives"
        )));
    }
    let mut out = vec![String::new()];
    for piece in &pieces {
        out = match piece {
            Piece::Text(text) => out.into_iter().map(|head| head + *text).collect(),
            Piece::Range { from, to, width } => out
                .iter()
                .flat_map(|head| (*from..=*to).map(move |n| format!("{head}{n:0width$}")))
                .collect(),
        };
    }
    Ok(out)
}

/// A run of literal text or one `{N...M}` range of an argument.
enum Piece<'a> {
    Text(&'a str),
    Range { from: u64, to: u64, width: usize },
}

fn split_pieces(arg: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut pieces = Vec::new();
    let mut rest = arg;
    while let Some(brace) = rest.find(['{', '}']) {
        if rest[brace..].starts_with('}') {
            return Err("'}' without a '{' before it".into());
        }
        pieces.push(Piece::Text(&rest[..brace]));
        let after = &rest[brace + 1..];
        let close = after.find('}').ok_or("'{' is never closed")?;
        let inner = &after[..close];
        if inner.contains('{') {
            return Err("ellipses cannot nest".into());
        }
        pieces.push(parse_range(inner)?);
        rest = &after[close + 1..];
    }
    pieces.push(Piece::Text(rest));
    Ok(pieces)
}

fn parse_range(inner: &str) -> Result<Piece<'static>, String> {
    let (from_text, to_text) = inner
        .split_once("...")
        .ok_or_else(|| format!("{{{inner}}} is not a range; write {{N...M}}, e.g. {{1...9}}"))?;
    let bound = |text: &str| -> Result<u64, String> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("{{{inner}}}: bounds must be decimal numbers"));
        }
        text.parse()
            .map_err(|_| format!("{{{inner}}}: {text} is too large"))
    };
    let (from, to) = (bound(from_text)?, bound(to_text)?);
    if from > to {
        return Err(format!("{{{inner}}} is empty: {from} is after {to}"));
    }
    let padded = |text: &str| text.len() > 1 && text.starts_with('0');
    let width = if padded(from_text) || padded(to_text) {
        from_text.len().max(to_text.len())
    } else {
        0
    };
    Ok(Piece::Range { from, to, width })
}

/// The scheme of an `http://` or `https://` argument (any letter case), else `None`.
fn url_scheme(arg: &str) -> Option<&'static str> {
    let (scheme, _) = arg.split_once("://")?;
    if scheme.eq_ignore_ascii_case("http") {
        Some("http")
    } else if scheme.eq_ignore_ascii_case("https") {
        Some("https")
    } else {
        None
    }
}

/// Parses one expanded `scheme://host:port/path` into its scheme and normalised drive.
fn parse_drive_url(url: &str) -> Result<(&'static str, NodeDrive), LayoutError> {
    let bad_url = |reason: &str| LayoutError::BadUrl {
        drive: url.to_string(),
        reason: reason.to_string(),
    };
    let bad_path = |reason: &str| LayoutError::BadPath {
        drive: url.to_string(),
        reason: reason.to_string(),
    };
    let scheme = url_scheme(url).ok_or_else(|| bad_url("not an http:// or https:// URL"))?;
    let rest = &url[scheme.len() + 3..];
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.contains('@') {
        return Err(bad_url("user names are not allowed in drive URLs"));
    }
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (ip, after) = bracketed
            .split_once(']')
            .ok_or_else(|| bad_url("'[' of an IPv6 address is never closed"))?;
        let ip: Ipv6Addr = ip
            .parse()
            .map_err(|_| bad_url("not an IPv6 address between '[' and ']'"))?;
        let port = after.strip_prefix(':').unwrap_or(after);
        (format!("[{ip}]"), port)
    } else {
        let (host, port) = authority.rsplit_once(':').unwrap_or((authority, ""));
        if host.contains(':') {
            return Err(bad_url(
                "IPv6 addresses must be written in brackets: [::1]:9000",
            ));
        }
        (
            canonical_host(host).ok_or_else(|| bad_url("bad host name"))?,
            port,
        )
    };
    if port.is_empty() {
        return Err(LayoutError::MissingPort {
            drive: url.to_string(),
        });
    }
    // Digits only: `u16::from_str` would also take a leading `+`.
    let port: u16 = Some(port)
        .filter(|port| port.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|port| port.parse().ok())
        .filter(|&port| port != 0)
        .ok_or_else(|| bad_url("the port must be a number from 1 to 65535"))?;
    if path.is_empty() {
        return Err(bad_path("no drive path after host:port"));
    }
    if path.contains(['?', '#']) {
        return Err(bad_path("a drive path cannot have a query or fragment"));
    }
    let components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    if components.iter().any(|c| *c == "." || *c == "..") {
        return Err(bad_path(
            "the drive path must be absolute, without '.' or '..' components",
        ));
    }
    if components.is_empty() {
        return Err(bad_path("the root folder cannot be a drive"));
    }
    let drive = NodeDrive {
        node: format!("{host}:{port}"),
        path: format!("/{}", components.join("/")),
    };
    Ok((scheme, drive))
}

/// A host name lower-cased, or an IPv4 address in canonical form; `None` if neither.
fn canonical_host(host: &str) -> Option<String> {
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Some(ip.to_string());
    }
    let valid = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    valid.then(|| host.to_ascii_lowercase())
}

fn check_unique(drives: &[NodeDrive]) -> Result<(), LayoutError> {
    let mut seen = HashSet::new();
    match drives.iter().find(|drive| !seen.insert(*drive)) {
        Some(twice) => Err(LayoutError::DuplicateDrive {
            node: twice.node.clone(),
            path: twice.path.clone(),
        }),
        None => Ok(()),
    }
}

/// Deals the drives into erasure sets of `data + parity`.
///
/// Drives are taken round robin over the nodes (first drive of each node, then the second of
/// each, …) and cut into sets in that order, so each set spreads over the nodes as evenly as
/// possible: 3 nodes × 3 drives at 6+3 make one set with 3 drives per node; 4 nodes × 9
/// drives make 4 sets of 3/2/2/2, the node with 3 rotating.
///
/// Refused: uneven drive counts per node, a drive count that is not whole sets and, unless
/// `allow_node_loss_risk`, a set with so many drives on one node that losing the node leaves
/// fewer than the set's write quorum (more than `parity` drives; `parity` or more when data and
/// parity are equal, because the write quorum is then `data + 1`).
pub fn plan(
    drives: Vec<NodeDrive>,
    data: usize,
    parity: usize,
    allow_node_loss_risk: bool,
) -> Result<ClusterLayout, LayoutError> {
    if data == 0 || parity == 0 || parity > data {
        return Err(LayoutError::Geometry { data, parity });
    }
    if drives.is_empty() {
        return Err(LayoutError::NoDrives);
    }
    check_unique(&drives)?;

    let mut nodes: Vec<String> = Vec::new();
    let mut per_node: Vec<Vec<NodeDrive>> = Vec::new();
    for drive in drives {
        match nodes.iter().position(|node| *node == drive.node) {
            Some(index) => per_node[index].push(drive),
            None => {
                nodes.push(drive.node.clone());
                per_node.push(vec![drive]);
            }
        }
    }
    let first_count = per_node[0].len();
    if let Some(index) = per_node.iter().position(|d| d.len() != first_count) {
        return Err(LayoutError::UnevenNodes {
            first_node: nodes[0].clone(),
            first_count,
            node: nodes[index].clone(),
            count: per_node[index].len(),
        });
    }
    let total = first_count * nodes.len();
    let set_size = data + parity;
    if !total.is_multiple_of(set_size) {
        return Err(LayoutError::NotWholeSets {
            drives: total,
            data,
            parity,
            set_size,
        });
    }

    // Round robin: the r-th drive of every node before any node's (r+1)-th.
    let mut dealt = Vec::with_capacity(total);
    for round in 0..first_count {
        dealt.extend(per_node.iter().map(|drives| drives[round].clone()));
    }
    let sets: Vec<Vec<NodeDrive>> = dealt.chunks(set_size).map(<[_]>::to_vec).collect();

    if !allow_node_loss_risk {
        check_node_loss(&nodes, &sets, data, parity)?;
    }
    Ok(ClusterLayout {
        nodes,
        sets,
        data,
        parity,
        pool_sets: Vec::new(),
        pool_geometry: Vec::new(),
    })
}

/// Plans each server pool's drives (with its data and parity shards) on its own (see
/// [`plan`]) and joins them, pool after pool: a pool's sets spread over its own nodes, and
/// no drive may be in two pools.
pub fn plan_pools(
    pools: Vec<(Vec<NodeDrive>, usize, usize)>,
    allow_node_loss_risk: bool,
) -> Result<ClusterLayout, LayoutError> {
    let every: Vec<NodeDrive> = pools
        .iter()
        .flat_map(|(drives, ..)| drives.clone())
        .collect();
    check_unique(&every)?;
    let planned = (pools.into_iter())
        .map(|(drives, data, parity)| plan(drives, data, parity, allow_node_loss_risk))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ClusterLayout::joined(&planned))
}

/// Refuses the first set (in order) in which one node holds more drives than the set can lose
/// and still take writes.
fn check_node_loss(
    nodes: &[String],
    sets: &[Vec<NodeDrive>],
    data: usize,
    parity: usize,
) -> Result<(), LayoutError> {
    let set_size = data + parity;
    let quorum = write_quorum(data, parity);
    for (set_index, set) in sets.iter().enumerate() {
        for node in nodes {
            let count = set.iter().filter(|drive| drive.node == *node).count();
            if set_size - count < quorum {
                return Err(LayoutError::NodeLossRisk {
                    set: set_index + 1,
                    sets: sets.len(),
                    node: node.clone(),
                    count,
                    set_size,
                    left: set_size - count,
                    quorum,
                });
            }
        }
    }
    Ok(())
}

/// The node this server is: the one whose `host:port` is `address` (the `--address` it
/// listens on), else the only node on `address`'s port, so that `0.0.0.0:9001`, `[::]:9001`
/// or an IP written where the URLs use a host name still find their node when no other node
/// shares the port.
pub fn find_self(layout: &ClusterLayout, address: &str) -> Result<String, LayoutError> {
    let wanted = match address.parse::<SocketAddr>() {
        Ok(socket) => socket.to_string(),
        Err(_) => address.to_ascii_lowercase(),
    };
    if let Some(node) = layout.nodes.iter().find(|node| **node == wanted) {
        return Ok(node.clone());
    }
    let port = port_of(&wanted);
    let mut same_port = layout
        .nodes
        .iter()
        .filter(|node| port.is_some() && port_of(node) == port);
    match (same_port.next(), same_port.next()) {
        (Some(node), None) => Ok(node.clone()),
        _ => Err(LayoutError::NotANode {
            address: address.to_string(),
            nodes: layout.nodes.clone(),
        }),
    }
}

fn port_of(host_port: &str) -> Option<u16> {
    host_port.rsplit_once(':')?.1.parse().ok()
}

/// Domain separator and version of the fingerprint's encoding; a change to the encoding gets a
/// new version so that nodes of different releases never agree by accident.
const FINGERPRINT_DOMAIN: &[u8] = b"strata cluster layout v1";

impl ClusterLayout {
    /// One layout of several pools' (each a layout of one pool), in order.
    pub fn joined(pools: &[ClusterLayout]) -> ClusterLayout {
        let mut nodes: Vec<String> = Vec::new();
        for node in pools.iter().flat_map(|pool| &pool.nodes) {
            if !nodes.contains(node) {
                nodes.push(node.clone());
            }
        }
        let first = &pools[0];
        ClusterLayout {
            nodes,
            sets: pools.iter().flat_map(|pool| pool.sets.clone()).collect(),
            data: first.data,
            parity: first.parity,
            pool_sets: match pools.len() {
                1 => Vec::new(),
                _ => pools.iter().map(|pool| pool.sets.len()).collect(),
            },
            pool_geometry: match pools
                .iter()
                .all(|p| (p.data, p.parity) == (first.data, first.parity))
            {
                true => Vec::new(),
                false => pools.iter().map(|pool| (pool.data, pool.parity)).collect(),
            },
        }
    }

    /// Each server pool's layout, in order (its nodes in the order its sets name them, which
    /// is the order [`plan`] found them in).
    pub fn pools(&self) -> Vec<ClusterLayout> {
        let counts = match self.pool_sets.is_empty() {
            true => vec![self.sets.len()],
            false => self.pool_sets.clone(),
        };
        let mut sets = self.sets.iter();
        (counts.into_iter().enumerate())
            .map(|(index, count)| {
                let (data, parity) =
                    (self.pool_geometry.get(index).copied()).unwrap_or((self.data, self.parity));
                let pool_sets: Vec<Vec<NodeDrive>> = sets.by_ref().take(count).cloned().collect();
                let mut nodes: Vec<String> = Vec::new();
                for drive in pool_sets.iter().flatten() {
                    if !nodes.contains(&drive.node) {
                        nodes.push(drive.node.clone());
                    }
                }
                ClusterLayout {
                    nodes,
                    sets: pool_sets,
                    data,
                    parity,
                    pool_sets: Vec::new(),
                    pool_geometry: Vec::new(),
                }
            })
            .collect()
    }

    /// The id of a one-pool layout: [`Self::deployment_id`] of the pool alone. A
    /// deployment's first pool has the deployment's id.
    pub fn pool_id(&self) -> String {
        self.deployment_id()
    }

    /// Hex SHA-256 of the layout: the geometry, the nodes in order and every set's drives in
    /// order. Nodes started with the same drive arguments and `--ec` get the same fingerprint
    /// on any machine and release; any difference in order gives another.
    ///
    /// Encoding (v1): the domain string, then `data`, `parity`, the node count, each node,
    /// the set count and, per set, its drive count and each drive's node and path. Numbers
    /// are 8-byte big-endian; strings are their byte length as a number, then their UTF-8.
    pub fn fingerprint(&self) -> String {
        hex::encode(self.digest())
    }

    /// A deployment id derived from the first pool's fingerprint: its first 16 bytes as a
    /// version 8 (custom) UUID, hyphenated. Stable for a layout: every node of a deployment
    /// derives the same id, on every start, as long as the first pool's drive arguments and
    /// `--ec` do not change (and two deployments with identical arguments share it). Pools
    /// added later leave it as it is; once the first pool is retired and dropped, the id
    /// recorded (in etcd, on the drives) is the deployment's.
    pub fn deployment_id(&self) -> String {
        let first = match self.pool_sets.len() {
            0 | 1 => self.digest(),
            _ => self.pools()[0].digest(),
        };
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&first[..16]);
        uuid::Builder::from_custom_bytes(bytes)
            .into_uuid()
            .to_string()
    }

    /// How `other` differs from this layout, a line per difference, for an operator who
    /// started a node with other arguments than the cluster's; empty when they are the same.
    pub fn differences(&self, other: &ClusterLayout) -> Vec<String> {
        let mut out = Vec::new();
        if (self.data, self.parity) != (other.data, other.parity) {
            out.push(format!(
                "erasure coding {}+{} here, {}+{} in the cluster",
                other.data, other.parity, self.data, self.parity
            ));
        }
        let missing: Vec<_> = (self.nodes.iter())
            .filter(|n| !other.nodes.contains(n))
            .collect();
        let extra: Vec<_> = (other.nodes.iter())
            .filter(|n| !self.nodes.contains(n))
            .collect();
        if !missing.is_empty() {
            out.push(format!("nodes missing here: {missing:?}"));
        }
        if !extra.is_empty() {
            out.push(format!("nodes not in the cluster: {extra:?}"));
        }
        if missing.is_empty() && extra.is_empty() && self.nodes != other.nodes {
            out.push(format!(
                "nodes in another order: {:?} here, {:?} in the cluster",
                other.nodes, self.nodes
            ));
        }
        if self.sets.len() != other.sets.len() {
            out.push(format!(
                "{} erasure sets here, {} in the cluster",
                other.sets.len(),
                self.sets.len()
            ));
        }
        for (index, (ours, theirs)) in self.sets.iter().zip(&other.sets).enumerate() {
            for (position, (a, b)) in ours.iter().zip(theirs).enumerate() {
                if a != b {
                    out.push(format!(
                        "set {index} drive {position}: {}{} here, {}{} in the cluster",
                        b.node, b.path, a.node, a.path
                    ));
                }
            }
            if ours.len() != theirs.len() {
                out.push(format!(
                    "set {index}: {} drives here, {} in the cluster",
                    theirs.len(),
                    ours.len()
                ));
            }
        }
        out
    }

    fn digest(&self) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(FINGERPRINT_DOMAIN);
        let number = |hasher: &mut Sha256, n: usize| hasher.update((n as u64).to_be_bytes());
        let text = |hasher: &mut Sha256, s: &str| {
            number(hasher, s.len());
            hasher.update(s.as_bytes());
        };
        number(&mut hasher, self.data);
        number(&mut hasher, self.parity);
        number(&mut hasher, self.nodes.len());
        for node in &self.nodes {
            text(&mut hasher, node);
        }
        number(&mut hasher, self.sets.len());
        for set in &self.sets {
            number(&mut hasher, set.len());
            for drive in set {
                text(&mut hasher, &drive.node);
                text(&mut hasher, &drive.path);
            }
        }
        hasher.finalize().into()
    }
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
