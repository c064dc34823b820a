//! Builds the server's one state value from its configuration and serves HTTP.

use std::sync::Arc;

use anyhow::{bail, Context};
use tokio::net::TcpListener;

use crate::api::{self, auth, AppState};
use crate::background;
use crate::config::ServerConfig;
use crate::deployment;
use crate::healing::{DriveMonitor, Healer, Scrubber};
use crate::object::ObjectStore;

/// Opens the drives, binds the address and serves until SIGINT or SIGTERM.
pub async fn run(config: ServerConfig) -> anyhow::Result<()> {
    if config.default_credentials {
        tracing::warn!(
            "STRATA_ROOT_USER/STRATA_ROOT_PASSWORD are not set: using the default credentials \
             {}/{}; anyone who knows them can read and write everything. Listening on loopback only.",
            config.root_user,
            config.root_password
        );
        if !config.address.ip().is_loopback() {
            bail!(
                "refusing to listen on {} with the default credentials: set STRATA_ROOT_USER and \
                 STRATA_ROOT_PASSWORD, or listen on a loopback address such as 127.0.0.1",
                config.address
            );
        }
    }
    raise_open_file_limit();
    let deployment = {
        let config = config.clone();
        tokio::task::spawn_blocking(move || deployment::open(&config))
            .await
            .context("opening drives")??
    };
    let mut deployment = deployment;
    let set_count = deployment.sets.len();
    let store = ObjectStore::new(std::mem::take(&mut deployment.sets), &deployment.id);
    let deployment = Arc::new(deployment);
    background::spawn(background::StaleUploadCleaner {
        store: store.clone(),
        expiry: config.stale_upload_expiry,
        interval: config.stale_upload_scan,
    });
    let healer = Arc::new(Healer::default());
    healer.spawn_read_healer(store.clone());
    background::spawn(DriveMonitor {
        deployment: deployment.clone(),
        config: config.clone(),
        store: store.clone(),
        healer: healer.clone(),
        // Drives formatted at this start get everything once the server is up.
        heal_pending: !deployment.formatted.is_empty(),
    });
    background::spawn(Scrubber {
        store: store.clone(),
        healer: healer.clone(),
        interval: config.healing.scrub_interval,
        max_rate: config.healing.scrub_rate,
        orphan_age: config.healing.orphan_age,
    });
    let state = Arc::new(AppState {
        store,
        keyring: auth::Keyring::new(
            auth::Credentials {
                access_key: config.root_user.clone(),
                secret_key: config.root_password.clone(),
            },
            config.region.clone(),
        ),
        owner: config.root_user.clone(),
        domain: config.domain.clone(),
        deployment: deployment.clone(),
        healer: healer.clone(),
    });

    let listener = TcpListener::bind(config.address)
        .await
        .with_context(|| format!("binding {}", config.address))?;
    let address = listener.local_addr()?;
    tracing::info!(
        deployment = %deployment.id,
        drives = config.drives.len(),
        sets = set_count,
        layout = %format!("{} set(s) of {}+{} (data+parity)", set_count, config.data_shards, config.parity_shards),
        offline = deployment.offline.len(),
        "serving S3 over {} drive(s)",
        config.drives.len()
    );
    for drive in &deployment.offline {
        tracing::warn!(drive = %drive.display(), "drive offline: objects stay readable while each set keeps {} drives", config.data_shards);
    }
    tracing::info!(
        "connect with: AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY=… aws --endpoint-url http://{address} s3 ls",
        config.root_user
    );
    tracing::info!("listening on http://{address}");

    axum::serve(listener, api::router(state))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .context("serving")?;
    tracing::info!("stopped");
    Ok(())
}

/// GETs of multipart objects keep a shard file open per part and drive.
fn raise_open_file_limit() {
    if let Ok((_, hard)) = rlimit::Resource::NOFILE.get() {
        let _ = rlimit::Resource::NOFILE.set(hard, hard);
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}
