//! Opening the drives of a deployment: formatting new ones, checking that every drive sits
//! where its format record says, and grouping them into erasure sets.
//!
//! A drive that joins its set blank (an empty folder formatted into a failed drive's place,
//! or a drive whose metadata database is gone) is marked unhealed on the drive itself before
//! it is formatted: until a heal pass completes over it, it cannot vote that anything is
//! absent (see [`Drive::is_unhealed`]). An empty folder that looks like a disk that failed
//! to mount is not formatted at all (see `mounts`).

mod mounts;
mod pools;

pub use pools::{recorded as recorded_pool_state, taken as pool_state_taken, PoolShape};

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};

use crate::config::{PoolSpec, ServerConfig};
use crate::erasure::ErasureSet;
use crate::records::RecordSet;
use crate::storage::remote::NodeLiveness;
use crate::storage::{
    DeadlineDrive, Drive, DriveSlot, Format, LocalDrive, MetaTable, OfflineDrive, PoolEntry,
    PoolList, RecordedPoolState, RemoteDrive,
};

/// How long a starting node waits for another node's drive to say whether it holds buckets.
const PEER_SCAN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// With several nodes, a commit must be answered within this or it is undone (see
/// `records::in_flight`): a value another node found longer ago can be written over.
const COMMIT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// The drives of a deployment, opened and grouped.
pub struct Deployment {
    pub id: String,
    pub sets: Vec<RecordSet>,
    /// Drives that could not be used and are served around (degraded).
    pub offline: Vec<PathBuf>,
    /// Every drive position, in command-line order, for the drive monitor.
    pub drives: Vec<DrivePosition>,
    /// Empty drives formatted into their position at this start: their sets need healing.
    pub formatted: Vec<PathBuf>,
    /// The other nodes of a cluster, each pinged to tell whether it answers at all.
    pub peers: Vec<Arc<NodeLiveness>>,
    /// The server pools, in order, each a run of `sets`.
    pub pools: Vec<PoolShape>,
    /// What each drive position's format record says.
    shape: pools::Shape,
    /// The pool list as last recorded on the drives (pool states change while serving).
    pool_list: std::sync::Mutex<PoolList>,
    /// What the drive monitor and `strata admin drive format` format drives with.
    config: ServerConfig,
}

/// One drive position: where it is, and the slot its set reads and writes through.
pub struct DrivePosition {
    pub path: PathBuf,
    pub set_index: usize,
    pub slot: Arc<DriveSlot>,
    online: AtomicBool,
    /// Back in service but not yet given everything it missed.
    healing: AtomicBool,
    /// An empty folder that looks like a disk that failed to mount: kept offline and
    /// unformatted until an operator formats it (or a filesystem is mounted there).
    unmounted: AtomicBool,
    /// Another node's drive: that node watches it; here it is only used.
    remote: bool,
}

impl DrivePosition {
    /// Another node's drive, at `label` (its URL), in set `set_index`.
    fn remote(label: String, set_index: usize, slot: Arc<DriveSlot>) -> Self {
        Self {
            path: PathBuf::from(label),
            set_index,
            slot,
            online: AtomicBool::new(true),
            healing: AtomicBool::new(false),
            unmounted: AtomicBool::new(false),
            remote: true,
        }
    }

    pub fn is_online(&self) -> bool {
        self.online.load(Ordering::Relaxed)
    }

    /// Online but missing its deadlines: requests are served around it.
    pub fn is_stalled(&self) -> bool {
        self.is_online() && self.slot.is_stalled()
    }

    /// Back in service but not yet given everything it missed (a drive that returned), or
    /// unhealed (it joined blank, and no heal pass has completed over it since).
    pub fn is_healing(&self) -> bool {
        self.is_online() && (self.healing.load(Ordering::Relaxed) || self.slot.is_unhealed())
    }

    /// Another node's drive, used here and watched there.
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// Offline because its folder looks like a disk that failed to mount.
    pub fn is_unmounted(&self) -> bool {
        !self.is_online() && self.unmounted.load(Ordering::Relaxed)
    }
}

