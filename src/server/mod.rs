//! Builds the server's one state value from its configuration and serves HTTP
//! ([`listener`]).

mod front;
mod kms;
pub mod limit;
mod listener;
pub mod metrics;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use anyhow::{bail, Context};
use tokio::net::TcpListener;

use crate::admin::api::AdminState;
use crate::api::{auth, S3State};
use crate::background;
use crate::background::healing::{DriveMonitor, Healer, Scrubber};
use crate::background::usage::{Usage, UsageScanner};
use crate::cluster::control::ControlPlane;
use crate::cluster::etcd::Etcd;
use crate::cluster::seal::RecordSeal;
use crate::config::ServerConfig;
use crate::deployment::{self, Deployment};
use crate::lifecycle::{LifecycleScanner, LifecycleStatus, Pace};
use crate::object::acl::ObjectOwnership;
use crate::object::ObjectStore;
use crate::records::changes::RecordChange;
use crate::server::metrics::Metrics;
use crate::storage::Drive;
use crate::tls;
use front::AppState;

/// How often users and policies are read again from the drives (changes made through this
/// server's admin API apply at once).
const IAM_REFRESH: std::time::Duration = std::time::Duration::from_secs(30);
/// The same with several nodes, whose changes this node hears of only by reading them.
const CLUSTER_IAM_REFRESH: std::time::Duration = std::time::Duration::from_secs(2);

/// Serves this node's drives to the other nodes of its cluster, on its port plus
/// [`config::DRIVE_PORT_OFFSET`] (on `--drive-address` if given), each call authenticated
/// with the cluster secret.
async fn serve_drives(
    config: &ServerConfig,
    cluster: &crate::config::ClusterConfig,
    deployment: &Deployment,
    certificates: Option<Arc<tls::Certificates>>,
) -> anyhow::Result<()> {
    let auth = cluster.auth()?;
    let drives: HashMap<String, Arc<dyn Drive>> = (deployment.drives.iter())
        .filter(|drive| !drive.is_remote())
        .map(|drive| {
            let slot: Arc<dyn Drive> = drive.slot.clone();
            (drive.path.display().to_string(), slot)
        })
        .collect();
    let mut address = config.address;
    if let Some(ip) = cluster.drive_ip {
        address.set_ip(ip);
    }
    address.set_port(
        (address.port().checked_add(crate::config::DRIVE_PORT_OFFSET))
            .context("the S3 port is too high for a drive service port above it")?,
    );
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("binding the drive service to {address}"))?;
    let scheme = if certificates.is_some() {
        "https"
    } else {
        "http"
    };
    tracing::info!(node = %cluster.this_node, drives = drives.len(), "serving this node's drives to the others on {scheme}://{address}");
    // Peers sign each call for this node as the layout names it.
    let target = crate::config::drive_service_address(&cluster.this_node)?;
    let service = crate::cluster::drive_service::drive_service(drives, auth, target);
    // The S3 listener's deadlines and connection cap hold here too, against whoever reaches
    // the port without the secret. Not the per-client cap (a peer is one client holding many
    // connections) nor the least upload rate (a shard arrives at a fraction of its upload's).
    let limits = crate::config::ListenerConfig {
        max_connections_per_client: config.listener.max_connections,
        min_upload_rate: 0,
        ..config.listener.clone()
    };
    tokio::spawn(async move {
        // Serves until the process ends: peers read this node's drives while it drains.
        let never = std::future::pending();
        if let Err(e) = listener::serve(listener, service, certificates, limits, never).await {
            tracing::error!(error = %e, "the drive service stopped");
        }
    });
    Ok(())
}

