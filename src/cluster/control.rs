//! The cluster's control plane in etcd: the layout every node must agree on, which nodes are
//! up (a key each, on a lease the node keeps alive), which node runs each piece of work that
//! must run once per cluster (an election per job), and a feed of changes to the records
//! every node caches. Object data and metadata never go through etcd.
//!
//! Keys, under `/strata/`:
//! - `layout`: the cluster's layout, deployment id and server pools, created by the first node
//!   to start (see [`super::pools`]).
//! - `nodes/<host:port>`: a node that is up, on its lease.
//! - `elected/<job>`: the node running the job, on its lease.
//! - `changes/<kind>`: the last record of a kind that changed; watched by every node.
//! - `records/buckets/<name>`, `records/system/<key>`: the deployment-wide records (bucket
//!   records; users, policies and the key catalog), changed by compare-and-swap; the drives
//!   keep a copy (see `crate::records::authority::RecordAuthority`).
//! - `records-filled`: etcd holds every record the drives held when the first node came.
//! - `formatted/<host:port>`: the node formatted its drives once; blank folders it starts
//!   on later are drives it lost, formatted as unhealed replacements.
//! - `tiers`: each tier's fingerprint, as the first node to start was given them; every node
//!   must be given the same.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use async_trait::async_trait;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::etcd::{Etcd, EtcdError, LeaseId, WatchEvent};
use super::layout::ClusterLayout;
use super::pools::LayoutRecord;
use super::seal::RecordSeal;
use super::throttle::Throttle;
use crate::object::ObjectStore;
use crate::records::authority::RecordAuthority;
use crate::records::changes::{ChangeFeed, RecordChange};
use crate::records::RecordError;
use crate::storage::PoolList;

const ROOT: &str = "/strata/";
/// How long a node's keys outlive its last word: a node that stops answering is taken for
/// down, and loses the jobs it was elected for, after this.
pub const LEASE_TTL: Duration = Duration::from_secs(10);
/// How often a node renews its lease (and stands for the jobs it wants).
pub const RENEW_EVERY: Duration = Duration::from_millis(LEASE_TTL.as_millis() as u64 / 4);
/// How often a node checks that its lease surely lives, apart from renewing it.
pub const LAPSE_CHECK_EVERY: Duration = Duration::from_millis(250);
/// How long a starting node waits between attempts to reach etcd.
const JOIN_RETRY: Duration = Duration::from_secs(2);
/// How long a broken watch waits before it watches again.
pub const REWATCH_AFTER: Duration = Duration::from_secs(1);
/// How often a node tries again to take its records from etcd (see [`ControlPlane::adopt`]).
pub const ADOPT_RETRY: Duration = Duration::from_millis(250);
/// How long a record change waits for the node to take its records from etcd before 503.
const ADOPTION_WAIT: Duration = Duration::from_secs(10);

/// What etcd holds of a node that is up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    pub node: String,
    pub version: String,
    /// Unix seconds.
    pub started: u64,
    /// The ids of the server pools the node was started with.
    #[serde(default)]
    pub pools: Vec<String>,
    /// The generation of the pool list whose states the node applies now.
    #[serde(default)]
    pub pools_generation: u64,
}

pub struct ControlPlane {
    etcd: Etcd,
    node: String,
    /// Every node of the layout, in order.
    nodes: Vec<String>,
    record: Mutex<NodeRecord>,
    state: Mutex<LeaseState>,
    /// Per job this node stands for, whether it holds it now.
    elections: Mutex<HashMap<String, watch::Sender<bool>>>,
    /// Whether this node's records are decided in etcd yet.
    adopted: watch::Sender<bool>,
    /// Seals the record values this node writes to etcd, and opens those it reads.
    seal: RecordSeal,
    /// Unsealed values read are warned of at most once per [`Throttle::EVERY`].
    unsealed_warnings: Throttle,
}

#[derive(Default)]
struct LeaseState {
    lease: Option<LeaseId>,
    /// Until when the lease surely lives: the start of the last renewal that succeeded,
    /// plus the TTL.
    alive_until: Option<Instant>,
}

