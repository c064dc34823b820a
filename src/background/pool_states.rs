//! Where a server pool's state is recorded and how each node learns it: on the drives of a
//! single server, in etcd for a cluster (see `crate::cluster::pools`).
//!
//! In a cluster every node follows the record (the job here): it applies each pool's state
//! and recorded free space, notes the list's generation in its node record, and turns a
//! joining pool active once every node runs with it.

use std::sync::{Arc, Weak};
use std::time::Duration;

use anyhow::{bail, Context};
use async_trait::async_trait;

use crate::background::Worker;
use crate::cluster::control::ControlPlane;
use crate::deployment::{pool_state_taken, recorded_pool_state, Deployment};
use crate::object::{ObjectStore, PoolState};
use crate::storage::RecordedPoolState;

/// How often a node of a cluster reads the pool states from etcd.
const FOLLOW_EVERY: Duration = Duration::from_secs(1);

/// Records that the `index`th pool given at this start goes from `from` to `to`, where the
/// deployment records its pools (etcd in a cluster, the drives otherwise), then applies it
/// here. Refused when the pool is not in `from` any more.
pub async fn record_pool_state(
    deployment: &Arc<Deployment>,
    store: &ObjectStore,
    control: Option<&ControlPlane>,
    index: usize,
    (from, to): (PoolState, PoolState),
) -> anyhow::Result<()> {
    match control {
        Some(control) => {
            let id = deployment.pools[index].id.clone();
            let change = |list: &mut crate::storage::PoolList| {
                let entry = (list.pools.iter_mut())
                    .find(|entry| entry.id == id)
                    .ok_or("the pool is not in the cluster's pool list")?;
                if entry.state != recorded_pool_state(from) {
                    return Err(format!("the pool is {} now", entry.state.as_str()));
                }
                entry.state = recorded_pool_state(to);
                Ok(())
            };
            control.change_pools(change).await?;
        }
        None => {
            let deployment = deployment.clone();
            tokio::task::spawn_blocking(move || deployment.record_pool_state(index, to))
                .await
                .context("recording the pool state")??;
        }
    }
    store.pools()[index].set_state(to);
    Ok(())
}

/// In a cluster, why a drain may not move keys now: a node that serves the deployment has
/// not noted the pool list as etcd holds it (down, or not caught up). `None` when every node
/// has.
pub async fn nodes_behind(control: &ControlPlane) -> anyhow::Result<Option<String>> {
    let (record, _) = control.layout_record().await?;
    let generation = record.pool_list().generation;
    let up = control.nodes_up().await?;
    let behind: Vec<String> = (record.serving_nodes().into_iter())
        .filter(|node| !(up.iter()).any(|r| r.node == *node && r.pools_generation >= generation))
        .collect();
    Ok((!behind.is_empty()).then(|| {
        format!(
            "waiting for node(s) {} to apply the pool states",
            behind.join(", ")
        )
    }))
}

/// Follows a cluster's pool states in etcd.
pub struct FollowPoolStates {
    pub control: Weak<ControlPlane>,
    pub store: Arc<ObjectStore>,
    pub deployment: Arc<Deployment>,
}

#[async_trait]
impl Worker for FollowPoolStates {
    fn name(&self) -> &'static str {
        "pool-states"
    }

    fn interval(&self) -> Duration {
        FOLLOW_EVERY
    }

    fn first_pass_after(&self) -> Duration {
        Duration::ZERO
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        let control = self
            .control
            .upgrade()
            .context("the control plane stopped")?;
        let (record, _) = control.layout_record().await?;
        let list = record.pool_list();
        let given = self.store.pools().iter().zip(&self.deployment.pools);
        for (pool, shape) in given {
            let Some(entry) = list.pools.iter().find(|entry| entry.id == shape.id) else {
                bail!("pool {} is not in the cluster's pool list", shape.id);
            };
            if let Some(free) = entry.free {
                pool.weigh_by(free);
            }
            pool.set_state(pool_state_taken(entry.state));
        }
        control.note_pools(list.generation).await?;

        let joining: Vec<&str> = (list.pools.iter())
            .filter(|entry| entry.state == RecordedPoolState::Joining)
            .map(|entry| entry.id.as_str())
            .collect();
        let served_here = |id: &&str| self.deployment.pools.iter().any(|p| p.id == *id);
        if joining.is_empty() || !joining.iter().all(served_here) {
            return Ok(format!("pool list generation {}", list.generation));
        }
        // A joining pool takes keys once every node runs with it.
        let up = control.nodes_up().await?;
        let without: Vec<String> = (record.serving_nodes().into_iter())
            .filter(|node| {
                !(up.iter()).any(|r| {
                    r.node == *node && joining.iter().all(|id| r.pools.iter().any(|p| p == id))
                })
            })
            .collect();
        if !without.is_empty() {
            return Ok(format!(
                "{} pool(s) joining: waiting for node(s) {} to run with them",
                joining.len(),
                without.join(", ")
            ));
        }
        let mut free = Vec::new();
        let given = self.store.pools().iter().zip(&self.deployment.pools);
        for (pool, shape) in given.filter(|(pool, _)| pool.state() != PoolState::Retired) {
            free.push((shape.id.clone(), self.store.pool_free(pool).await));
        }
        let activate = |list: &mut crate::storage::PoolList| {
            for entry in &mut list.pools {
                if let Some((_, bytes)) = free.iter().find(|(id, _)| *id == entry.id) {
                    entry.free = Some(*bytes);
                }
                if joining.contains(&entry.id.as_str()) && entry.state == RecordedPoolState::Joining
                {
                    entry.state = RecordedPoolState::Active;
                }
            }
            Ok(())
        };
        let list = control.change_pools(activate).await?;
        tracing::warn!(
            pools = joining.len(),
            "every node runs with the new server pool(s): they take new keys now"
        );
        Ok(format!(
            "{} pool(s) active at generation {}",
            joining.len(),
            list.generation
        ))
    }
}
