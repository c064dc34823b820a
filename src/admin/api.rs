//! The admin API: the operator's view of sets and drives, and heal passes on demand.
//!
//! It lives under `/_strata/admin/v1/`, a path no bucket can take (`_` is never in a bucket
//! name). Requests are signed like any S3 request and authenticated on the same code path;
//! only the root user may call it. Answers are JSON; authentication errors stay S3 XML.
//!
//! - `GET  /_strata/admin/v1/info` → [`Info`]
//! - `GET  /_strata/admin/v1/heal` → [`HealStatusView`]
//! - `POST /_strata/admin/v1/heal?bucket=B&prefix=P&deep=true` → 202 [`HealStarted`], or
//!   409 while a pass runs
//! - `POST /_strata/admin/v1/drives/format?path=P` → 200 [`DriveFormatted`]: formats the
//!   empty folder of an offline drive (one kept offline as a disk that failed to mount) into
//!   its place; 409 when the drive is in service, formatted or missing
//!
//! Users and policies (see `crate::iam`); a user's secret key is never shown but once, when
//! the server generated it:
//!
//! - `GET    .../users` → [`UserInfo`]s
//! - `POST   .../users?name=U` with a [`NewUser`] → [`AddedUser`]
//! - `DELETE .../users?name=U`
//! - `POST   .../users/enable?name=U`, `.../users/disable?name=U`
//! - `POST   .../users/attach?name=U&policy=P`, `.../users/detach?name=U&policy=P`
//! - `GET    .../policies` → [`PolicyInfo`]s; `GET .../policies?name=P` → the document
//! - `PUT    .../policies?name=P` with the JSON document
//! - `DELETE .../policies?name=P` (refused while a user has it attached)

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::Response;
use serde::{Deserialize, Serialize};

use super::{health, pools};
use crate::background::healing::{HealPass, HealStatus, Healer};
use crate::body::ByteStream;
use crate::cluster::control::ControlPlane;
use crate::deployment::Deployment;
use crate::iam::{Iam, IamError, Identity};
pub use crate::iam::{PolicyInfo, UserInfo};
use crate::kms::{KeyInfo, KmsError};
use crate::lifecycle::{LifecycleStatus, RuleError};
use crate::object::{
    now_ms, BucketName, HealDepth, HealReport, HealScope, ObjectError, ObjectStore,
};
use crate::query::Query;

/// The admin API's paths.
pub const PATH_PREFIX: &str = "/_strata/admin/v1/";
/// The `reason` of the heal passes this API starts, so a client can tell them apart.
pub const HEAL_REASON: &str = "admin";
/// A drive that does not answer for its size within this is shown without one.
pub(super) const DISK_INFO_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest request body the admin API reads (a policy document, a new user).
const MAX_BODY: usize = 64 << 10;

/// What the admin API reaches.
pub struct AdminState {
    pub store: Arc<ObjectStore>,
    pub iam: Arc<Iam>,
    pub deployment: Arc<Deployment>,
    pub healer: Arc<Healer>,
    pub lifecycle_status: Arc<LifecycleStatus>,
    /// How long a lifecycle day lasts (for dry runs and plans).
    pub lifecycle_day: Duration,
    /// The cluster's control plane, when nodes share one.
    pub control: Option<Arc<ControlPlane>>,
    /// This server's background jobs.
    pub jobs: Arc<crate::background::Jobs>,
    /// The last count of every bucket's objects and bytes.
    pub usage: Arc<crate::background::usage::Usage>,
    /// Where each pool's decommission stands.
    pub drains: Arc<crate::background::decommission::Drains>,
    /// Where the rebalance of the pools stands.
    pub rebalancing: Arc<crate::background::rebalance::Rebalancing>,
}

/// Whether a path is the admin API's (`/_strata/...`: no bucket name starts with `_`, so no
/// path-style S3 request is lost; the front door sends virtual-hosted requests to S3).
pub fn addresses(path: &str) -> bool {
    path.starts_with("/_strata/")
}

/// Who may call the admin API: the root user, the owner of everything, alone.
pub fn may_call(identity: &Identity) -> bool {
    *identity == Identity::Root
}

/// The admin operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Info,
    Jobs,
    Usage,
    Tiers,
    HealStatus,
    StartHeal,
    FormatDrive,
    Decommission,
    RebalanceStatus,
    Rebalance,
    Users,
    AddUser,
    RemoveUser,
    EnableUser(bool),
    AttachPolicy,
    DetachPolicy,
    Policies,
    PutPolicy,
    RemovePolicy,
    LifecycleStatus,
    LifecycleDryRun,
    LifecycleSet,
    KmsKeys,
    KmsCreateKey,
    KmsKeyStatus,
    KmsEnableKey(bool),
    KmsRotate,
    Unknown,
}

