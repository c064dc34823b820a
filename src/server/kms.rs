//! The built-in key service, opened at start when a master key is configured, with its
//! catalog kept in the deployment's system records (its key material sealed by the master
//! key, which never reaches the drives).

use std::sync::Arc;

use async_trait::async_trait;

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
const RELOAD: std::time::Duration = std::time::Duration::from_secs(30);
/// How often opening the key service is tried again while its catalog cannot be read.
const RETRY: std::time::Duration = std::time::Duration::from_secs(5);

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
/// be read yet (drives missing) is retried in the background, SSE-S3 and SSE-KMS answering
/// 503 meanwhile.
pub async fn start(store: &Arc<ObjectStore>) -> anyhow::Result<()> {
    let Some(master) = MasterKey::from_env()? else {
        tracing::info!(
            "no STRATA_KMS_SECRET_KEY: SSE-S3 and SSE-KMS requests are refused (SSE-C works)"
        );
        return Ok(());
    };
    previous_keys()?;
    store.expect_key_service();
    if let Err(e) = open(store, master).await {
        tracing::warn!(error = %e, "could not open the key service yet; retrying in the background");
        let store = store.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(RETRY).await;
                // Parsed at start: these read again what was read then.
                let Ok(Some(master)) = MasterKey::from_env() else {
                    break;
                };
                match open(&store, master).await {
                    Ok(()) => break,
                    Err(e) => tracing::warn!(error = %e, "could not open the key service yet"),
                }
            }
        });
    }
    Ok(())
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

/// Opens the catalog under `master` (creating its first keys on a new deployment), gives
/// the service to the store and reads the catalog again now and then.
async fn open(store: &Arc<ObjectStore>, master: MasterKey) -> anyhow::Result<()> {
    let name = master.name().to_string();
    let catalog = Arc::new(SystemCatalog(store.clone()));
    let kms = Arc::new(BuiltinKms::open_with_previous(master, previous_keys()?, catalog).await?);
    store.set_key_service(kms.clone());
    let reloaded = Arc::downgrade(&kms);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(RELOAD).await;
            let Some(kms) = reloaded.upgrade() else { break };
            if let Err(e) = kms.reload().await {
                tracing::warn!(error = %e, "could not read the key catalog again");
            }
        }
    });
    tracing::info!(default_key = %name, "built-in key service ready for SSE-S3 and SSE-KMS");
    Ok(())
}
