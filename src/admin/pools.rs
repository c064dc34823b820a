//! The admin API's server pool operations: decommission and rebalance (see
//! `crate::background::decommission` and `crate::background::rebalance`).

use axum::http::StatusCode;
use axum::response::Response;
use indicatif::HumanBytes;
use serde::{Deserialize, Serialize};

use super::api::{error, info, json, AdminError, AdminState, DISK_INFO_TIMEOUT};
use crate::background::decommission::start_drain;
use crate::background::pool_states::record_pool_state;
use crate::background::rebalance::{RebalanceState, Rebalancing};
use crate::deployment::Deployment;
use crate::object::{PoolState, PoolUsage};
use crate::query::Query;
use crate::storage::{DiskInfo, Drive};

/// Starts or cancels the decommission of a pool (`pool`: its place on the command line from 1,
/// or its id; `action`: `start` or `cancel`). Answers the pool as `info` shows it.
pub(super) async fn decommission(
    state: &AdminState,
    query: &Query,
) -> Result<Response, AdminError> {
    let pools = state.store.pools();
    let asked = query.get("pool").unwrap_or_default();
    let index = (state.deployment.pools.iter().enumerate())
        .find(|(i, pool)| asked == (i + 1).to_string() || asked == pool.id)
        .map(|(i, _)| i)
        .ok_or_else(|| AdminError::invalid(format!("no server pool {asked:?}")))?;
    let conflict = |message: String| Ok(error(StatusCode::CONFLICT, "InvalidPoolState", message));
    let new_state = match (query.get("action"), pools[index].state()) {
        (Some("start"), PoolState::Active) => PoolState::Decommissioning,
        (Some("cancel"), PoolState::Decommissioning) => PoolState::Active,
        (Some("start" | "cancel"), now) => {
            return conflict(format!("pool {} is {}", index + 1, now.as_str()));
        }
        _ => return Err(AdminError::invalid("the action must be start or cancel")),
    };
    if new_state == PoolState::Decommissioning {
        state
            .rebalancing
            .load(&state.store)
            .await
            .map_err(internal)?;
        if state.rebalancing.is_running() {
            return conflict("a rebalance is running: stop it first".into());
        }
        let others_active = (pools.iter().enumerate())
            .any(|(i, pool)| i != index && pool.state() == PoolState::Active);
        if !others_active {
            return conflict("no other active pool can take the pool's keys".into());
        }
        // The data the pool holds must fit in what the others can still take.
        let (holds, free) = (state.store.room_to_drain(index).await).map_err(internal)?;
        if holds > free {
            return conflict(format!(
                "the other pools can take {} of data, but pool {} holds {}: add room first",
                HumanBytes(free),
                index + 1,
                HumanBytes(holds)
            ));
        }
    }
    let control = state.control.as_deref();
    let (store, deployment) = (&state.store, &state.deployment);
    let changed = match new_state {
        PoolState::Decommissioning => {
            start_drain(&state.drains, store, deployment, control, index).await
        }
        _ => {
            let change = (pools[index].state(), new_state);
            record_pool_state(deployment, store, control, index, change).await
        }
    };
    changed.map_err(|e| AdminError::internal(format!("{e:#}")))?;
    tracing::warn!(
        pool = index + 1,
        state = new_state.as_str(),
        "server pool state changed on an operator's request"
    );
    let info = info(state).await;
    Ok(json(StatusCode::OK, &info.pools[index]))
}

/// Every drive's space, in position order; `None` for a drive that did not answer in time.
pub(super) async fn drive_sizes(deployment: &Deployment) -> Vec<Option<DiskInfo>> {
    futures::future::join_all(deployment.drives.iter().map(|drive| async {
        tokio::time::timeout(DISK_INFO_TIMEOUT, drive.slot.disk_info())
            .await
            .ok()
            .and_then(Result::ok)
    }))
    .await
}

/// Each pool's drives' space (`sizes` from [`drive_sizes`]), summed over those that answered.
pub(super) fn pool_space(deployment: &Deployment, sizes: &[Option<DiskInfo>]) -> Vec<DiskInfo> {
    (deployment.pools.iter())
        .map(|pool| {
            let sets = pool.sets.clone();
            let mut sum = DiskInfo::default();
            for (drive, size) in deployment.drives.iter().zip(sizes) {
                if let (true, Some(size)) = (sets.contains(&drive.set_index), size) {
                    sum.total += size.total;
                    sum.used += size.used;
                    sum.free += size.free;
                }
            }
            sum
        })
        .collect()
}

