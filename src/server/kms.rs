//! The built-in key service, opened at start when a master key is configured, with its
//! catalog kept in the deployment's system records (its key material sealed by the master
//! key, which never reaches the drives).

use std::sync::{Arc, Weak};
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;

use crate::background::{Jobs, Worker};
use crate::kms::builtin::{BuiltinKms, KeyCatalog, MasterKey};
use crate::kms::KmsError;
use crate::object::ObjectStore;

/// The system record that holds the catalog.
/// Where the key service's records are kept among the system records.
pub const RECORD_PREFIX: &str = "kms/";
const CATALOG_RECORD: &str = "kms/catalog";
/// Earlier master keys, while the catalog is re-sealed under a new one (`strata admin kms
/// rotate`): `<name>:<base64>` entries separated by commas.
const PREVIOUS_KEYS_ENV: &str = "STRATA_KMS_PREVIOUS_SECRET_KEYS";
/// How often the catalog is read again (keys created or disabled by another server).
const RELOAD: Duration = Duration::from_secs(30);
/// How often opening the key service is tried again while its catalog cannot be read.
const RETRY: Duration = Duration::from_secs(5);

struct SystemCatalog(Arc<ObjectStore>);

#[async_trait]
impl KeyCatalog for SystemCatalog {
    async fn load(&self) -> Result<Option<Vec<u8>>, KmsError> {
        (self.0.system_get(CATALOG_RECORD).await).map_err(|e| KmsError::Storage(e.to_string()))
    }

    async fn save_if(&self, expected: Option<&[u8]>, bytes: &[u8]) -> Result<bool, KmsError> {
        (self
            .0
            .system_put_if(CATALOG_RECORD, expected, bytes.to_vec())
            .await)
            .map_err(|e| KmsError::Storage(e.to_string()))
    }
}

/// Opens the key service of `STRATA_KMS_SECRET_KEY` (or `STRATA_KMS_SECRET_KEY_FILE`) and
/// gives it to the store; without a master key SSE-S3 and SSE-KMS are refused (SSE-C needs
/// no key service). A master key that does not parse stops the start; a catalog that cannot
/// be read yet (drives missing) is retried by the `key-service` job, SSE-S3 and SSE-KMS
/// answering 503 meanwhile. Once open, that job reads the catalog again now and then.
pub async fn start(store: &Arc<ObjectStore>, jobs: &Jobs) -> anyhow::Result<()> {
    let Some(master) = MasterKey::from_env()? else {
        tracing::info!(
            "no STRATA_KMS_SECRET_KEY: SSE-S3 and SSE-KMS requests are refused (SSE-C works)"
        );
        return Ok(());
    };
    previous_keys()?;
    store.expect_key_service();
    let opened = match open(store, master).await {
        Ok(kms) => Some(Arc::downgrade(&kms)),
        Err(e) => {
            tracing::warn!(error = %e, "could not open the key service yet; retrying in the background");
            None
        }
    };
    let store = store.clone();
    jobs.spawn(None, KeyService { store, opened });
    Ok(())
}

/// The key service's job: opens it while it could not be opened, then reads its catalog
/// again (keys created or disabled by another server).
struct KeyService {
    store: Arc<ObjectStore>,
    opened: Option<Weak<BuiltinKms>>,
}

#[async_trait]
impl Worker for KeyService {
    fn name(&self) -> &'static str {
        "key-service"
    }

    fn interval(&self) -> Duration {
        match self.opened {
            Some(_) => RELOAD,
            None => RETRY,
        }
    }

    async fn run_once(&mut self) -> anyhow::Result<String> {
        if let Some(kms) = &self.opened {
            let kms = kms.upgrade().context("the key service stopped")?;
            (kms.reload().await).context("could not read the key catalog again")?;
            return Ok("key catalog read again".into());
        }
        // Parsed at start: this reads again what was read then.
        let master = MasterKey::from_env()?.context("the master key is gone")?;
        let kms =
            (open(&self.store, master).await).context("could not open the key service yet")?;
        self.opened = Some(Arc::downgrade(&kms));
        Ok("key service open".into())
    }
}

/// The master keys of `STRATA_KMS_PREVIOUS_SECRET_KEYS`.
fn previous_keys() -> anyhow::Result<Vec<MasterKey>> {
    match std::env::var(PREVIOUS_KEYS_ENV) {
        Ok(list) => (list.split(',').map(str::trim).filter(|k| !k.is_empty()))
            .map(MasterKey::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow::anyhow!("{PREVIOUS_KEYS_ENV}: {e}")),
        Err(_) => Ok(Vec::new()),
    }
}

/// Opens the catalog under `master` (creating its first keys on a new deployment) and gives
/// the service to the store.
async fn open(store: &Arc<ObjectStore>, master: MasterKey) -> anyhow::Result<Arc<BuiltinKms>> {
    let name = master.name().to_string();
    let catalog = Arc::new(SystemCatalog(store.clone()));
    let kms = Arc::new(BuiltinKms::open_with_previous(master, previous_keys()?, catalog).await?);
    store.set_key_service(kms.clone());
    tracing::info!(default_key = %name, "built-in key service ready for SSE-S3 and SSE-KMS");
    Ok(kms)
}