impl Route {
    fn parse(method: &Method, uri: &Uri) -> Self {
        let path = uri.path().strip_prefix(PATH_PREFIX).unwrap_or("");
        match (method, path) {
            (&Method::GET, "info") => Route::Info,
            (&Method::GET, "jobs") => Route::Jobs,
            (&Method::GET, "usage") => Route::Usage,
            (&Method::GET, "tiers") => Route::Tiers,
            (&Method::GET, "heal") => Route::HealStatus,
            (&Method::POST, "heal") => Route::StartHeal,
            (&Method::POST, "drives/format") => Route::FormatDrive,
            (&Method::POST, "pools/decommission") => Route::Decommission,
            (&Method::GET, "pools/rebalance") => Route::RebalanceStatus,
            (&Method::POST, "pools/rebalance") => Route::Rebalance,
            (&Method::GET, "users") => Route::Users,
            (&Method::POST, "users") => Route::AddUser,
            (&Method::DELETE, "users") => Route::RemoveUser,
            (&Method::POST, "users/enable") => Route::EnableUser(true),
            (&Method::POST, "users/disable") => Route::EnableUser(false),
            (&Method::POST, "users/attach") => Route::AttachPolicy,
            (&Method::POST, "users/detach") => Route::DetachPolicy,
            (&Method::GET, "policies") => Route::Policies,
            (&Method::PUT, "policies") => Route::PutPolicy,
            (&Method::DELETE, "policies") => Route::RemovePolicy,
            (&Method::GET, "lifecycle") => Route::LifecycleStatus,
            (&Method::POST, "lifecycle/dry-run") => Route::LifecycleDryRun,
            (&Method::PUT, "lifecycle") => Route::LifecycleSet,
            (&Method::GET, "kms/keys") => Route::KmsKeys,
            (&Method::POST, "kms/keys") => Route::KmsCreateKey,
            (&Method::GET, "kms/keys/status") => Route::KmsKeyStatus,
            (&Method::POST, "kms/keys/enable") => Route::KmsEnableKey(true),
            (&Method::POST, "kms/keys/disable") => Route::KmsEnableKey(false),
            (&Method::POST, "kms/rotate") => Route::KmsRotate,
            _ => Route::Unknown,
        }
    }

    /// The operation name of the request log.
    fn name(self) -> &'static str {
        match self {
            Route::Info => "AdminInfo",
            Route::Jobs => "AdminJobs",
            Route::Usage => "AdminUsage",
            Route::Tiers => "AdminTiers",
            Route::HealStatus => "AdminHealStatus",
            Route::StartHeal => "AdminHeal",
            Route::FormatDrive => "AdminFormatDrive",
            Route::Decommission => "AdminDecommission",
            Route::RebalanceStatus => "AdminRebalanceStatus",
            Route::Rebalance => "AdminRebalance",
            Route::Users => "AdminListUsers",
            Route::AddUser => "AdminAddUser",
            Route::RemoveUser => "AdminRemoveUser",
            Route::EnableUser(true) => "AdminEnableUser",
            Route::EnableUser(false) => "AdminDisableUser",
            Route::AttachPolicy => "AdminAttachPolicy",
            Route::DetachPolicy => "AdminDetachPolicy",
            Route::Policies => "AdminPolicies",
            Route::PutPolicy => "AdminPutPolicy",
            Route::RemovePolicy => "AdminRemovePolicy",
            Route::LifecycleStatus => "AdminLifecycleStatus",
            Route::LifecycleDryRun => "AdminLifecycleDryRun",
            Route::LifecycleSet => "AdminLifecycleSet",
            Route::KmsKeys => "AdminKmsListKeys",
            Route::KmsCreateKey => "AdminKmsCreateKey",
            Route::KmsKeyStatus => "AdminKmsKeyStatus",
            Route::KmsEnableKey(true) => "AdminKmsEnableKey",
            Route::KmsEnableKey(false) => "AdminKmsDisableKey",
            Route::KmsRotate => "AdminKmsRotate",
            Route::Unknown => "Admin",
        }
    }
}