impl ControlPlane {
    /// Agrees this node's layout with the cluster's (see [`super::pools`]): the first node
    /// records it; a node that adds pools records them, joining; a node whose pools differ
    /// otherwise is refused, told why. `found_id`: the deployment id this node's drives hold,
    /// if formatted. Answers the record: the deployment's id and every pool's state.
    pub async fn agree_on_layout(
        etcd: &Etcd,
        layout: &ClusterLayout,
        found_id: Option<&str>,
    ) -> anyhow::Result<LayoutRecord> {
        let key = format!("{ROOT}layout");
        loop {
            let first = LayoutRecord::first(found_id.unwrap_or(&layout.deployment_id()), layout);
            let encoded = serde_json::to_vec(&first)?;
            // etcd may come up after the nodes (a Kubernetes rollout): wait for it.
            let existing = match etcd.create(&key, &encoded, None).await {
                Err(EtcdError::Unreachable(e)) => {
                    tracing::warn!(error = %e, "waiting for etcd to answer");
                    tokio::time::sleep(JOIN_RETRY).await;
                    continue;
                }
                answer => answer.with_context(|| format!("etcd at {:?}", etcd.endpoints()))?,
            };
            let Err(existing) = existing else {
                tracing::info!(deployment = %first.deployment_id, "recorded the cluster layout in etcd");
                return Ok(first);
            };
            let theirs: LayoutRecord = serde_json::from_slice(&existing.value)
                .context("etcd holds a layout this release cannot read")?;
            if let Some(found) = found_id.filter(|found| *found != theirs.deployment_id) {
                bail!(
                    "this node's drives belong to deployment {found}, but the cluster in etcd \
                     is deployment {}",
                    theirs.deployment_id
                );
            }
            let extended = theirs.admit(layout).map_err(|why| {
                anyhow::anyhow!(
                    "this node's drive arguments do not match the cluster's layout in etcd \
                     (deployment {}): {why}. Start every node with the same drive arguments \
                     and --ec (new pools after the recorded ones)",
                    theirs.deployment_id
                )
            })?;
            let Some(extended) = extended else {
                return Ok(theirs);
            };
            let encoded = serde_json::to_vec(&extended)?;
            if etcd
                .swap(&key, Some(&existing.value), Some(&encoded))
                .await?
            {
                let added = extended.layout.pools().len() - theirs.layout.pools().len();
                tracing::warn!(added, "recorded new server pools in etcd: they join, and take keys once every node runs with them");
                return Ok(extended);
            }
            // Another node changed the record meanwhile: read it again.
        }
    }

    /// Registers this node in the cluster, started with `pools` (their ids).
    pub async fn join(
        etcd: Etcd,
        layout: &ClusterLayout,
        node: &str,
        pools: Vec<String>,
        seal: RecordSeal,
    ) -> anyhow::Result<Arc<Self>> {
        let control = Arc::new(Self {
            etcd,
            node: node.to_string(),
            nodes: layout.nodes.clone(),
            record: Mutex::new(NodeRecord {
                node: node.to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                started: unix_seconds(),
                pools,
                pools_generation: 0,
            }),
            state: Mutex::default(),
            elections: Mutex::default(),
            adopted: watch::Sender::new(false),
            seal,
            unsealed_warnings: Throttle::default(),
        });
        control
            .renew()
            .await
            .context("registering this node in etcd")?;
        Ok(control)
    }

    /// The layout record as etcd holds it now, and its bytes (for a compare-and-swap).
    pub async fn layout_record(&self) -> Result<(LayoutRecord, Vec<u8>), EtcdError> {
        let key = format!("{ROOT}layout");
        let kv = (self.etcd.get(&key).await?)
            .ok_or_else(|| EtcdError::Refused("etcd holds no layout".into()))?;
        let record = serde_json::from_slice(&kv.value).map_err(|e| {
            EtcdError::Refused(format!("etcd holds a layout this release cannot read: {e}"))
        })?;
        Ok((record, kv.value))
    }