/// Where the rebalance stands.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RebalanceView {
    /// `running`, `stopped`, `completed`, or `none` when none ever ran.
    pub state: String,
    /// Unix milliseconds.
    pub started_ms: Option<i64>,
    pub ended_ms: Option<i64>,
    /// What the server that rebalances moved since it started the rebalance (or started).
    pub keys_moved: u64,
    pub versions_moved: u64,
    pub bytes_moved: u64,
    pub failures: u64,
    /// Each pool, as the last pass counted it (or as counted now, before any pass).
    pub pools: Vec<PoolFill>,
}

/// What a pool holds against what it can hold.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PoolFill {
    /// From 0; shown from 1.
    pub index: usize,
    /// `None` for a pool that is not active (a rebalance leaves it be).
    pub usage: Option<PoolUsage>,
}

/// Starts or stops the rebalance (`action`: `start` or `stop`), or with no action (a GET)
/// tells where it stands.
pub(super) async fn rebalance(
    state: &AdminState,
    query: Option<&Query>,
) -> Result<Response, AdminError> {
    let rebalancing = &state.rebalancing;
    let store = &state.store;
    rebalancing.load(store).await.map_err(internal)?;
    let conflict = |message: &str| {
        Ok(error(
            StatusCode::CONFLICT,
            "InvalidPoolState",
            message.into(),
        ))
    };
    match query.map(|q| q.get("action")) {
        None => {}
        Some(Some("start")) => {
            let pools = store.pools();
            if pools
                .iter()
                .any(|p| p.state() == PoolState::Decommissioning)
            {
                return conflict("a pool is being decommissioned: a rebalance waits for it to end");
            }
            if pools
                .iter()
                .filter(|p| p.state() == PoolState::Active)
                .count()
                < 2
            {
                return conflict("a rebalance needs two active pools");
            }
            if rebalancing.is_running() {
                return conflict("a rebalance is running already");
            }
            rebalancing.start(store).await.map_err(internal)?;
            tracing::warn!("pool rebalance started on an operator's request");
        }
        Some(Some("stop")) => {
            let stopped = rebalancing.end(store, RebalanceState::Stopped).await;
            if stopped.map_err(internal)?.is_none() {
                return conflict("no rebalance is running");
            }
            tracing::warn!("pool rebalance stopped on an operator's request");
        }
        Some(_) => return Err(AdminError::invalid("the action must be start or stop")),
    }
    Ok(json(StatusCode::OK, &rebalance_view(state).await?))
}

async fn rebalance_view(state: &AdminState) -> Result<RebalanceView, AdminError> {
    let rebalancing = &state.rebalancing;
    let record = rebalancing.record();
    let last_pass = rebalancing.last_pass.lock().expect("rebalance").clone();
    let usage = match last_pass {
        Some(pass) => pass.usage,
        None => {
            let mut counted = Vec::new();
            for pool in state.store.pools() {
                counted.push(match pool.state() {
                    PoolState::Active => {
                        Some(state.store.pool_usage(pool).await.map_err(internal)?)
                    }
                    _ => None,
                });
            }
            counted
        }
    };
    // In a cluster the node elected for the rebalance publishes what it moved.
    let moved = match &state.control {
        Some(_) => Rebalancing::published(&state.store)
            .await
            .unwrap_or_default(),
        None => rebalancing.progress.counts(),
    };
    Ok(RebalanceView {
        state: record.map_or("none", |r| r.state.as_str()).into(),
        started_ms: record.map(|r| r.started_ms),
        ended_ms: record.and_then(|r| r.ended_ms),
        keys_moved: moved.keys,
        versions_moved: moved.versions,
        bytes_moved: moved.bytes,
        failures: moved.failures,
        pools: (usage.into_iter().enumerate())
            .map(|(index, usage)| PoolFill { index, usage })
            .collect(),
    })
}

fn internal(e: crate::object::ObjectError) -> AdminError {
    AdminError::internal(e.to_string())
}