/// Serves the web console on its address, its S3 calls answered through the front door as
/// the signed-in user's; without it when its default port is taken.
async fn serve_console(
    config: &ServerConfig,
    s3_address: std::net::SocketAddr,
    state: &Arc<AppState>,
    certificates: Option<Arc<tls::Certificates>>,
) -> anyhow::Result<()> {
    let Some(address) = config.console.address() else {
        return Ok(());
    };
    let listener = match TcpListener::bind(address).await {
        Ok(listener) => listener,
        Err(e) if config.console.is_default() => {
            tracing::warn!(%address, error = %e, "the console's default address is taken: serving without a console (--console-address names another)");
            return Ok(());
        }
        Err(e) => return Err(e).with_context(|| format!("binding the console to {address}")),
    };
    let address = listener.local_addr()?;
    let front_door = state.clone();
    let s3: crate::console::S3Call = Arc::new(move |request, identity, access_key| {
        let state = front_door.clone();
        Box::pin(async move { front::answer_as(&state, request, identity, access_key).await })
    });
    let tls = certificates.is_some();
    let metrics = state.metrics.clone();
    let totals: crate::console::RequestTotals = Arc::new(move || metrics.totals().read());
    let addresses = (address, s3_address);
    let keyring = state.s3.keyring.clone();
    let console = crate::console::Console::new(keyring, (s3, totals), addresses, tls);
    let scheme = if tls { "https" } else { "http" };
    tracing::info!("web console at {scheme}://{address}");
    let limits = config.listener.clone();
    tokio::spawn(async move {
        let router = crate::console::router(Arc::new(console));
        let never = std::future::pending();
        if let Err(e) = listener::serve(listener, router, certificates, limits, never).await {
            tracing::error!(error = %e, "the console stopped");
        }
    });
    Ok(())
}

