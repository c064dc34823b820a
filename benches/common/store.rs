//! The store opened in-process over a bench's drive folders, as the server opens it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use strata::config::ServerConfig;
use strata::erasure::DEFAULT_BLOCK_SIZE;
use strata::object::{BucketName, ObjectStore};

use super::{DATA, PARITY, PASSWORD, REGION, USER};

/// The configuration of a bench deployment over `drives`.
fn config(drives: &[PathBuf]) -> ServerConfig {
    ServerConfig {
        address: "127.0.0.1:0".parse().expect("address"),
        drives: drives.to_vec(),
        pools: Vec::new(),
        data_shards: DATA,
        parity_shards: PARITY,
        block_size: DEFAULT_BLOCK_SIZE,
        root_user: USER.into(),
        root_password: PASSWORD.into(),
        default_credentials: false,
        region: REGION.into(),
        default_object_ownership: None,
        domain: None,
        stale_upload_expiry: Duration::from_secs(3600),
        stale_upload_scan: Duration::from_secs(3600),
        healing: Default::default(),
        listener: Default::default(),
        metrics: Default::default(),
        limits: Default::default(),
        lifecycle: Default::default(),
        decommission_duty: strata::config::DEFAULT_DECOMMISSION_DUTY,
        cluster: None,
        console: strata::config::ConsoleAddress::Off,
    }
}

/// The store opened in-process over the drives, the way the server opens it. It must be
/// dropped before a server starts over them: each drive's database admits one process.
pub fn open_store(drives: &[PathBuf]) -> Arc<ObjectStore> {
    let deployment = strata::deployment::open(&config(drives), false, None).expect("drives open");
    assert_eq!(
        deployment.sets.len(),
        1,
        "the fill places every key in set 0"
    );
    ObjectStore::new(deployment.sets, &deployment.id)
}

/// A store of server pools over `pools` (each a deployment's worth of drive folders), the
/// way the server opens one started with `--pool` per pool.
pub fn open_pooled_store(pools: &[Vec<PathBuf>]) -> Arc<ObjectStore> {
    let config = ServerConfig {
        pools: (pools.iter())
            .map(|drives| strata::config::PoolSpec {
                drives: drives.len(),
                data_shards: DATA,
                parity_shards: PARITY,
            })
            .collect(),
        ..config(&pools.concat())
    };
    let mut deployment = strata::deployment::open(&config, false, None).expect("drives open");
    let ranges = deployment.pools.iter().map(|p| p.sets.clone()).collect();
    ObjectStore::pooled(std::mem::take(&mut deployment.sets), &deployment.id, ranges)
}

pub fn bucket(name: &str) -> BucketName {
    BucketName::parse(name).expect("valid bucket name")
}