    /// Changes the pool list by `change` (which says why not, or changes it), by a
    /// compare-and-swap of the record, tried again while other nodes change it. Answers
    /// the list as recorded.
    pub async fn change_pools(
        &self,
        change: impl Fn(&mut PoolList) -> Result<(), String>,
    ) -> anyhow::Result<PoolList> {
        let key = format!("{ROOT}layout");
        loop {
            let (mut record, stored) = self.layout_record().await?;
            let mut list = record.pool_list();
            change(&mut list).map_err(anyhow::Error::msg)?;
            list.generation += 1;
            record.pools = list.clone();
            let encoded = serde_json::to_vec(&record)?;
            if self.etcd.swap(&key, Some(&stored), Some(&encoded)).await? {
                return Ok(list);
            }
        }
    }

    /// Notes in this node's record that it applies the pool list of `generation`.
    pub async fn note_pools(&self, generation: u64) -> Result<(), EtcdError> {
        let record = {
            let mut record = self.record.lock().expect("not poisoned");
            if record.pools_generation == generation {
                return Ok(());
            }
            record.pools_generation = generation;
            serde_json::to_vec(&*record).expect("serialisable")
        };
        let lease = self.state.lock().expect("not poisoned").lease;
        if let Some(lease) = lease {
            let key = format!("{ROOT}nodes/{}", self.node);
            self.etcd.put(&key, &record, Some(lease)).await?;
        }
        Ok(())
    }

    /// Checks this node's tiers against the cluster's (`fingerprints`, see
    /// [`crate::tier::TierConfigs::fingerprints`]; empty without `--tiers`): the first node
    /// records them, and a node with others is refused, told which tiers differ. A transition
    /// made through one node must read back through every other.
    pub async fn agree_on_tiers(
        &self,
        fingerprints: &std::collections::BTreeMap<String, String>,
    ) -> anyhow::Result<()> {
        let key = format!("{ROOT}tiers");
        let ours = serde_json::to_vec(fingerprints)?;
        let Err(existing) = self.etcd.create(&key, &ours, None).await? else {
            return Ok(());
        };
        let theirs: std::collections::BTreeMap<String, String> =
            serde_json::from_slice(&existing.value)
                .context("etcd holds tiers this release cannot read")?;
        if &theirs == fingerprints {
            return Ok(());
        }
        let names: std::collections::BTreeSet<&String> =
            theirs.keys().chain(fingerprints.keys()).collect();
        let differ: Vec<String> = (names.into_iter())
            .filter(|name| theirs.get(*name) != fingerprints.get(*name))
            .map(|name| match (theirs.get(name), fingerprints.get(name)) {
                (Some(_), None) => format!("{name} (the cluster has it, this node not)"),
                (None, Some(_)) => format!("{name} (this node has it, the cluster not)"),
                _ => format!("{name} (defined otherwise)"),
            })
            .collect();
        bail!(
            "this node's tiers (--tiers) differ from the cluster's: {}. Start every node with \
             the same tiers file",
            differ.join(", ")
        )
    }

    /// Makes etcd the authority over `store`'s bucket and system records, once etcd holds
    /// them: the first node to get here fills etcd from the drives and marks it filled (which
    /// needs a read quorum of the drives: the job that calls this tries until the other nodes
    /// are up, see `background::control_plane`). Until then reads go to the drives and
    /// record changes wait.
    pub async fn adopt(self: &Arc<Self>, store: &Arc<ObjectStore>) -> anyhow::Result<()> {
        let marker = format!("{ROOT}records-filled");
        let authority: Arc<dyn RecordAuthority> = self.clone();
        if self.etcd.get(&marker).await?.is_none() {
            let added = store.fill_authority(&authority).await?;
            self.etcd.put(&marker, self.node.as_bytes(), None).await?;
            tracing::info!(
                added,
                "filled etcd with the bucket and system records the drives hold"
            );
        }
        // An etcd restored from an older snapshot, or whose records were deleted, is behind
        // the drives: it is filled again from them before this node takes its word.
        store.refill_authority(&authority).await?;
        store.set_record_authority(authority);
        // Records read from the drives until now are read from etcd again.
        store.forget_agreed_buckets();
        self.adopted.send_replace(true);
        tracing::info!("bucket and system records are decided in etcd");
        Ok(())
    }

    /// Whether this node formatted its drives before (see [`Self::note_formatted`]).
    pub async fn formatted_before(&self) -> anyhow::Result<bool> {
        let held = self.etcd.get(&self.formatted_key()).await;
        Ok(held
            .context("reading this node's format record in etcd")?
            .is_some())
    }