/// Answers an authenticated (or anonymous) admin request: the operation name for the request
/// log, and the response.
///
/// The caller is one that [`may_call`]; the front door has checked that the request was
/// signed in its headers, and `body` is checked against its signed digest as it is read.
pub async fn call(
    state: &AdminState,
    method: &Method,
    uri: &Uri,
    body: ByteStream,
) -> (&'static str, Response) {
    let route = Route::parse(method, uri);
    let result = match route {
        Route::Info => Ok(json(StatusCode::OK, &info(state).await)),
        Route::Jobs => Ok(json(StatusCode::OK, &state.jobs.list())),
        // Empty until the first count finishes (a few seconds after the start).
        Route::Usage => Ok(json(StatusCode::OK, &state.usage.latest())),
        // The tiers transition rules may name (the tiers file's).
        Route::Tiers => {
            let tiers = state.store.tiers();
            let names: Vec<&str> = tiers.names().collect();
            Ok(json(StatusCode::OK, &names))
        }
        Route::HealStatus => Ok(json(
            StatusCode::OK,
            &HealStatusView::from(state.healer.status(&state.store)),
        )),
        Route::StartHeal => start_heal(state, &Query::parse(uri.query())).await,
        Route::FormatDrive => format_drive(state, &Query::parse(uri.query())).await,
        Route::Decommission => pools::decommission(state, &Query::parse(uri.query())).await,
        Route::RebalanceStatus => pools::rebalance(state, None).await,
        Route::Rebalance => pools::rebalance(state, Some(&Query::parse(uri.query()))).await,
        Route::Users
        | Route::AddUser
        | Route::RemoveUser
        | Route::EnableUser(_)
        | Route::AttachPolicy
        | Route::DetachPolicy
        | Route::Policies
        | Route::PutPolicy
        | Route::RemovePolicy => identities(state, route, &Query::parse(uri.query()), body).await,
        Route::LifecycleStatus | Route::LifecycleDryRun | Route::LifecycleSet => {
            lifecycle(state, route, &Query::parse(uri.query()), body).await
        }
        Route::KmsKeys
        | Route::KmsCreateKey
        | Route::KmsKeyStatus
        | Route::KmsEnableKey(_)
        | Route::KmsRotate => kms(state, route, &Query::parse(uri.query())).await,
        Route::Unknown => Ok(error(
            StatusCode::NOT_FOUND,
            "NoSuchAdminApi",
            format!("no admin API at {method} {}", uri.path()),
        )),
    };
    (
        route.name(),
        result.unwrap_or_else(AdminError::into_response),
    )
}

/// The whole deployment as the operator sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Info {
    pub deployment_id: String,
    /// Every set has write quorum (what `/health/ready` answers).
    pub ready: bool,
    pub sets: Vec<SetInfo>,
    /// The server pools, in order (one for a deployment that never grew).
    #[serde(default)]
    pub pools: Vec<PoolInfo>,
    pub heal: HealStatusView,
    /// The nodes of a cluster with a control plane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterInfo>,
}

/// The nodes of a cluster as its control plane knows them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClusterInfo {
    /// The node that answered.
    pub this_node: String,
    /// Whether that node reaches etcd (when not, node states are unknown); absent for a
    /// cluster without etcd, whose node states are what that node's pings say.
    pub etcd_reachable: Option<bool>,
    pub nodes: Vec<NodeInfo>,
    /// The node running each once-per-cluster job.
    pub elected: Vec<(String, String)>,
    /// Since this node started: how often it found etcd behind the drives' copy of the
    /// records (restored from an older snapshot, or records deleted) and filled it again...
    #[serde(default)]
    pub etcd_refills: u64,
    /// ...and how many records it put back into etcd from the drives.
    #[serde(default)]
    pub records_put_back: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeInfo {
    pub node: String,
    /// Up (its lease lives), down, or unknown (etcd out of reach).
    pub state: String,
    pub version: Option<String>,
    /// Unix seconds.
    pub started: Option<u64>,
}

/// A server pool: its sets, and the space of its drives.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PoolInfo {
    /// From 0; shown from 1.
    pub index: usize,
    pub id: String,
    /// `active` (it takes new keys), `joining` (added to a cluster, it takes keys once every
    /// node runs with it), `decommissioning` or `retired`.
    pub state: String,
    /// Its sets, by [`SetInfo::index`].
    pub sets: Vec<usize>,
    /// Summed over the drives that answered.
    pub total_bytes: u64,
    pub free_bytes: u64,
    /// What it holds, at the last usage scan (none yet, or a single pool: `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holds: Option<crate::object::PoolUsage>,
    /// Where its decommission stands, once one started here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decommission: Option<DrainView>,
}

