//! The format record that ties a drive folder to one position of one deployment.

use serde::{Deserialize, Serialize};

/// `<drive>/.strata/format.json`: written once when the deployment is created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Format {
    /// Format version of this record; 1 today.
    pub version: u32,
    /// Random id shared by every drive of the deployment.
    pub deployment_id: String,
    /// Which erasure set of its pool this drive belongs to (0-based).
    pub set_index: usize,
    /// Position of this drive within its set (0-based); it stores shard `drive_index`.
    pub drive_index: usize,
    /// Number of erasure sets in the drive's pool.
    pub set_count: usize,
    /// Data shards per set.
    pub data_shards: usize,
    /// Parity shards per set.
    pub parity_shards: usize,
    /// The drive's server pool, by position in the deployment's pool list (0-based). Drives
    /// formatted before pools existed have none: they are the first pool's.
    #[serde(default)]
    pub pool_index: usize,
    /// The pool's random id, shared by its drives; none on the first pool of a deployment
    /// made before pools, whose id is the deployment's (see [`Format::pool_id`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_id: Option<String>,
}

impl Format {
    /// The id of the drive's server pool.
    pub fn pool_id(&self) -> &str {
        self.pool_id.as_deref().unwrap_or(&self.deployment_id)
    }
}

/// `<drive>/.strata/pools.json`: the deployment's server pools as last recorded, on every
/// drive of every pool. A start must give these pools, in this order (it may add more).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolList {
    /// Grows by one with each change: of two lists found, the higher is the newer.
    pub generation: u64,
    pub pools: Vec<PoolEntry>,
}

/// One server pool as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolEntry {
    pub id: String,
    /// How many drives the pool has.
    pub drives: usize,
    #[serde(default)]
    pub state: RecordedPoolState,
    /// In a cluster, the pool's free space when the pools last changed: every node weighs
    /// new keys by it alike (a node's own measure could pick another pool for a new key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free: Option<u64>,
}

/// A server pool's state as the pool list records it (see `object::PoolState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordedPoolState {
    /// Added to a cluster by a rolling restart: served, but it takes no new keys until every
    /// node runs with it.
    Joining,
    /// It takes new keys.
    #[default]
    Active,
    /// Its keys are moving to the other pools (a decommission); it takes no new ones.
    Decommissioning,
    /// It holds nothing: it may be dropped from the command line.
    Retired,
}

impl RecordedPoolState {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordedPoolState::Joining => "joining",
            RecordedPoolState::Active => "active",
            RecordedPoolState::Decommissioning => "decommissioning",
            RecordedPoolState::Retired => "retired",
        }
    }
}