    /// Records that this node's drives are formatted, once (at every start, so that nodes
    /// formatted by an older release are recorded too).
    pub async fn note_formatted(&self) -> anyhow::Result<()> {
        let since = unix_seconds().to_string();
        // Already there from an earlier start: kept as it is.
        let _earlier = (self
            .etcd
            .create(&self.formatted_key(), since.as_bytes(), None))
        .await?;
        Ok(())
    }

    fn formatted_key(&self) -> String {
        format!("{ROOT}formatted/{}", self.node)
    }

    /// This node, as the layout names it.
    pub fn this_node(&self) -> &str {
        &self.node
    }

    /// Every node of the layout, in order.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }

    /// Whether this node's lease surely lives: etcd answered within the TTL.
    pub fn reachable(&self) -> bool {
        let state = self.state.lock().expect("not poisoned");
        state
            .alive_until
            .is_some_and(|until| Instant::now() < until)
    }

    /// Stands for `job`: the answer says, now and on every change, whether this node holds
    /// it. At most one node holds a job while etcd is reachable; a node that loses etcd
    /// gives its jobs up before its lease can lapse.
    pub fn stand_for(&self, job: &str) -> watch::Receiver<bool> {
        let mut elections = self.elections.lock().expect("not poisoned");
        elections
            .entry(job.to_string())
            .or_insert_with(|| watch::channel(false).0)
            .subscribe()
    }

    /// The nodes whose lease lives, by node.
    pub async fn nodes_up(&self) -> Result<Vec<NodeRecord>, EtcdError> {
        let (kvs, _) = self.etcd.list(&format!("{ROOT}nodes/")).await?;
        Ok(kvs
            .iter()
            .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
            .collect())
    }

    /// The node holding each job, by job.
    pub async fn elected(&self) -> Result<Vec<(String, String)>, EtcdError> {
        let prefix = format!("{ROOT}elected/");
        let (kvs, _) = self.etcd.list(&prefix).await?;
        Ok(kvs
            .into_iter()
            .map(|kv| {
                let job = kv.key.trim_start_matches(&prefix).to_string();
                (job, String::from_utf8_lossy(&kv.value).into_owned())
            })
            .collect())
    }

    /// Where a watch of the changes other nodes announce starts: the revision after the
    /// last one etcd holds now (what came before is read again, not watched for).
    pub async fn changes_revision(&self) -> Result<i64, EtcdError> {
        let (_, revision) = self.etcd.list(&format!("{ROOT}changes/")).await?;
        Ok(revision + 1)
    }

    /// Calls `heard` with every change another node announces from revision `from` on, until
    /// the watch ends (`Err`: it could not start, or broke).
    pub async fn watch_changes(
        &self,
        from: i64,
        heard: &(dyn Fn(Option<RecordChange>) + Send + Sync),
    ) -> Result<(), EtcdError> {
        let events = self.etcd.watch(&format!("{ROOT}changes/"), from).await?;
        let mut events = std::pin::pin!(events);
        while let Some(batch) = events.next().await {
            for event in batch? {
                let WatchEvent::Put(kv) = event else { continue };
                match parse_change(&kv.value) {
                    Some((_, node)) if node == self.node => {}
                    Some((change, _)) => heard(Some(change)),
                    None => heard(None),
                }
            }
        }
        Ok(())
    }

    /// Leaves the cluster at once: this node's keys (and jobs) go with its lease.
    pub async fn leave(&self) {
        let lease = self.state.lock().expect("not poisoned").lease.take();
        if let Some(lease) = lease {
            let _ = self.etcd.revoke(lease).await;
        }
    }

    /// Renews the lease, or takes a new one (and registers again) when it lapsed; then
    /// stands for the jobs asked for.
    pub async fn renew(&self) -> Result<(), EtcdError> {
        let started = Instant::now();
        let lease = self.state.lock().expect("not poisoned").lease;
        let lease = match lease {
            Some(lease) if self.etcd.keep_alive(lease).await? => lease,
            _ => {
                let lease = self.etcd.grant(LEASE_TTL).await?;
                let record = serde_json::to_vec(&*self.record.lock().expect("not poisoned"))
                    .expect("serialisable");
                let key = format!("{ROOT}nodes/{}", self.node);
                self.etcd.put(&key, &record, Some(lease)).await?;
                // Jobs held on the lapsed lease are gone.
                self.set_all_elections(false);
                self.state.lock().expect("not poisoned").lease = Some(lease);
                lease
            }
        };
        self.state.lock().expect("not poisoned").alive_until = Some(started + LEASE_TTL);
        self.campaign(lease).await
    }

