//! A cluster's server pools in etcd: the pool list every node must start with, each pool's
//! state, and how a pool added by a rolling restart comes to take keys.
//!
//! The `layout` key holds every pool ever recorded, in order, retired ones included. A node
//! must be started with those pools in that order (it may leave out a retired pool, never
//! another) and may add pools after them. A pool added so is *joining*: it is served but
//! takes no new keys, since the nodes still running without it would not look there, and a
//! key written there would be absent through them. Once every node's record in etcd lists
//! it, any node turns it active, recording each pool's free space so that every node
//! weighs new keys alike (and so picks the same pool for a new key).
//!
//! A state change (a decommission started or cancelled, a pool retired) is a
//! compare-and-swap of the record; each node applies what it reads and notes the list's
//! generation in its node record. A drain moves keys only while every node has noted the
//! generation it started at.

use serde::{Deserialize, Serialize};

use super::layout::ClusterLayout;
use crate::storage::{PoolEntry, PoolList, RecordedPoolState};

/// What etcd holds of the layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutRecord {
    pub deployment_id: String,
    /// Every pool ever recorded, in order, retired ones included.
    pub layout: ClusterLayout,
    /// Each pool's id and state, in the layout's pool order (empty in a record written before
    /// pools: one active pool).
    #[serde(default)]
    pub pools: PoolList,
}

impl LayoutRecord {
    /// The record the first node of a deployment writes: its pools, all active.
    pub fn first(deployment_id: &str, layout: &ClusterLayout) -> Self {
        let pools = (layout.pools().iter())
            .map(|pool| entry(pool, RecordedPoolState::Active))
            .collect();
        LayoutRecord {
            deployment_id: deployment_id.to_string(),
            layout: layout.clone(),
            pools: PoolList {
                generation: 1,
                pools,
            },
        }
    }

    /// Each pool's id and state, in order.
    pub fn pool_list(&self) -> PoolList {
        match self.pools.pools.is_empty() {
            true => LayoutRecord::first(&self.deployment_id, &self.layout).pools,
            false => self.pools.clone(),
        }
    }

    /// Whether a node started with `ours` fits the record: `Ok(None)` when it gives the
    /// recorded pools (retired ones may be left out), `Ok(Some(record))` when it adds pools
    /// after them (the record with those pools, joining), `Err` with why not.
    pub fn admit(&self, ours: &ClusterLayout) -> Result<Option<LayoutRecord>, String> {
        let recorded = self.layout.pools();
        let list = self.pool_list();
        let given = ours.pools();
        let mut next = 0;
        for (index, (pool, entry)) in recorded.iter().zip(&list.pools).enumerate() {
            if given.get(next) == Some(pool) {
                next += 1;
                continue;
            }
            if entry.state == RecordedPoolState::Retired {
                continue;
            }
            let why = match given.get(next) {
                Some(_) if given[next..].contains(pool) => format!(
                    "server pool {} ({}) is given out of its order",
                    index + 1,
                    entry.id
                ),
                Some(other) if other.nodes == pool.nodes => format!(
                    "server pool {} ({}) is given otherwise: {}",
                    index + 1,
                    entry.id,
                    pool.differences(other).join("; ")
                ),
                _ => format!(
                    "server pool {} ({}, {}) holds data and must be given: a pool leaves a \
                     deployment only once a decommission has retired it",
                    index + 1,
                    entry.id,
                    entry.state.as_str()
                ),
            };
            return Err(why);
        }
        let added = &given[next..];
        if added.is_empty() {
            return Ok(None);
        }
        let recorded_drives: Vec<_> = self.layout.sets.iter().flatten().collect();
        if let Some(reused) = (added.iter().flat_map(|pool| pool.sets.iter().flatten()))
            .find(|drive| recorded_drives.contains(drive))
        {
            return Err(format!(
                "drive {}{} of a new pool belongs to a recorded pool",
                reused.node, reused.path
            ));
        }
        let mut extended = self.clone();
        let all: Vec<ClusterLayout> = recorded.iter().chain(added).cloned().collect();
        extended.layout = ClusterLayout::joined(&all);
        extended.pools = list;
        for pool in added {
            let joining = entry(pool, RecordedPoolState::Joining);
            extended.pools.pools.push(joining);
        }
        extended.pools.generation += 1;
        Ok(Some(extended))
    }