/// What the drive monitor found at one position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriveChange {
    /// The drive went away (folder removed, format record gone).
    WentOffline(PathBuf),
    /// The drive came back with its format record: it may have missed writes.
    Returned(PathBuf),
    /// An empty drive took the position and was formatted into it: it needs everything.
    Replaced(PathBuf),
}

impl DriveChange {
    /// Whether the drive's set needs healing after this change.
    pub fn needs_heal(&self) -> bool {
        !matches!(self, DriveChange::WentOffline(_))
    }

    /// The drive it is about.
    pub fn path(&self) -> &Path {
        match self {
            DriveChange::WentOffline(path)
            | DriveChange::Returned(path)
            | DriveChange::Replaced(path) => path,
        }
    }
}

/// Where the drive at one position of the deployment is.
enum Place {
    /// A folder on this node.
    Local(PathBuf),
    /// A drive another node serves, reached over the drive RPC.
    Remote(Arc<dyn Drive>),
}

impl Place {
    fn local(&self) -> Option<&Path> {
        match self {
            Place::Local(path) => Some(path),
            Place::Remote(_) => None,
        }
    }
}

/// Every drive position, in set order: the command line's folders, or in distributed mode
/// the layout's drives, this node's as folders and the others' as remote drives.
fn places(config: &ServerConfig) -> anyhow::Result<(Vec<Place>, Vec<Arc<NodeLiveness>>)> {
    let Some(cluster) = &config.cluster else {
        let local = config.drives.iter().cloned().map(Place::Local).collect();
        return Ok((local, Vec::new()));
    };
    let auth = cluster.auth()?;
    let mut client = reqwest::Client::builder().connect_timeout(config.healing.drive_timeout);
    // With certificates the nodes speak TLS to each other, trusting what the folder names.
    let scheme = match &config.listener.certs_dir {
        Some(dir) => {
            for authority in crate::tls::authorities(dir)? {
                let pem = std::fs::read(&authority)
                    .with_context(|| format!("reading {}", authority.display()))?;
                for certificate in reqwest::Certificate::from_pem_bundle(&pem)
                    .with_context(|| format!("{} holds no PEM certificate", authority.display()))?
                {
                    client = client.add_root_certificate(certificate);
                }
            }
            "https"
        }
        None => "http",
    };
    let client = client.build().context("the drive RPC client")?;
    // Each other node: where its drive service is, and whether it answers.
    let mut peers: Vec<(String, Arc<NodeLiveness>)> = Vec::new();
    for node in (cluster.layout.nodes.iter()).filter(|n| **n != cluster.this_node) {
        let url = format!("{scheme}://{}", crate::config::drive_service_address(node)?);
        let pinger = RemoteDrive::new(url.clone(), String::new(), auth.clone(), client.clone());
        peers.push((url, NodeLiveness::new(node.clone(), pinger)));
    }
    let mut places = Vec::new();
    for drive in cluster.layout.sets.iter().flatten() {
        if drive.node == cluster.this_node {
            places.push(Place::Local(PathBuf::from(&drive.path)));
            continue;
        }
        let (url, liveness) = (peers.iter())
            .find(|(_, p)| p.node() == drive.node)
            .context("every other node is pinged")?;
        let remote = RemoteDrive::new(
            url.clone(),
            drive.path.clone(),
            auth.clone(),
            client.clone(),
        )
        .watched_by(liveness.clone());
        let remote = DeadlineDrive::new(Arc::new(remote), config.healing.drive_timeout)
            .on_node(liveness.clone());
        places.push(Place::Remote(Arc::new(remote)));
    }
    Ok((places, peers.into_iter().map(|(_, p)| p).collect()))
}

/// Whether a drive of another node answers that it holds a bucket or a deployment-wide
/// record (a user, a policy, a KMS key). Called on the blocking pool at start (the drives
/// are reached over the runtime).
fn other_nodes_hold_records(places: &[Place]) -> bool {
    let remote = places.iter().filter_map(|place| match place {
        Place::Remote(drive) => Some(drive.clone()),
        Place::Local(_) => None,
    });
    let scans = remote.flat_map(|drive| {
        [MetaTable::Buckets, MetaTable::System].map(|table| {
            let drive = drive.clone();
            async move {
                let scan = drive.meta_scan(table, Bound::Unbounded, Vec::new(), 1);
                matches!(tokio::time::timeout(PEER_SCAN_TIMEOUT, scan).await, Ok(Ok(found)) if !found.is_empty())
            }
        })
    });
    tokio::runtime::Handle::current().block_on(async {
        futures::future::join_all(scans)
            .await
            .into_iter()
            .any(|holds| holds)
    })
}