    /// Takes every job asked for that no node holds.
    async fn campaign(&self, lease: LeaseId) -> Result<(), EtcdError> {
        let jobs: Vec<String> = (self.elections.lock().expect("not poisoned"))
            .keys()
            .cloned()
            .collect();
        for job in jobs {
            let key = format!("{ROOT}elected/{job}");
            let held = match self
                .etcd
                .create(&key, self.node.as_bytes(), Some(lease))
                .await?
            {
                Ok(()) => true,
                Err(existing) => existing.lease == lease,
            };
            if let Some(sender) = self.elections.lock().expect("not poisoned").get(&job) {
                set_held(&job, sender, held);
            }
        }
        Ok(())
    }

    /// A node that could not renew gives its jobs up a margin before its lease can lapse
    /// in etcd, so that the next holder never overlaps it.
    pub fn drop_lapsed_elections(&self) {
        let margin = RENEW_EVERY;
        let until = self.state.lock().expect("not poisoned").alive_until;
        if until.is_none_or(|until| Instant::now() + margin >= until) {
            self.set_all_elections(false);
        }
    }

    fn set_all_elections(&self, held: bool) {
        for (job, sender) in self.elections.lock().expect("not poisoned").iter() {
            set_held(job, sender, held);
        }
    }
}

/// Tells the job's worker whether this node holds it, when that changed.
fn set_held(job: &str, sender: &watch::Sender<bool>, held: bool) {
    sender.send_if_modified(|holds| {
        let changed = *holds != held;
        if changed {
            tracing::info!(job, held, "election");
        }
        *holds = held;
        changed
    });
}

#[async_trait]
impl ChangeFeed for ControlPlane {
    async fn may_change(&self) -> bool {
        let mut adopted = self.adopted.subscribe();
        let adopting = adopted.wait_for(|adopted| *adopted);
        let adopted = tokio::time::timeout(ADOPTION_WAIT, adopting).await;
        matches!(adopted, Ok(Ok(_))) && self.reachable()
    }

    async fn changed(&self, change: RecordChange) {
        let (kind, name) = match &change {
            RecordChange::Bucket(name) => ("bucket", name),
            RecordChange::System(key) => ("system", key),
        };
        let key = format!("{ROOT}changes/{kind}");
        let value = format!("{kind}\n{name}\n{}", self.node);
        if let Err(e) = self.etcd.put(&key, value.as_bytes(), None).await {
            // The others read everything again when their watch breaks, and users and
            // policies in any case every IAM refresh.
            tracing::warn!(error = %e, ?change, "could not announce a change in etcd");
        }
    }
}

/// The records' keys in etcd.
/// Where etcd counts the record changes it decided, beside the records (so that deleting
/// the records, or restoring an older snapshot, takes the count back with them).
const REVISION_KEY: &str = "revision";

