//! Tier backends: the places lifecycle transitions move object data to, built from the tiers
//! file. The object layer defines what a tier is (`crate::object::Tier`); this module only
//! implements it, for a second local drive pool (`PoolTier`, through its own object store)
//! and a remote S3-compatible bucket (`RemoteS3Tier`). It knows nothing of the records that
//! point at tiered data, nor of lifecycle rules.

mod body;
mod config;
mod pool;
mod remote;

use std::sync::Arc;

use crate::config::HealingConfig;
use crate::object::{Tier, Tiers};

use crate::background::Jobs;
pub use config::{
    load_tiers, parse_tiers, PoolConfig, RemoteConfig, TierConfig, TierConfigs, TierKind,
    DEFAULT_PART_SIZE,
};
pub use pool::{PoolTier, POOL_BUCKET};
pub use remote::RemoteS3Tier;

/// Opens every configured tier: pools format and open their drives, remote tiers only
/// prepare a client (an unreachable remote is reported by its first call, not here).
/// Pools check, heal and scrub their drives as `healing` says, like the server's own, with
/// their jobs in `jobs`.
pub async fn build_tiers(
    configs: &TierConfigs,
    healing: &HealingConfig,
    jobs: &Jobs,
) -> anyhow::Result<Tiers> {
    let mut tiers = Vec::with_capacity(configs.tiers.len());
    for config in &configs.tiers {
        tiers.push(build_tier(config, healing, jobs).await?);
    }
    Ok(Tiers::new(tiers))
}

/// Opens one tier.
pub async fn build_tier(
    config: &TierConfig,
    healing: &HealingConfig,
    jobs: &Jobs,
) -> anyhow::Result<Arc<dyn Tier>> {
    Ok(match &config.kind {
        TierKind::Pool(pool) => Arc::new(PoolTier::open(&config.name, pool, healing, jobs).await?),
        TierKind::S3(remote) => Arc::new(RemoteS3Tier::new(&config.name, remote)?),
    })
}