    /// The nodes of the pools that are not retired: every one must run with a joining pool
    /// before it takes keys, and note a state change before a drain moves keys.
    pub fn serving_nodes(&self) -> Vec<String> {
        let list = self.pool_list();
        let mut nodes: Vec<String> = Vec::new();
        let pools = self.layout.pools();
        for (pool, entry) in pools.iter().zip(&list.pools) {
            if entry.state == RecordedPoolState::Retired {
                continue;
            }
            for node in &pool.nodes {
                if !nodes.contains(node) {
                    nodes.push(node.clone());
                }
            }
        }
        nodes
    }
}

/// A pool's entry in the list, by the pool's own id (a deployment's first pool derived the
/// deployment's id, so it has that).
fn entry(pool: &ClusterLayout, state: RecordedPoolState) -> PoolEntry {
    PoolEntry {
        id: pool.pool_id(),
        drives: pool.sets.iter().map(Vec::len).sum(),
        state,
        free: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::layout::{expand_endpoints, plan_pools};

    fn layout(pools: &[&str]) -> ClusterLayout {
        let pools = (pools.iter())
            .map(|arg| (expand_endpoints(&[arg.to_string()]).unwrap(), 2, 1))
            .collect();
        plan_pools(pools, false).unwrap()
    }

    const FIRST: &str = "http://n{1...3}:9000/d{1...2}";
    const SECOND: &str = "http://n{4...6}:9000/d{1...2}";
    const THIRD: &str = "http://n{7...9}:9000/d{1...2}";

    #[test]
    fn a_pool_added_after_the_recorded_ones_joins() {
        let one = layout(&[FIRST]);
        let record = LayoutRecord::first(&one.deployment_id(), &one);
        assert_eq!(record.admit(&one), Ok(None));
        let two = layout(&[FIRST, SECOND]);
        assert_eq!(
            two.deployment_id(),
            one.deployment_id(),
            "adding a pool keeps the deployment's id"
        );
        let extended = record.admit(&two).unwrap().expect("a pool is added");
        let list = extended.pool_list();
        assert_eq!(list.generation, 2);
        assert_eq!(list.pools[0].id, one.deployment_id());
        assert_eq!(list.pools[1].state, RecordedPoolState::Joining);
        assert_eq!(list.pools[1].id, two.pools()[1].pool_id());
        assert_eq!(extended.layout, two);
        assert_eq!(extended.admit(&two), Ok(None));
        assert_eq!(extended.serving_nodes().len(), 6);
    }

    #[test]
    fn a_pool_cannot_be_dropped_changed_or_moved_unless_retired() {
        let two = layout(&[FIRST, SECOND]);
        let mut record = LayoutRecord::first(&two.deployment_id(), &two);
        let dropped = record.admit(&layout(&[FIRST])).unwrap_err();
        assert!(dropped.contains("must be given"), "{dropped}");
        let swapped = record.admit(&layout(&[SECOND, FIRST])).unwrap_err();
        assert!(swapped.contains("out of its order"), "{swapped}");
        let changed = record
            .admit(&layout(&[FIRST, "http://n{4...6}:9000/e{1...2}"]))
            .unwrap_err();
        assert!(changed.contains("given otherwise"), "{changed}");

        record.pools.pools[0].state = RecordedPoolState::Retired;
        assert_eq!(record.admit(&layout(&[SECOND])), Ok(None));
        assert_eq!(record.serving_nodes().len(), 3);
        let grown = record.admit(&layout(&[SECOND, THIRD])).unwrap().unwrap();
        assert_eq!(
            grown.pool_list().pools.len(),
            3,
            "the retired pool keeps its place"
        );
        assert_eq!(grown.deployment_id, two.deployment_id());
    }

    #[test]
    fn a_record_made_before_pools_is_one_active_pool() {
        let one = layout(&[FIRST]);
        let mut old = LayoutRecord::first(&one.deployment_id(), &one);
        old.pools = PoolList::default();
        let json = serde_json::to_string(&old).unwrap();
        assert!(!json.contains("pool_sets"), "{json}");
        let list = old.pool_list();
        assert_eq!(list.pools.len(), 1);
        assert_eq!(list.pools[0].state, RecordedPoolState::Active);
        assert_eq!(list.pools[0].id, one.deployment_id());
    }
}