pub use crate::background::decommission::DrainView;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetInfo {
    /// From 0; shown from 1.
    pub index: usize,
    pub data_shards: usize,
    pub parity_shards: usize,
    pub write_quorum: usize,
    pub read_quorum: usize,
    pub online: usize,
    pub drives: Vec<DriveInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DriveInfo {
    pub path: String,
    pub state: DriveState,
    /// Space of the drive's filesystem; absent when the drive cannot tell (offline).
    pub total_bytes: Option<u64>,
    pub used_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DriveState {
    Online,
    Offline,
    /// Back in service, not yet given everything it missed.
    Healing,
    /// Missed a call's deadline: served around until it answers a probe.
    Stalled,
    /// An empty folder on its parent's filesystem where the set's other drives are mount
    /// points: a disk that failed to mount. Kept offline and unformatted.
    Unmounted,
}

pub(super) async fn info(state: &AdminState) -> Info {
    let deployment = &state.deployment;
    let sizes = pools::drive_sizes(deployment).await;
    let health = health::set_health(deployment, state.store.sets());
    let sets = state
        .store
        .sets()
        .iter()
        .zip(&health)
        .map(|(set, health)| SetInfo {
            index: set.index(),
            data_shards: set.data_shards(),
            parity_shards: set.parity_shards(),
            write_quorum: set.write_quorum(),
            read_quorum: set.read_quorum(),
            online: health.online,
            drives: deployment
                .drives
                .iter()
                .zip(&sizes)
                .filter(|(drive, _)| drive.set_index == set.index())
                .map(|(drive, size)| DriveInfo {
                    path: drive.path.display().to_string(),
                    state: if drive.is_stalled() {
                        DriveState::Stalled
                    } else if drive.is_healing() {
                        DriveState::Healing
                    } else if drive.is_online() {
                        DriveState::Online
                    } else if drive.is_unmounted() {
                        DriveState::Unmounted
                    } else {
                        DriveState::Offline
                    },
                    total_bytes: size.map(|s| s.total),
                    used_bytes: size.map(|s| s.used),
                    free_bytes: size.map(|s| s.free),
                })
                .collect(),
        })
        .collect();
    let pool_spaces = pools::pool_space(deployment, &sizes);
    let counted = state.usage.latest().map(|u| u.pools).unwrap_or_default();
    let mut pools = Vec::with_capacity(deployment.pools.len());
    for (index, (pool, space)) in deployment.pools.iter().zip(pool_spaces).enumerate() {
        // In a cluster the node elected for the drain publishes how it goes.
        let decommission = match &state.control {
            Some(_) => (DrainView::published(&state.store, &pool.id).await)
                .ok()
                .flatten(),
            None => state.drains.pool(index).view(),
        };
        pools.push(PoolInfo {
            index,
            id: pool.id.clone(),
            state: state.store.pools()[index].state().as_str().into(),
            sets: pool.sets.clone().collect(),
            total_bytes: space.total,
            free_bytes: space.free,
            holds: counted.get(index).copied().flatten(),
            decommission,
        });
    }
    let mut cluster = match &state.control {
        Some(control) => Some(cluster_info(control).await),
        None => pinged_nodes(deployment),
    };
    if let Some(cluster) = &mut cluster {
        (cluster.etcd_refills, cluster.records_put_back) = state.store.authority_divergence();
    }
    Info {
        deployment_id: deployment.id.clone(),
        ready: health.iter().all(health::SetHealth::writable),
        sets,
        pools,
        heal: state.healer.status(&state.store).into(),
        cluster,
    }
}

/// A cluster without etcd: the nodes as this node's pings see them.
fn pinged_nodes(deployment: &Deployment) -> Option<ClusterInfo> {
    let nodes = deployment.nodes_answering();
    let this_node = nodes
        .iter()
        .find(|(node, _)| !deployment.peers.iter().any(|peer| peer.node() == node))?;
    Some(ClusterInfo {
        this_node: this_node.0.clone(),
        etcd_reachable: None,
        nodes: (nodes.iter())
            .map(|(node, answers)| NodeInfo {
                node: node.clone(),
                state: if *answers { "up" } else { "down" }.into(),
                version: None,
                started: None,
            })
            .collect(),
        elected: Vec::new(),
        etcd_refills: 0,
        records_put_back: 0,
    })
}

async fn cluster_info(control: &ControlPlane) -> ClusterInfo {
    let up = control.nodes_up().await;
    let elected = control.elected().await.unwrap_or_default();
    let nodes = (control.nodes().iter())
        .map(|node| {
            let record = (up.as_ref().ok()).and_then(|up| up.iter().find(|r| &r.node == node));
            NodeInfo {
                node: node.clone(),
                state: match (&up, record) {
                    (Err(_), _) => "unknown",
                    (Ok(_), Some(_)) => "up",
                    (Ok(_), None) => "down",
                }
                .into(),
                version: record.map(|r| r.version.clone()),
                started: record.map(|r| r.started),
            }
        })
        .collect();
    ClusterInfo {
        this_node: control.this_node().to_string(),
        etcd_reachable: Some(up.is_ok()),
        nodes,
        elected,
        etcd_refills: 0,
        records_put_back: 0,
    }
}

/// Answer to a started heal: when it was asked for, so the caller can tell its pass
/// (`reason` [`HEAL_REASON`], `started_ms` not before this) from earlier ones.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HealStarted {
    pub requested_ms: i64,
    /// `bucket/prefix`, empty for everything.
    pub scope: String,
    pub deep: bool,
}

/// Starts a heal pass in the background; its progress is in `GET .../heal`.
async fn start_heal(state: &AdminState, query: &Query) -> Result<Response, AdminError> {
    let bucket = match query.get("bucket").filter(|b| !b.is_empty()) {
        Some(name) => {
            let name = BucketName::parse(name)?;
            state.store.bucket(&name).await?;
            Some(name)
        }
        None => None,
    };
    let prefix = query.get("prefix").unwrap_or("").to_string();
    if bucket.is_none() && !prefix.is_empty() {
        return Err(AdminError::invalid("a heal prefix needs a bucket"));
    }
    let deep = match query.get("deep") {
        None | Some("false") => false,
        Some("true") | Some("") => true,
        Some(other) => {
            return Err(AdminError::invalid(format!(
                "deep must be true or false, not {other:?}"
            )))
        }
    };
    // Two requests at once may both pass this check; the second pass then waits its turn.
    if let Some(running) = state.healer.status(&state.store).running {
        return Ok(error(
            StatusCode::CONFLICT,
            "HealRunning",
            format!(
                "a heal pass is running ({}, {} objects checked so far); try again when it is done",
                running.reason, running.report.objects_checked
            ),
        ));
    }
    let scope = HealScope {
        bucket,
        prefix,
        sets: None,
    };
    let started = HealStarted {
        requested_ms: now_ms(),
        scope: scope.to_string(),
        deep,
    };
    let (healer, store) = (Arc::clone(&state.healer), Arc::clone(&state.store));
    let depth = if deep {
        HealDepth::Deep
    } else {
        HealDepth::Quick
    };
    tokio::spawn(async move {
        healer
            .run_pass(&store, HEAL_REASON, &scope, depth, None)
            .await;
    });
    Ok(json(StatusCode::ACCEPTED, &started))
}

/// Answer to a drive formatted on request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DriveFormatted {
    pub path: String,
}