fn parse_revision(value: &[u8]) -> u64 {
    std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn record_key(key: &str) -> String {
    format!("{ROOT}records/{key}")
}

fn unavailable(error: EtcdError) -> RecordError {
    tracing::debug!(%error, "etcd did not answer a record call");
    RecordError::AuthorityUnreachable
}

impl ControlPlane {
    /// A record's value as etcd holds it, if it carries this cluster's seal for its key. One
    /// without (forged, moved from another key, or written before records were sealed) is
    /// taken for absent, which decides nothing: reads put the drives' copy in its place.
    fn opened(&self, key: &str, stored: &[u8]) -> Option<Vec<u8>> {
        let opened = self.seal.open(key, stored).map(<[u8]>::to_vec);
        if let (None, Some(held_back)) = (&opened, self.unsealed_warnings.admit()) {
            tracing::warn!(record = key, unsealed_since_last_warning = held_back, "a record in etcd without this cluster's seal (forged, or written before records were sealed): taken for absent; the drives' copy goes in its place");
        }
        opened
    }
}

/// Reads of records while etcd has not answered this node for a lease's time go straight to
/// the drives' copy, rather than each waiting for etcd to time out. Record values are sealed
/// (see [`super::seal`]); the records' revision is not (lowered, it makes nodes fill etcd from
/// the drives again; raised, it only makes the drives look behind).
#[async_trait]
impl RecordAuthority for ControlPlane {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, RecordError> {
        if !self.reachable() {
            return Err(RecordError::AuthorityUnreachable);
        }
        let kv = self.etcd.get(&record_key(key)).await.map_err(unavailable)?;
        Ok(kv.and_then(|kv| self.opened(key, &kv.value)))
    }

    async fn list(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, RecordError> {
        if !self.reachable() {
            return Err(RecordError::AuthorityUnreachable);
        }
        let root = record_key("");
        let (kvs, _) = self
            .etcd
            .list(&record_key(prefix))
            .await
            .map_err(unavailable)?;
        Ok((kvs.into_iter())
            .filter_map(|kv| {
                let key = kv.key[root.len()..].to_string();
                let value = self.opened(&key, &kv.value)?;
                Some((key, value))
            })
            .collect())
    }

    async fn revision(&self) -> Result<u64, RecordError> {
        if !self.reachable() {
            return Err(RecordError::AuthorityUnreachable);
        }
        let kv = (self.etcd.get(&record_key(REVISION_KEY)).await).map_err(unavailable)?;
        Ok(kv.map_or(0, |kv| parse_revision(&kv.value)))
    }

    async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
        revision: u64,
    ) -> Result<bool, RecordError> {
        let name = record_key(key);
        // Sealing is deterministic: the value decided on seals to the bytes etcd holds. Held
        // for absent, a value without the seal is what the swap compares.
        let expected = match expected {
            Some(value) => Some(self.seal.seal(key, value)),
            None => match self.etcd.get(&name).await.map_err(unavailable)? {
                Some(kv) if self.seal.open(key, &kv.value).is_none() => Some(kv.value),
                _ => None,
            },
        };
        let value = self.seal.seal(key, value);
        let counter = record_key(REVISION_KEY);
        let (held, next) = (revision.to_string(), (revision + 1).to_string());
        let held = (revision > 0).then_some(held.as_bytes());
        let expect = [
            (name.as_str(), expected.as_deref()),
            (counter.as_str(), held),
        ];
        let puts = [
            (name.as_str(), value.as_slice()),
            (counter.as_str(), next.as_bytes()),
        ];
        (self.etcd.put_if(&expect, &puts).await).map_err(unavailable)
    }

    async fn raise_revision(&self, from: u64, to: u64) -> Result<bool, RecordError> {
        let counter = record_key(REVISION_KEY);
        let (held, next) = (from.to_string(), to.to_string());
        let held = (from > 0).then_some(held.as_bytes());
        let put = [(counter.as_str(), next.as_bytes())];
        (self.etcd.put_if(&[(counter.as_str(), held)], &put).await).map_err(unavailable)
    }
}

/// An announced change and the node that made it.
fn parse_change(value: &[u8]) -> Option<(RecordChange, String)> {
    let text = std::str::from_utf8(value).ok()?;
    let mut lines = text.split('\n');
    let (kind, name, node) = (lines.next()?, lines.next()?, lines.next()?);
    let change = match kind {
        "bucket" => RecordChange::Bucket(name.to_string()),
        "system" => RecordChange::System(name.to_string()),
        _ => return None,
    };
    Some((change, node.to_string()))
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announced_changes_read_back() {
        let node = "127.0.0.1:9001".to_string();
        assert_eq!(
            parse_change(b"system\niam/user/alice\n127.0.0.1:9001"),
            Some((RecordChange::System("iam/user/alice".into()), node.clone()))
        );
        assert_eq!(
            parse_change(b"bucket\ndatasets\n127.0.0.1:9001"),
            Some((RecordChange::Bucket("datasets".into()), node))
        );
        assert_eq!(parse_change(b"nonsense"), None);
    }
}
