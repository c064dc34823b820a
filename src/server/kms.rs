//! The built-in key service, opened at start when a master key is configured, with its
//! catalog kept in the deployment's system records (its key material sealed by the master
//! key, which never reaches the drives).

use std::sync::Arc;

use async_trait::async_trait;

use crate::kms::builtin::{BuiltinKms, KeyCatalog, MasterKey};
use crate::kms::KmsError;
use crate::object::ObjectStore;

/// The system record that holds the catalog.
const CATALOG_RECORD: &str = "kms/catalog";

struct SystemCatalog(Arc<ObjectStore>);

#[async_trait]
impl KeyCatalog for SystemCatalog {
    async fn load(&self) -> Result<Option<Vec<u8>>, KmsError> {
        (self.0.system_get(CATALOG_RECORD).await).map_err(|e| KmsError::Storage(e.to_string()))
    }

    async fn save(&self, bytes: &[u8]) -> Result<(), KmsError> {
        (self.0.system_put(CATALOG_RECORD, bytes.to_vec()).await)
            .map_err(|e| KmsError::Storage(e.to_string()))
    }
}

/// Opens the key service of `STRATA_KMS_SECRET_KEY` (or `STRATA_KMS_SECRET_KEY_FILE`) and
/// gives it to the store; without a master key SSE-S3 and SSE-KMS are refused (SSE-C needs
/// no key service).
pub async fn start(store: &Arc<ObjectStore>) -> anyhow::Result<Option<Arc<BuiltinKms>>> {
    let Some(master) = MasterKey::from_env()? else {
        tracing::info!(
            "no STRATA_KMS_SECRET_KEY: SSE-S3 and SSE-KMS requests are refused (SSE-C works)"
        );
        return Ok(None);
    };
    let name = master.name().to_string();
    let catalog = Arc::new(SystemCatalog(store.clone()));
    let kms = Arc::new(BuiltinKms::open(master, catalog).await?);
    store.set_key_service(kms.clone());
    tracing::info!(default_key = %name, "built-in key service ready for SSE-S3 and SSE-KMS");
    Ok(Some(kms))
}