/// Formats an offline drive's empty folder into its place; the drive monitor's next look
/// heals it (it is unhealed until then).
async fn format_drive(state: &AdminState, query: &Query) -> Result<Response, AdminError> {
    let Some(path) = query.get("path").filter(|p| !p.is_empty()) else {
        return Err(AdminError::invalid("the path parameter is missing"));
    };
    let path = std::path::PathBuf::from(path);
    let deployment = Arc::clone(&state.deployment);
    let asked = path.clone();
    let formatted = tokio::task::spawn_blocking(move || deployment.format_drive(&asked))
        .await
        .map_err(|e| AdminError::internal(e.to_string()))?;
    Ok(match formatted {
        Ok(_) => {
            tracing::warn!(drive = %path.display(), "drive formatted into its place on an operator's request");
            json(
                StatusCode::OK,
                &DriveFormatted {
                    path: path.display().to_string(),
                },
            )
        }
        Err(reason) => error(StatusCode::CONFLICT, "DriveNotFormatted", reason),
    })
}

/// A user to add. No `Debug`: it may carry a secret.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct NewUser {
    /// The secret key; the server generates one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    #[serde(default)]
    pub policies: Vec<String>,
}

/// A user added. No `Debug`: it may carry a secret.
#[derive(Clone, Serialize, Deserialize)]
pub struct AddedUser {
    pub name: String,
    /// The secret key the server generated; absent when the caller chose it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// The users and policies routes.
async fn identities(
    state: &AdminState,
    route: Route,
    query: &Query,
    body: ByteStream,
) -> Result<Response, AdminError> {
    let iam = &state.iam;
    let param = |name: &str| -> Result<String, AdminError> {
        query
            .get(name)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .ok_or_else(|| AdminError::invalid(format!("the {name} parameter is missing")))
    };
    let done = || {
        Response::builder()
            .status(StatusCode::NO_CONTENT)
            .body(Body::empty())
            .expect("a bodiless answer")
    };
    let result = match route {
        Route::Users => return Ok(json(StatusCode::OK, &iam.users())),
        Route::AddUser => {
            let name = param("name")?;
            let body = read_body(body).await?;
            let new: NewUser = if body.is_empty() {
                NewUser::default()
            } else {
                serde_json::from_slice(&body)
                    .map_err(|e| AdminError::invalid(format!("not a new user: {e}")))?
            };
            let chosen = new.secret.is_some();
            iam.add_user(&name, new.secret, new.policies)
                .await
                .map(|secret| {
                    let added = AddedUser {
                        name,
                        secret: (!chosen).then_some(secret),
                    };
                    json(StatusCode::OK, &added)
                })
        }
        Route::RemoveUser => iam.remove_user(&param("name")?).await.map(|_| done()),
        Route::EnableUser(enabled) => iam
            .set_enabled(&param("name")?, enabled)
            .await
            .map(|_| done()),
        Route::AttachPolicy => iam
            .attach(&param("name")?, &param("policy")?)
            .await
            .map(|_| done()),
        Route::DetachPolicy => iam
            .detach(&param("name")?, &param("policy")?)
            .await
            .map(|_| done()),
        Route::Policies => match query.get("name").filter(|n| !n.is_empty()) {
            None => return Ok(json(StatusCode::OK, &iam.policies())),
            Some(name) => match iam.policy(name) {
                Some(document) => Ok(Response::builder()
                    .header(header::CONTENT_TYPE, "application/json")
                    .header(header::CACHE_CONTROL, "no-store")
                    .body(Body::from(document))
                    .expect("static headers are valid")),
                None => Err(IamError::NoSuchPolicy(name.to_string())),
            },
        },
        Route::PutPolicy => {
            let name = param("name")?;
            let body = read_body(body).await?;
            let document = String::from_utf8(body.to_vec()).map_err(|_| AdminError {
                status: StatusCode::BAD_REQUEST,
                code: "MalformedPolicy",
                message: "Policies must be UTF-8".into(),
            })?;
            iam.put_policy(&name, &document).await.map(|_| done())
        }
        Route::RemovePolicy => iam.remove_policy(&param("name")?).await.map(|_| done()),
        Route::Info
        | Route::Jobs
        | Route::Usage
        | Route::Tiers
        | Route::HealStatus
        | Route::StartHeal
        | Route::FormatDrive
        | Route::Decommission
        | Route::RebalanceStatus
        | Route::Rebalance
        | Route::LifecycleStatus
        | Route::LifecycleDryRun
        | Route::LifecycleSet
        | Route::KmsKeys
        | Route::KmsCreateKey
        | Route::KmsKeyStatus
        | Route::KmsEnableKey(_)
        | Route::KmsRotate
        | Route::Unknown => {
            unreachable!("not an identities route")
        }
    };
    result.map_err(AdminError::from)
}

/// What the lifecycle scanner did and will do in a bucket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LifecycleStatusView {
    pub bucket: String,
    pub last_scan_ms: Option<i64>,
    /// Object versions the last pass judged.
    #[serde(default)]
    pub objects_scanned: u64,
    pub rules: Vec<LifecycleRuleView>,
    pub plan: serde_json::Value,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LifecycleRuleView {
    pub id: String,
    pub enabled: bool,
    pub expired: u64,
    #[serde(default)]
    pub versions_removed: u64,
    #[serde(default)]
    pub markers_removed: u64,
    #[serde(default)]
    pub transitioned: u64,
    #[serde(default)]
    pub transitions_failed: u64,
    pub uploads_aborted: u64,
    pub transitions_skipped: u64,
    pub last_action_ms: Option<i64>,
}

/// Lifecycle: a bucket's status (per rule: what the scanner did, and what is due next), a dry
/// run of new rules (what they would act on now, before they are applied), and setting rules
/// from the aws CLI's JSON (or S3's XML).
async fn lifecycle(
    state: &AdminState,
    route: Route,
    query: &Query,
    body: ByteStream,
) -> Result<Response, AdminError> {
    use crate::lifecycle::{plan, Clock, LifecycleConfig};
    let bucket = BucketName::parse(query.get("bucket").unwrap_or(""))?;
    let clock = Clock {
        now_ms: now_ms(),
        day_ms: state.lifecycle_day.as_millis() as i64,
    };
    let given = || async {
        let body = read_body(body).await?;
        let text = std::str::from_utf8(&body)
            .map_err(|_| RuleError::MalformedXml("the rules are not UTF-8".into()))?
            .trim()
            .to_string();
        let config = if text.starts_with('{') {
            LifecycleConfig::from_json(&text)
        } else {
            LifecycleConfig::from_xml(&text)
        };
        Ok::<_, AdminError>(config?)
    };
    match route {
        Route::LifecycleStatus => {
            let record = state.store.bucket(&bucket).await?;
            let Some(xml) = record.settings.lifecycle else {
                return Err(AdminError {
                    status: StatusCode::NOT_FOUND,
                    code: "NoSuchLifecycleConfiguration",
                    message: "The bucket has no lifecycle rules".into(),
                });
            };
            let config = LifecycleConfig::from_xml(&xml)?;
            let activity = state
                .lifecycle_status
                .bucket(bucket.as_str())
                .unwrap_or_default();
            let rules = config
                .rules
                .iter()
                .map(|rule| {
                    let done = activity.rules.get(&rule.id).cloned().unwrap_or_default();
                    LifecycleRuleView {
                        id: rule.id.clone(),
                        enabled: rule.enabled,
                        expired: done.expired,
                        versions_removed: done.versions_removed,
                        markers_removed: done.markers_removed,
                        transitioned: done.transitioned,
                        transitions_failed: done.transitions_failed,
                        uploads_aborted: done.uploads_aborted,
                        transitions_skipped: done.transitions_skipped,
                        last_action_ms: done.last_action_ms,
                    }
                })
                .collect();
            let plan = plan(&state.store, &bucket, &config, &clock).await?;
            let view = LifecycleStatusView {
                bucket: bucket.to_string(),
                last_scan_ms: activity.last_scan_ms,
                objects_scanned: activity.objects_scanned,
                rules,
                plan: serde_json::to_value(plan).expect("plans serialise"),
            };
            Ok(json(StatusCode::OK, &view))
        }
        Route::LifecycleDryRun => {
            let config = given().await?;
            let plan = plan(&state.store, &bucket, &config, &clock).await?;
            Ok(json(StatusCode::OK, &plan))
        }
        Route::LifecycleSet => {
            let config = given().await?;
            let xml = config.to_xml();
            state
                .store
                .update_bucket_settings(&bucket, |settings| {
                    settings.lifecycle = Some(xml.clone());
                    Ok(())
                })
                .await?;
            Ok(json(
                StatusCode::OK,
                &serde_json::json!({ "rules": config.rules.len() }),
            ))
        }
        _ => unreachable!("not a lifecycle route"),
    }
}

/// A key of the built-in key service, as `strata admin kms key list` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KmsKeyView {
    pub name: String,
    pub enabled: bool,
    pub created_ms: i64,
    /// The key SSE-KMS uses when a request names none.
    pub default: bool,
}