/// How many drives the deployment has, on every node.
fn drive_count(config: &ServerConfig) -> usize {
    match &config.cluster {
        Some(cluster) => cluster.layout.sets.iter().map(Vec::len).sum(),
        None => config.drives.len(),
    }
}

/// Each server pool's drive count and geometry, in order.
fn pool_specs(config: &ServerConfig) -> Vec<PoolSpec> {
    match config.pools.is_empty() {
        true => vec![PoolSpec {
            drives: drive_count(config),
            data_shards: config.data_shards,
            parity_shards: config.parity_shards,
        }],
        false => config.pools.clone(),
    }
}

/// The pool list the drives recorded last (the highest generation found); drives formatted
/// before pools recorded none, and their deployment is the one pool their format gives.
fn pools_on_drives(places: &[Place], formats: &[Option<Format>]) -> PoolList {
    let lists = (places.iter()).filter_map(|p| LocalDrive::read_pools(p.local()?).ok().flatten());
    if let Some(newest) = lists.max_by_key(|list| list.generation) {
        return newest;
    }
    let first_pool = formats.iter().flatten().find(|f| f.pool_index == 0);
    PoolList {
        generation: 0,
        pools: first_pool
            .map(|format| PoolEntry {
                id: format.pool_id().to_string(),
                drives: format.set_count * (format.data_shards + format.parity_shards),
                state: RecordedPoolState::Active,
                free: None,
            })
            .into_iter()
            .collect(),
    }
}

/// Formats a drive of a new deployment or a new pool, and creates its database: a formatted
/// drive without one is taken for a drive that lost it (and is unhealed), which a crash here
/// would cost only a heal pass.
fn format_new(path: &Path, format: &Format) -> anyhow::Result<()> {
    LocalDrive::write_format(path, format)
        .with_context(|| format!("formatting drive {}", path.display()))?;
    LocalDrive::open(path)
        .with_context(|| format!("creating the database of {}", path.display()))?;
    Ok(())
}

/// The deployment id the formatted drives among `paths` hold, if any.
pub fn found_deployment_id(paths: &[PathBuf]) -> Option<String> {
    (paths.iter())
        .find_map(|path| LocalDrive::read_format(path).ok().flatten())
        .map(|format| format.deployment_id)
}