/// Opens the drives, binds the address and serves until SIGINT or SIGTERM.
pub async fn run(config: ServerConfig) -> anyhow::Result<()> {
    if config.default_credentials {
        tracing::warn!(
            "STRATA_ROOT_USER/STRATA_ROOT_PASSWORD are not set: using the default credentials \
             {}/{}; anyone who knows them can read and write everything. Listening on loopback only.",
            config.root_user,
            config.root_password
        );
        let addresses = std::iter::once(config.address).chain(config.console.address());
        if let Some(open) = addresses.into_iter().find(|a| !a.ip().is_loopback()) {
            bail!(
                "refusing to listen on {open} with the default credentials: set STRATA_ROOT_USER \
                 and STRATA_ROOT_PASSWORD, or listen on a loopback address such as 127.0.0.1",
            );
        }
    }
    // A bad certificate or key is refused before the drives are touched.
    let certificates = match &config.listener.certs_dir {
        Some(dir) => Some(
            tls::Certificates::load(dir)
                .with_context(|| format!("--certs-dir {}", dir.display()))?,
        ),
        None => None,
    };
    raise_open_file_limit();
    // A node whose layout differs from the cluster's is refused before its drives are touched.
    // With etcd, the deployment's id and server pools are the ones recorded there.
    let mut config = config;
    let found_id = deployment::found_deployment_id(&config.drives);
    let mut recorded_pools = None;
    let control = match (config.cluster.as_mut()).filter(|c| !c.etcd.endpoints.is_empty()) {
        Some(cluster) => {
            let etcd = Etcd::connect(cluster.etcd.clone())?;
            let record =
                ControlPlane::agree_on_layout(&etcd, &cluster.layout, found_id.as_deref()).await?;
            cluster.deployment_id = record.deployment_id.clone();
            let seal = RecordSeal::new(cluster.auth()?);
            let pools = (cluster.layout.pools().iter())
                .map(|p| p.pool_id())
                .collect();
            let node = &cluster.this_node;
            let control = ControlPlane::join(etcd, &cluster.layout, node, pools, seal).await?;
            recorded_pools = Some(record.pool_list());
            Some(control)
        }
        None => None,
    };
    let config = config;
    // Tiers a node of a cluster could not share are refused before the drives are touched.
    let tier_configs = match &config.lifecycle.tiers_file {
        Some(path) => Some(
            crate::tier::load_tiers(path).with_context(|| format!("--tiers {}", path.display()))?,
        ),
        None => None,
    };
    if config.cluster.is_some() {
        if let Some(tiers) = &tier_configs {
            tiers.check_fit_for_a_cluster()?;
        }
    }
    if let Some(control) = &control {
        let fingerprints = tier_configs
            .as_ref()
            .map(|tiers| tiers.fingerprints())
            .unwrap_or_default();
        control.agree_on_tiers(&fingerprints).await?;
    }
    let formatted_before = match &control {
        Some(control) => control.formatted_before().await?,
        None => false,
    };
    let deployment = {
        let config = config.clone();
        tokio::task::spawn_blocking(move || {
            deployment::open(&config, formatted_before, recorded_pools.as_ref())
        })
        .await
        .context("opening drives")??
    };
    if let Some(control) = &control {
        control.note_formatted().await?;
    }
    let mut deployment = deployment;
    let set_count = deployment.sets.len();
    let pools = deployment
        .pools
        .iter()
        .map(|pool| pool.sets.clone())
        .collect();
    let store = ObjectStore::pooled(std::mem::take(&mut deployment.sets), &deployment.id, pools);
    for (pool, given) in store.pools().iter().zip(&deployment.pools) {
        pool.set_state(given.state);
    }
    if store.pools().len() > 1 {
        // A pool added at this start lacks the buckets made before it; a drain and the
        // heal of bucket records try again where this fails.
        if let Err(e) = store.spread_records_to_every_set().await {
            tracing::warn!(error = %e, "could not put every bucket's record on the new pool's sets yet");
        }
    }
    let jobs = Arc::new(background::Jobs::default());
    if let (Some(path), Some(configs)) = (&config.lifecycle.tiers_file, tier_configs) {
        configs
            .check_drives_apart(&config.drives)
            .with_context(|| format!("--tiers {}", path.display()))?;
        let tiers = crate::tier::build_tiers(&configs, &config.healing, &jobs)
            .await
            .with_context(|| format!("opening the tiers of {}", path.display()))?;
        tracing::info!(tiers = ?tiers.names().collect::<Vec<_>>(), "tiers for lifecycle transitions");
        store.set_tiers(tiers);
    }
    let deployment = Arc::new(deployment);
    if let Some(cluster) = &config.cluster {
        serve_drives(&config, cluster, &deployment, certificates.clone()).await?;
    }
    for peer in &deployment.peers {
        let pings = background::peers::PeerLiveness::new(Arc::downgrade(peer));
        jobs.spawn(Some(peer.node()), pings);
    }
    if let Some(control) = &control {
        store.set_change_feed(control.clone());
        // The lease's renewal, and the check that gives up elections before it can lapse.
        jobs.spawn(
            None,
            background::control_plane::LeaseRenewal(Arc::downgrade(control)),
        );
        jobs.spawn(
            None,
            background::control_plane::LapseCheck(Arc::downgrade(control)),
        );
        jobs.spawn(
            None,
            background::control_plane::RecordsAdoption::new(Arc::downgrade(control), store.clone()),
        );
    }
    spawn_singleton(
        background::stale_uploads::StaleUploadCleaner {
            store: store.clone(),
            expiry: config.stale_upload_expiry,
            interval: config.stale_upload_scan,
        },
        &jobs,
        &config,
        control.as_ref(),
    );
    let healer = Arc::new(Healer::default());
    if let Some(read_healer) = healer.read_healer(store.clone()) {
        jobs.spawn(None, read_healer);
    }
    // Drives formatted at this start get everything once the server is up, and so does a
    // node of a cluster: the others went on writing while it was down.
    let heal_pending = match config.cluster {
        Some(_) => (0..store.sets().len()).collect(),
        None => DriveMonitor::sets_formatted_at_start(&deployment),
    };
    let owned = control.as_ref().map(|control| {
        (0..store.sets().len())
            .map(|set| control.stand_for(&DriveMonitor::election(set)))
            .collect()
    });
    jobs.spawn(
        None,
        DriveMonitor {
            deployment: deployment.clone(),
            config: config.clone(),
            store: store.clone(),
            healer: healer.clone(),
            heal_pending,
            owned,
        },
    );
    // The scrubber reads every drive of every set, the other nodes' too: once per cluster.
    spawn_singleton(
        Scrubber {
            store: store.clone(),
            healer: healer.clone(),
            interval: config.healing.scrub_interval,
            max_rate: config.healing.scrub_rate,
            orphan_age: config.healing.orphan_age,
        },
        &jobs,
        &config,
        control.as_ref(),
    );
    let lifecycle_status = Arc::new(LifecycleStatus::default());
    spawn_singleton(
        LifecycleScanner {
            store: store.clone(),
            day: config.lifecycle.day,
            status: lifecycle_status.clone(),
            pace: Pace::configured(config.lifecycle.duty, config.lifecycle.max_objects_per_sec),
        },
        &jobs,
        &config,
        control.as_ref(),
    );
    let usage = Arc::new(Usage::default());
    let scanner = UsageScanner::new(store.clone(), usage.clone(), config.metrics.usage_scan);
    jobs.spawn(
        None,
        match &control {
            // Counted once per cluster; every node serves the count in its metrics.
            Some(control) => {
                let elected = control.stand_for(background::Worker::name(&scanner));
                scanner.when_elected(elected)
            }
            None => scanner,
        },
    );
    let drains = Arc::new(background::decommission::Drains::new(store.pools().len()));
    if let Some(control) = control.as_ref().filter(|_| store.pools().len() > 1) {
        let follow = background::pool_states::FollowPoolStates {
            control: Arc::downgrade(control),
            store: store.clone(),
            deployment: deployment.clone(),
        };
        jobs.spawn(None, follow);
    }
    spawn_singleton(
        background::decommission::Decommission {
            store: store.clone(),
            deployment: deployment.clone(),
            control: control.clone(),
            drains: drains.clone(),
            duty: config.decommission_duty,
        },
        &jobs,
        &config,
        control.as_ref(),
    );
    let rebalancing = Arc::new(background::rebalance::Rebalancing::default());
    if store.pools().len() > 1 {
        spawn_singleton(
            background::rebalance::Rebalance {
                store: store.clone(),
                rebalancing: rebalancing.clone(),
                duty: config.decommission_duty,
            },
            &jobs,
            &config,
            control.as_ref(),
        );
    }
    let metrics = Arc::new(Metrics::new(&config.metrics, usage.clone()));
    jobs.spawn(
        None,
        crate::server::metrics::HealSampler {
            metrics: metrics.clone(),
            healer: healer.clone(),
            store: store.clone(),
        },
    );
    let iam = crate::iam::Iam::new(
        store.clone(),
        &config.root_user,
        &config.root_password,
        &deployment.id,
    );
    if let Err(e) = iam.reload().await {
        tracing::warn!(error = %e, "could not load users and policies yet; retrying in the background");
    }
    // Other nodes change users too: the control plane tells this one, and without it they
    // are read again often.
    let every = match (&config.cluster, &control) {
        (Some(_), None) => CLUSTER_IAM_REFRESH,
        _ => IAM_REFRESH,
    };
    let iam_reload = background::identities::IdentityReload {
        iam: Arc::downgrade(&iam),
        every,
    };
    jobs.spawn(None, iam_reload);
    if let Some(control) = &control {
        let heard = apply_others_changes(store.clone(), iam.clone());
        let watch = background::control_plane::ChangeWatch::new(Arc::downgrade(control), heard);
        jobs.spawn(None, watch);
    }
    kms::start(&store, &jobs)
        .await
        .context("opening the key service")?;
    let s3 = S3State {
        store: store.clone(),
        keyring: auth::Keyring::new(
            auth::Credentials {
                access_key: config.root_user.clone(),
                secret_key: config.root_password.clone(),
            },
            config.region.clone(),
        )
        .with_users(iam.clone()),
        owner: config.root_user.clone(),
        default_ownership: (config.default_object_ownership.as_deref())
            .map(|name| {
                ObjectOwnership::parse(name).expect("checked when the configuration was read")
            })
            .unwrap_or_default(),
        domain: config.domain.clone(),
        iam: iam.clone(),
        max_retention_days: config.limits.max_retention_days,
        tls: certificates.is_some(),
        sse_c_allowed: certificates.is_some() || config.listener.sse_c_over_http,
        lifecycle_day: config.lifecycle.day,
        lifecycle_configs: Default::default(),
    };
    let admin = AdminState {
        control: control.clone(),
        store,
        iam,
        deployment: deployment.clone(),
        healer,
        lifecycle_status,
        lifecycle_day: config.lifecycle.day,
        jobs: jobs.clone(),
        usage,
        drains,
        rebalancing,
    };
    let state = Arc::new(AppState {
        s3,
        admin,
        metrics,
        limit: limit::RequestLimit::new(config.limits.max_requests),
        anonymous_limit: limit::RequestLimit::new(config.limits.max_requests.div_ceil(8)),
        default_credentials: config.default_credentials,
    });

    let listener = TcpListener::bind(config.address)
        .await
        .with_context(|| format!("binding {}", config.address))?;
    let address = listener.local_addr()?;
    tracing::info!(
        deployment = %deployment.id,
        drives = config.drives.len(),
        sets = set_count,
        pools = deployment.pools.len(),
        layout = %format!("{} set(s) of {}+{} (data+parity)", set_count, config.data_shards, config.parity_shards),
        offline = deployment.offline.len(),
        "serving S3 over {} drive(s)",
        config.drives.len()
    );
    for drive in &deployment.offline {
        tracing::warn!(drive = %drive.display(), "drive offline: objects stay readable while each set keeps {} drives", config.data_shards);
    }
    let scheme = if certificates.is_some() {
        "https"
    } else {
        "http"
    };
    tracing::info!(
        "connect with: AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY=… aws --endpoint-url {scheme}://{address} s3 ls",
        config.root_user
    );
    if let Some(certificates) = &certificates {
        tracing::info!(
            dir = %certificates.dir().display(),
            sha256 = %certificates.fingerprint(),
            "serving HTTPS only; the certificate is reloaded when {} or {} change",
            tls::CERT_FILE,
            tls::KEY_FILE
        );
        let reload = background::certificates::CertificateReload {
            watch: certificates.watch().await,
            every: config.listener.cert_check_interval,
        };
        jobs.spawn(None, reload);
    }
    serve_console(&config, address, &state, certificates.clone()).await?;
    let signal = shutdown_signal();
    tracing::info!("listening on {scheme}://{address}");
    let store = state.admin.store.clone();

    listener::serve(
        listener,
        front::router(state),
        certificates,
        config.listener.clone(),
        signal,
    )
    .await
    .context("serving")?;
    // A drive that does not answer leaves the rest to heal.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), store.tidied()).await;
    if let Some(control) = &control {
        // The jobs this node held move to another at once, not after the lease's TTL.
        control.leave().await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// Runs work that must run once per deployment: here when alone; in a cluster on the node
/// elected for it, or without etcd on the layout's first node.
fn spawn_singleton(
    worker: impl background::Worker,
    jobs: &background::Jobs,
    config: &ServerConfig,
    control: Option<&Arc<ControlPlane>>,
) {
    match (control, &config.cluster) {
        (Some(control), _) => {
            let held = control.stand_for(worker.name());
            jobs.spawn(None, background::Elected { worker, held });
        }
        (None, Some(cluster)) if cluster.layout.nodes.first() != Some(&cluster.this_node) => {}
        _ => {
            jobs.spawn(None, worker);
        }
    }
}

/// What this node does when another announces a change: reads the record again.
fn apply_others_changes(
    store: Arc<ObjectStore>,
    iam: Arc<crate::iam::Iam>,
) -> impl Fn(Option<RecordChange>) + Send + Sync + 'static {
    move |change| {
        let (reload_iam, reload_keys) = match &change {
            Some(RecordChange::Bucket(name)) => {
                store.forget_bucket(name);
                (false, false)
            }
            Some(RecordChange::System(key)) => (
                key.starts_with(crate::iam::RECORD_PREFIX),
                key.starts_with(kms::RECORD_PREFIX),
            ),
            // Anything may have changed while the watch was down.
            None => {
                store.forget_agreed_buckets();
                (true, true)
            }
        };
        if let Some(keys) = store.key_service().filter(|_| reload_keys) {
            tokio::spawn(async move {
                if let Err(e) = keys.reload().await {
                    tracing::warn!(error = %e, "could not read the key catalog again");
                }
            });
        }
        if reload_iam {
            let iam = iam.clone();
            tokio::spawn(async move {
                if let Err(e) = iam.reload().await {
                    tracing::warn!(error = %e, "could not read users and policies again");
                }
            });
        }
    }
}

/// GETs of multipart objects keep a shard file open per part and drive.
fn raise_open_file_limit() {
    if let Ok((_, hard)) = rlimit::Resource::NOFILE.get() {
        let _ = rlimit::Resource::NOFILE.set(hard, hard);
    }
}

/// Resolves at SIGINT or SIGTERM. The handlers are installed at the call (not at the first
/// poll), so a signal sent as soon as `listening on` is logged is not missed.
fn shutdown_signal() -> impl Future<Output = ()> + Send {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt()).ok();
    let mut terminate = signal(SignalKind::terminate()).ok();
    async move {
        let interrupt = async {
            match interrupt.as_mut() {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        let terminate = async {
            match terminate.as_mut() {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = interrupt => {},
            _ = terminate => {},
        }
        tracing::info!("shutting down: finishing requests in flight");
    }
}