/// The answer to a key status check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KmsKeyStatusView {
    pub key: KmsKeyView,
    /// A data key was made and opened again with this key just now.
    pub encryption_works: bool,
    /// Why not, when it did not.
    pub error: Option<String>,
}

/// The built-in key service: named keys (list, create, status, enable, disable) and the
/// re-sealing of its catalog under a new master key (`rotate`).
async fn kms(state: &AdminState, route: Route, query: &Query) -> Result<Response, AdminError> {
    let kms = state.store.key_service().ok_or_else(|| AdminError {
        status: StatusCode::NOT_IMPLEMENTED,
        code: "KmsNotConfigured",
        message: "the server has no key service: start it with STRATA_KMS_SECRET_KEY".into(),
    })?;
    let name = || {
        query
            .get("name")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| AdminError::invalid("the name parameter is missing"))
    };
    let default = kms.default_key();
    let view = |info: KeyInfo| KmsKeyView {
        default: default.as_deref() == Some(info.name.as_str()),
        created_ms: info
            .created
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64),
        enabled: info.enabled,
        name: info.name,
    };
    let done = |name: &str| json(StatusCode::OK, &serde_json::json!({ "name": name }));
    match route {
        Route::KmsKeys => {
            let keys: Vec<KmsKeyView> = kms.list_keys().await?.into_iter().map(view).collect();
            Ok(json(StatusCode::OK, &keys))
        }
        Route::KmsCreateKey => {
            let name = name()?;
            kms.create_key(name).await?;
            Ok(done(name))
        }
        Route::KmsEnableKey(enabled) => {
            let name = name()?;
            match enabled {
                true => kms.enable_key(name).await?,
                false => kms.disable_key(name).await?,
            }
            Ok(done(name))
        }
        Route::KmsKeyStatus => {
            let name = name()?;
            let key = view(kms.key_status(name).await?);
            let context = crate::kms::EncryptionContext::new();
            let round_trip = async {
                let data_key = kms.generate_data_key(name, &context).await?;
                let opened = kms
                    .decrypt_data_key(name, &data_key.sealed, &context)
                    .await?;
                Ok::<bool, KmsError>(*opened == *data_key.plaintext)
            };
            let (encryption_works, error) = match round_trip.await {
                Ok(same) => (same, None),
                Err(e) => (false, Some(e.to_string())),
            };
            let status = KmsKeyStatusView {
                key,
                encryption_works,
                error,
            };
            Ok(json(StatusCode::OK, &status))
        }
        Route::KmsRotate => {
            let resealed = kms.rotate().await?;
            Ok(json(
                StatusCode::OK,
                &serde_json::json!({ "resealed": resealed }),
            ))
        }
        _ => Err(AdminError::internal("not a key service route")),
    }
}