/// Opens (and on first start formats) every drive. In distributed mode this node opens its
/// own folders, the deployment id is the cluster's, and the other nodes' drives are reached
/// over the drive RPC. `formatted_before`: etcd remembers that this node formatted its
/// drives once (without etcd nothing outside the drives does: false). `recorded_pools`: the
/// server pools etcd records for a cluster (without, the drives' record is read).
pub fn open(
    config: &ServerConfig,
    formatted_before: bool,
    recorded_pools: Option<&PoolList>,
) -> anyhow::Result<Deployment> {
    let (places, peers) = places(config)?;
    let formats: Vec<Option<Format>> = (places.iter())
        .map(|place| {
            let path = place.local()?;
            LocalDrive::read_format(path).ok().flatten()
        })
        .collect();

    let found = formats.iter().flatten().next();
    let deployment_id = match (&config.cluster, found) {
        (Some(cluster), _) => cluster.deployment_id.clone(),
        (None, Some(first)) => first.deployment_id.clone(),
        (None, None) => uuid::Uuid::new_v4().to_string(),
    };
    let recorded = match recorded_pools {
        Some(list) => list.clone(),
        None => pools_on_drives(&places, &formats),
    };
    let shape = pools::Shape::plan(&deployment_id, &pool_specs(config), &formats, &recorded)?;
    if found.is_none() {
        // A new deployment, or with several nodes this node's part of one: the folders here
        // are formatted as they are. But a node whose folders are all blank after it
        // formatted drives once (etcd remembers), or while the other nodes hold records,
        // lost its drives: they join as replacements, unhealed, so that they never vote a
        // key absent before a heal gave them what the sets hold. Its peers being away at
        // this start (a site power loss) proves nothing.
        // A pool that joins a cluster never took a key: its blank drives are new.
        let joining = (places.iter().enumerate())
            .filter(|(_, place)| place.local().is_some())
            .all(|(position, _)| {
                shape.pool_of(position).state == crate::object::PoolState::Joining
            });
        let replacements = config.cluster.is_some()
            && !joining
            && (formatted_before || other_nodes_hold_records(&places));
        for (position, place) in places.iter().enumerate() {
            let Some(path) = place.local() else { continue };
            let format = shape.format_for(position);
            match replacements {
                true => drop(format_into_place(path, &format).map_err(anyhow::Error::msg)?),
                false => format_new(path, &format)?,
            }
        }
        tracing::info!(deployment = %deployment_id, drives = config.drives.len(), "formatted new drives");
        let mut deployment = open(config, formatted_before, recorded_pools)?;
        if config.cluster.is_some() {
            // The other nodes may hold the set's objects already: heal once serving.
            deployment.formatted = config.drives.clone();
        }
        return Ok(deployment);
    }

    for (position, (place, format)) in places.iter().zip(&formats).enumerate() {
        let Some(path) = place.local() else { continue };
        match format {
            Some(format) => pools::check_format(path, format, &shape.format_for(position))?,
            // A pool this start adds: its drives are new, not replacements.
            None if !shape.is_recorded(position, &recorded) => {
                format_new(path, &shape.format_for(position))?;
                tracing::info!(drive = %path.display(), pool = shape.pool_of(position).position + 1, "formatted a drive of a new server pool");
            }
            None => {}
        }
    }
    let formats: Vec<Option<Format>> = (places.iter())
        .map(|place| LocalDrive::read_format(place.local()?).ok().flatten())
        .collect();

    let local_paths: Vec<Option<PathBuf>> = (places.iter())
        .map(|p| p.local().map(Path::to_path_buf))
        .collect();
    let mut drives: Vec<Arc<dyn Drive>> = Vec::new();
    let mut positions = Vec::new();
    let mut offline = Vec::new();
    let mut formatted = Vec::new();
    for (position, (place, format)) in places.into_iter().zip(&formats).enumerate() {
        let path = match place {
            Place::Local(path) => path,
            Place::Remote(drive) => {
                let label = drive.label().to_string();
                let slot = Arc::new(DriveSlot::new(label.clone(), drive));
                drives.push(slot.clone());
                positions.push(DrivePosition::remote(label, shape.set_of(position), slot));
                continue;
            }
        };
        let path = &path;
        let formatted_before = formatted.len();
        let set_members = (shape.set_drives(shape.set_of(position)))
            .filter(|&other| other != position && formats[other].is_some())
            .filter_map(|other| local_paths[other].as_deref());
        let mut unmounted = false;
        let opened = match format {
            Some(_) => open_member(path),
            None if path.is_dir() && mounts::looks_unmounted(path, set_members) => {
                unmounted = true;
                Err(mounts::UNMOUNTED_REASON.to_string())
            }
            // An empty folder in a known deployment is a replaced drive: it takes its place.
            None if path.is_dir() => format_into_place(path, &shape.format_for(position))
                .inspect(|_| formatted.push(path.clone())),
            None => Err("missing".to_string()),
        };
        let (drive, online): (Arc<dyn Drive>, bool) = match opened {
            Ok(drive) => (with_deadline(drive, config), true),
            Err(reason) => {
                tracing::warn!(drive = %path.display(), %reason, "drive offline; serving degraded");
                offline.push(path.clone());
                (
                    Arc::new(OfflineDrive::new(path.display().to_string())),
                    false,
                )
            }
        };
        let slot = Arc::new(DriveSlot::new(path.display().to_string(), drive));
        drives.push(slot.clone());
        positions.push(DrivePosition {
            path: path.clone(),
            set_index: shape.set_of(position),
            slot,
            online: AtomicBool::new(online),
            healing: AtomicBool::new(formatted.len() > formatted_before),
            unmounted: AtomicBool::new(unmounted),
            remote: false,
        });
    }

    let mut sets = Vec::new();
    let memory = crate::erasure::MemoryBudget::new(config.limits.memory_budget);
    let set_count = shape.pools.last().map_or(0, |pool| pool.sets.end);
    for index in 0..set_count {
        let members = shape.set_drives(index);
        let online = positions[members.clone()]
            .iter()
            .filter(|p| p.is_online())
            .count();
        let pool = shape.pool_of(members.start);
        if online < pool.data_shards {
            tracing::error!(set = index, online, "erasure set has fewer drives than data shards; it cannot serve until drives return");
        }
        let set = ErasureSet::new(
            index,
            drives[members].to_vec(),
            pool.parity_shards,
            config.block_size,
        )?;
        let mut set = RecordSet::from(set.with_memory_budget(memory.clone()));
        if config.cluster.is_some() {
            set = set.shared_with_other_servers(COMMIT_DEADLINE);
        }
        sets.push(set);
    }
    record_pools(&local_paths, &shape.list, &recorded);
    Ok(Deployment {
        id: deployment_id,
        sets,
        pools: shape.pools.clone(),
        pool_list: std::sync::Mutex::new(shape.list.clone()),
        shape,
        offline,
        drives: positions,
        formatted,
        peers,
        config: config.clone(),
    })
}

