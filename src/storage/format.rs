//! The format record that ties a drive folder to one position of one deployment.

use serde::{Deserialize, Serialize};

/// `<drive>/.strata/format.json`: written once when the deployment is created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Format {
    /// Format version of this record; 1 today.
    pub version: u32,
    /// Random id shared by every drive of the deployment.
    pub deployment_id: String,
    /// Which erasure set this drive belongs to (0-based).
    pub set_index: usize,
    /// Position of this drive within its set (0-based); it stores shard `drive_index`.
    pub drive_index: usize,
    /// Number of erasure sets in the deployment.
    pub set_count: usize,
    /// Data shards per set.
    pub data_shards: usize,
    /// Parity shards per set.
    pub parity_shards: usize,
}