impl From<KmsError> for AdminError {
    fn from(err: KmsError) -> Self {
        let status = match err {
            KmsError::NoSuchKey(_) => StatusCode::NOT_FOUND,
            KmsError::KeyExists(_) => StatusCode::CONFLICT,
            KmsError::Storage(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::BAD_REQUEST,
        };
        AdminError {
            status,
            code: err.s3_code(),
            message: err.to_string(),
        }
    }
}

/// An admin request refused: `{"error": {"code": ..., "message": ...}}` with its status.
#[derive(Debug)]
pub struct AdminError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl AdminError {
    pub(super) fn invalid(message: impl Into<String>) -> Self {
        AdminError {
            status: StatusCode::BAD_REQUEST,
            code: "InvalidArgument",
            message: message.into(),
        }
    }

    pub(super) fn internal(message: impl Into<String>) -> Self {
        AdminError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "InternalError",
            message: message.into(),
        }
    }

    fn into_response(self) -> Response {
        error(self.status, self.code, self.message)
    }
}

impl From<IamError> for AdminError {
    fn from(err: IamError) -> Self {
        let message = err.to_string();
        let (status, code) = match err {
            IamError::Store(e) => return e.into(),
            IamError::InvalidName(_) | IamError::InvalidSecret(_) => {
                (StatusCode::BAD_REQUEST, "InvalidArgument")
            }
            IamError::MalformedPolicy(_) => (StatusCode::BAD_REQUEST, "MalformedPolicy"),
            IamError::NoSuchUser(_) => (StatusCode::NOT_FOUND, "NoSuchUser"),
            IamError::NoSuchPolicy(_) => (StatusCode::NOT_FOUND, "NoSuchPolicy"),
            IamError::NotAttached(..) => (StatusCode::NOT_FOUND, "PolicyNotAttached"),
            IamError::UserExists(_) => (StatusCode::CONFLICT, "UserExists"),
            IamError::PolicyInUse(..) => (StatusCode::CONFLICT, "PolicyInUse"),
        };
        AdminError {
            status,
            code,
            message,
        }
    }
}