impl Deployment {
    /// Records, on every drive here, that the pool given `index`th is now in `state` (a new
    /// generation of the pool list). Blocking: call it on the blocking pool. Fails unless a
    /// drive of every pool here took it, as the next start reads it from them.
    pub fn record_pool_state(
        &self,
        index: usize,
        state: crate::object::PoolState,
    ) -> anyhow::Result<()> {
        let mut list = self.pool_list.lock().expect("pool list");
        let mut changed = list.clone();
        changed.pools[self.pools[index].position].state = pools::recorded(state);
        changed.generation += 1;
        let mut recorded_in = vec![false; self.pools.len()];
        for drive in self.drives.iter().filter(|d| !d.remote && d.is_online()) {
            match LocalDrive::write_pools(&drive.path, &changed) {
                Ok(()) => {
                    let pool = (self.pools.iter()).position(|p| p.sets.contains(&drive.set_index));
                    if let Some(pool) = pool {
                        recorded_in[pool] = true;
                    }
                }
                Err(e) => {
                    tracing::warn!(drive = %drive.path.display(), error = %e, "could not record the server pools on the drive")
                }
            }
        }
        if recorded_in.contains(&false) {
            bail!("the new pool state could not be recorded on a drive of every pool");
        }
        *list = changed;
        Ok(())
    }

    /// Whether the deployment spans several nodes.
    pub fn is_distributed(&self) -> bool {
        self.config.cluster.is_some()
    }

    /// Every node of a cluster in layout order, and whether it answers as this node sees it
    /// (this node always does; the others by their pings). Empty for a single server.
    pub fn nodes_answering(&self) -> Vec<(String, bool)> {
        let Some(cluster) = &self.config.cluster else {
            return Vec::new();
        };
        (cluster.layout.nodes.iter())
            .map(|node| {
                let peer = self.peers.iter().find(|p| p.node() == node);
                let up = *node == cluster.this_node || peer.is_some_and(|p| !p.is_down());
                (node.clone(), up)
            })
            .collect()
    }

    /// The set of the drive at `path` (a folder here, another node's drive URL).
    pub fn set_of(&self, path: &Path) -> Option<usize> {
        (self.drives.iter())
            .find(|drive| drive.path == path)
            .map(|drive| drive.set_index)
    }

    /// The drive positions whose drive is unhealed now.
    pub fn unhealed_drives(&self) -> Vec<usize> {
        (self.drives.iter().enumerate())
            .filter(|(_, drive)| drive.is_online() && drive.slot.is_unhealed())
            .map(|(position, _)| position)
            .collect()
    }

    /// A heal pass over everything finished with nothing left unresolved: the drives back in
    /// service have all they missed, and `unhealed` (the drives unhealed when the pass
    /// began) lose their mark, durably, so that they vote again.
    pub async fn healed(&self, unhealed: &[usize]) {
        for drive in &self.drives {
            drive.healing.store(false, Ordering::Relaxed);
        }
        for &position in unhealed {
            let drive = &self.drives[position];
            match drive.slot.mark_healed().await {
                Ok(()) => {
                    tracing::info!(drive = %drive.path.display(), "drive healed: it holds everything its set holds")
                }
                Err(e) => {
                    tracing::warn!(drive = %drive.path.display(), error = %e, "could not mark the drive healed; it stays unhealed")
                }
            }
        }
    }