impl From<ObjectError> for AdminError {
    fn from(err: ObjectError) -> Self {
        let (status, code) = match &err {
            ObjectError::NoSuchBucket => (StatusCode::NOT_FOUND, "NoSuchBucket"),
            ObjectError::InvalidBucketName(_) => (StatusCode::BAD_REQUEST, "InvalidBucketName"),
            ObjectError::InvalidArgument(_) => (StatusCode::BAD_REQUEST, "InvalidArgument"),
            ObjectError::Conflict
            | ObjectError::Unavailable(_)
            | ObjectError::DriveFull
            | ObjectError::Body(_)
            | ObjectError::Erasure(_)
            | ObjectError::Tier(_) => (StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "InternalError"),
        };
        AdminError {
            status,
            code,
            message: err.to_string(),
        }
    }
}

impl From<RuleError> for AdminError {
    fn from(err: RuleError) -> Self {
        let code = match err {
            RuleError::MalformedXml(_) => "MalformedXML",
            RuleError::InvalidArgument(_) => "InvalidArgument",
        };
        AdminError {
            status: StatusCode::BAD_REQUEST,
            code,
            message: err.to_string(),
        }
    }
}

/// The request body, up to [`MAX_BODY`]; its signed digest is checked as it is read.
async fn read_body(mut body: ByteStream) -> Result<bytes::Bytes, AdminError> {
    use futures::StreamExt;
    let mut out = bytes::BytesMut::new();
    while let Some(chunk) = body.next().await {
        // A body that does not match its signed digest fails here too.
        let chunk = chunk.map_err(|e| AdminError::invalid(format!("the request body: {e}")))?;
        if out.len() + chunk.len() > MAX_BODY {
            return Err(AdminError::invalid(format!(
                "an admin request body has at most {MAX_BODY} bytes"
            )));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out.freeze())
}

/// The heal status on the wire: the healer's [`HealStatus`], held apart from it so that the
/// API changes only on purpose.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HealStatusView {
    pub running: Option<HealPassView>,
    pub last: Option<HealPassView>,
    pub healed_after_reads: HealReportView,
    /// Objects reads found damaged that wait for the healer.
    #[serde(default)]
    pub queued_after_reads: u64,
    /// Objects known to wait for healing: what the running pass has left, and the queue.
    #[serde(default)]
    pub objects_to_heal: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HealPassView {
    pub reason: String,
    pub scope: String,
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
    /// Objects the pass goes over.
    #[serde(default)]
    pub objects_total: u64,
    pub report: HealReportView,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealReportView {
    pub objects_checked: u64,
    pub bytes_checked: u64,
    pub objects_healed: u64,
    pub records_repaired: u64,
    pub shards_rebuilt: u64,
    pub stale_purged: u64,
    pub unresolved: u64,
}

impl From<HealStatus> for HealStatusView {
    fn from(status: HealStatus) -> Self {
        Self {
            objects_to_heal: status.objects_to_heal(),
            queued_after_reads: status.queued_after_reads,
            running: status.running.map(Into::into),
            last: status.last.map(Into::into),
            healed_after_reads: status.healed_after_reads.into(),
        }
    }
}

impl From<HealPass> for HealPassView {
    fn from(pass: HealPass) -> Self {
        Self {
            reason: pass.reason,
            scope: pass.scope,
            started_ms: pass.started_ms,
            finished_ms: pass.finished_ms,
            objects_total: pass.objects_total,
            report: pass.report.into(),
            error: pass.error,
        }
    }
}

impl From<HealReport> for HealReportView {
    fn from(r: HealReport) -> Self {
        Self {
            objects_checked: r.objects_checked,
            bytes_checked: r.bytes_checked,
            objects_healed: r.objects_healed,
            records_repaired: r.records_repaired,
            shards_rebuilt: r.shards_rebuilt,
            stale_purged: r.stale_purged,
            unresolved: r.unresolved,
        }
    }
}

/// An admin error that is not an S3 one: `{"error": {"code": ..., "message": ...}}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
}

pub(super) fn error(status: StatusCode, code: &str, message: String) -> Response {
    let body = ErrorBody {
        error: ErrorDetail {
            code: code.to_string(),
            message,
        },
    };
    json(status, &body)
}

pub(super) fn json(status: StatusCode, value: &impl Serialize) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from(
            serde_json::to_vec(value).expect("admin answers serialise"),
        ))
        .expect("static headers are valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_status_round_trips() {
        let status = HealStatus {
            running: Some(HealPass {
                reason: "admin".into(),
                scope: "b/p".into(),
                started_ms: 5,
                report: HealReport {
                    shards_rebuilt: 3,
                    ..HealReport::default()
                },
                ..HealPass::default()
            }),
            ..HealStatus::default()
        };
        let view = HealStatusView::from(status);
        let text = serde_json::to_string(&view).unwrap();
        let back: HealStatusView = serde_json::from_str(&text).unwrap();
        assert_eq!(back.running.unwrap().report.shards_rebuilt, 3);
        assert!(back.last.is_none());
    }
}