    /// Looks at every drive position once: a drive that went away is taken out of service, a
    /// drive that came back is reopened, and an empty folder in a failed drive's place is
    /// formatted into that position, unless it looks like a disk that failed to mount.
    /// Blocking: call it on the blocking pool.
    pub fn check_drives(&self) -> Vec<DriveChange> {
        let mut changes = Vec::new();
        for (position, drive) in self.drives.iter().enumerate() {
            if drive.remote {
                continue;
            }
            let format = LocalDrive::read_format(&drive.path).ok().flatten();
            if drive.is_online() {
                if format.is_none() {
                    drive.online.store(false, Ordering::Relaxed);
                    let label = drive.path.display().to_string();
                    drive.slot.replace(Arc::new(OfflineDrive::new(label)));
                    tracing::warn!(drive = %drive.path.display(), "drive went offline");
                    changes.push(DriveChange::WentOffline(drive.path.clone()));
                }
                continue;
            }
            let (opened, change) = match format {
                Some(format) => {
                    let expected = self.shape.format_for(position);
                    if let Err(e) = pools::check_format(&drive.path, &format, &expected) {
                        tracing::error!(error = %e, "drive not taken back");
                        continue;
                    }
                    (
                        open_member(&drive.path),
                        DriveChange::Returned(drive.path.clone()),
                    )
                }
                None if drive.path.is_dir() => {
                    let set_members = (self.drives.iter())
                        .filter(|other| other.set_index == drive.set_index && other.is_online())
                        .map(|other| other.path.as_path());
                    if mounts::looks_unmounted(&drive.path, set_members) {
                        if !drive.unmounted.swap(true, Ordering::Relaxed) {
                            tracing::warn!(drive = %drive.path.display(), reason = mounts::UNMOUNTED_REASON, "drive not formatted");
                        }
                        continue;
                    }
                    (
                        format_into_place(&drive.path, &self.shape.format_for(position)),
                        DriveChange::Replaced(drive.path.clone()),
                    )
                }
                None => continue,
            };
            if self.take_into_service(drive, opened, &change) {
                changes.push(change);
            }
        }
        changes
    }

    /// Asks every other node's drive whether it answers (`disk_info`, within the drive
    /// deadline), so that health, `strata admin info` and healing see a node that stopped or
    /// came back. A drive that comes back may have missed writes: its set is healed.
    pub async fn check_remote_drives(&self) -> Vec<DriveChange> {
        let remote = self.drives.iter().filter(|drive| drive.remote);
        let probes = remote.map(|drive| async move { (drive, drive.slot.disk_info().await) });
        let mut changes = Vec::new();
        for (drive, answer) in futures::future::join_all(probes).await {
            let answers = answer.is_ok();
            match (drive.online.swap(answers, Ordering::Relaxed), answer) {
                (true, Err(e)) => {
                    tracing::warn!(drive = %drive.path.display(), error = %e, "another node's drive stopped answering");
                    changes.push(DriveChange::WentOffline(drive.path.clone()));
                }
                (false, Ok(_)) => {
                    tracing::info!(drive = %drive.path.display(), "another node's drive answers again");
                    changes.push(DriveChange::Returned(drive.path.clone()));
                }
                _ => {}
            }
        }
        changes
    }

    /// Formats the empty folder of an offline drive position into its place because an
    /// operator said so (`strata admin drive format`), even where it looks like a disk that
    /// failed to mount. Blocking: call it on the blocking pool.
    pub fn format_drive(&self, path: &Path) -> Result<DriveChange, String> {
        let Some((position, drive)) = (self.drives.iter().enumerate())
            .find(|(_, drive)| drive.path == path || same_file(&drive.path, path))
        else {
            return Err(format!(
                "{} is not a drive of this deployment",
                path.display()
            ));
        };
        if drive.remote {
            return Err(format!(
                "{} is another node's drive: format it there",
                path.display()
            ));
        }
        if drive.is_online() {
            return Err(format!("drive {} is in service", path.display()));
        }
        if LocalDrive::read_format(&drive.path)
            .ok()
            .flatten()
            .is_some()
        {
            return Err(format!(
                "drive {} is formatted already; the drive monitor takes it back",
                path.display()
            ));
        }
        if !drive.path.is_dir() {
            return Err(format!("drive folder {} does not exist", path.display()));
        }
        let opened = format_into_place(&drive.path, &self.shape.format_for(position));
        let change = DriveChange::Replaced(drive.path.clone());
        match self.take_into_service(drive, opened, &change) {
            true => Ok(change),
            false => Err(format!("drive {} could not be opened", path.display())),
        }
    }

    /// Puts an opened drive in its slot; whether it is in service now.
    fn take_into_service(
        &self,
        drive: &DrivePosition,
        opened: Result<LocalDrive, String>,
        change: &DriveChange,
    ) -> bool {
        match opened {
            Ok(local) => {
                drive.slot.replace(with_deadline(local, &self.config));
                drive.healing.store(true, Ordering::Relaxed);
                drive.unmounted.store(false, Ordering::Relaxed);
                drive.online.store(true, Ordering::Relaxed);
                tracing::info!(drive = %drive.path.display(), change = ?change, "drive back in service");
                true
            }
            Err(reason) => {
                tracing::warn!(drive = %drive.path.display(), %reason, "drive still offline");
                false
            }
        }
    }
}

/// Whether two paths name the same folder.
fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// Opens a drive folder. A metadata database damaged in a way its library does not expect
/// (a truncated redb file) makes it panic rather than fail: that drive is then offline, not
/// the whole server.
fn open_local(path: &Path) -> Result<LocalDrive, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| LocalDrive::open(path)))
        .map_err(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            format!("opening the drive panicked (damaged metadata database?): {message}")
        })?
        .map_err(|e| e.to_string())
}

/// A drive as the erasure sets use it: every call under the configured deadline, so that a
/// drive that stops answering is served around instead of holding requests.
fn with_deadline(drive: LocalDrive, config: &ServerConfig) -> Arc<dyn Drive> {
    Arc::new(DeadlineDrive::new(
        Arc::new(drive),
        config.healing.drive_timeout,
    ))
}

/// Opens a formatted drive of the deployment. One whose metadata database is gone holds
/// none of its set's history: it is marked unhealed before a new database is made.
fn open_member(path: &Path) -> Result<LocalDrive, String> {
    if !LocalDrive::has_database(path) {
        tracing::warn!(drive = %path.display(), "the drive's metadata database is missing; it gets a new one and is unhealed until a heal pass completes");
        LocalDrive::mark_unhealed(path, "metadata database missing").map_err(|e| e.to_string())?;
    }
    open_local(path)
}

/// Formats an empty drive folder into a position of the deployment and opens it, marked
/// unhealed first.
fn format_into_place(path: &Path, format: &Format) -> Result<LocalDrive, String> {
    LocalDrive::mark_unhealed(path, "formatted into its place").map_err(|e| e.to_string())?;
    LocalDrive::write_format(path, format).map_err(|e| e.to_string())?;
    tracing::info!(drive = %path.display(), set = format.set_index + 1, position = format.drive_index + 1, "formatted an empty drive into its position; it will be healed");
    open_local(path)
}

/// Records `list` on every formatted drive here that does not hold it yet. A drive that
/// cannot take it is offline or failing, and is told at its next start.
fn record_pools(drives: &[Option<PathBuf>], list: &PoolList, recorded: &PoolList) {
    for path in drives.iter().flatten() {
        if LocalDrive::read_format(path).ok().flatten().is_none() {
            continue;
        }
        if LocalDrive::read_pools(path).ok().flatten().as_ref() == Some(list) {
            continue;
        }
        if let Err(e) = LocalDrive::write_pools(path, list) {
            tracing::warn!(drive = %path.display(), error = %e, "could not record the server pools on the drive");
        }
    }
    if list.generation > recorded.generation && recorded.generation > 0 {
        tracing::info!(
            pools = list.pools.len(),
            "the deployment's server pools changed"
        );
    }
}
