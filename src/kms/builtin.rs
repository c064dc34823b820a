//! The built-in key service: a deployment master key from the environment, and a catalog of
//! named keys sealed by it and kept in Strata's own records.
//!
//! - The master key (`STRATA_KMS_SECRET_KEY=<name>:<base64 of 32 bytes>`, or the same text in
//!   the file named by `STRATA_KMS_SECRET_KEY_FILE`) is never written to the data drives. It
//!   seals only the named keys' material (AES-256-GCM, associated data = the key's name).
//! - Named keys seal data keys (associated data = key name + canonical encryption context).
//!   Objects store sealed data keys, never anything sealed by the master, so rotating the
//!   master re-seals the catalog only: [`BuiltinKms::rotate`].
//! - The default key is named after the master key, and the SSE-S3 key-encryption key is the
//!   reserved key `@sse-s3` (hidden from listings, unusable by name). Both are created in the
//!   catalog at first start with material derived from the master key by HKDF-SHA256 — so
//!   servers starting together on an empty catalog agree without coordination — and from
//!   then on the catalog's sealed copy is what counts: rotation re-seals them and they never
//!   change.
//!
//! Writers (create, enable, disable, rotate, first start) re-read the catalog before
//! changing it, but two servers writing at once can still lose one write: the server must
//! run these admin operations one at a time across the deployment (or make
//! [`KeyCatalog::save`] conditional). Readers see keys created elsewhere because a lookup
//! that misses re-reads the catalog (at most once a second); [`BuiltinKms::reload`] picks up
//! other changes (a key disabled on another server).
//!
//! Rotating the master key: restart every server with the new master key and the old one
//! as previous ([`BuiltinKms::open_with_previous`]); then call [`BuiltinKms::rotate`] once;
//! then the old key can be dropped from the configuration. A server still running with the
//! old key alone would seal a key it creates under the old master, which then no longer
//! opens once the old key is gone.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hkdf::Hkdf;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use zeroize::Zeroizing;

use super::sealing::{open_bytes, push_length_prefixed, random_key, seal_bytes};
use super::{DataKey, EncryptionContext, KeyInfo, KeyService, KmsError};

/// The environment variable holding the master key, `<name>:<base64 of 32 bytes>`.
pub const MASTER_KEY_ENV: &str = "STRATA_KMS_SECRET_KEY";
/// The environment variable naming a file that holds the master key in the same format.
pub const MASTER_KEY_FILE_ENV: &str = "STRATA_KMS_SECRET_KEY_FILE";
/// The reserved catalog key whose material is the SSE-S3 key-encryption key.
pub const SSE_S3_KEY: &str = "@sse-s3";

const CATALOG_VERSION: u32 = 1;
/// How often a catalog change is read and tried again while other writers keep winning.
const MUTATE_ATTEMPTS: usize = 10;
const DATA_KEY_VERSION: u8 = 1;
/// Version byte, IV, sealed 32-byte key and its tag.
const SEALED_DATA_KEY_LEN: usize = 1 + 32 + 32 + 16;
/// At most one catalog re-read per this interval for lookups of unknown keys, so requests
/// naming made-up keys cannot turn into a stream of catalog reads.
const MISS_RELOAD_INTERVAL: Duration = Duration::from_secs(1);

/// The deployment's master key: its name and 32 secret bytes.
pub struct MasterKey {
    name: String,
    key: Zeroizing<[u8; 32]>,
}

impl MasterKey {
    /// Parses `<name>:<base64 of 32 bytes>` (surrounding whitespace ignored).
    pub fn parse(text: &str) -> Result<Self, KmsError> {
        let (name, encoded) = text
            .trim()
            .split_once(':')
            .ok_or_else(|| KmsError::Invalid("master key must be <name>:<base64>".into()))?;
        validate_key_name(name)?;
        let decoded = Zeroizing::new(
            BASE64
                .decode(encoded.trim())
                .map_err(|_| KmsError::Invalid("master key is not valid base64".into()))?,
        );
        let key: [u8; 32] = decoded
            .as_slice()
            .try_into()
            .map_err(|_| KmsError::Invalid("master key must be 32 bytes".into()))?;
        Ok(Self {
            name: name.to_owned(),
            key: Zeroizing::new(key),
        })
    }

    /// Reads a master key file: the same format as [`parse`](Self::parse).
    pub fn from_file(path: &Path) -> Result<Self, KmsError> {
        let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|error| {
            KmsError::Invalid(format!("reading master key {}: {error}", path.display()))
        })?);
        Self::parse(&text)
    }

    /// The master key from [`MASTER_KEY_ENV`], else from the file named by
    /// [`MASTER_KEY_FILE_ENV`]; `None` when neither is set (no KMS configured).
    pub fn from_env() -> Result<Option<Self>, KmsError> {
        if let Ok(text) = std::env::var(MASTER_KEY_ENV) {
            return Self::parse(&Zeroizing::new(text)).map(Some);
        }
        match std::env::var_os(MASTER_KEY_FILE_ENV) {
            Some(path) => Self::from_file(Path::new(&path)).map(Some),
            None => Ok(None),
        }
    }

    /// A new random master key named `name`, for setup tools and tests.
    pub fn generate(name: &str) -> Result<Self, KmsError> {
        validate_key_name(name)?;
        Ok(Self {
            name: name.to_owned(),
            key: random_key(),
        })
    }

    /// The key in the format [`parse`](Self::parse) reads, for a setup tool to show once.
    pub fn encode(&self) -> Zeroizing<String> {
        Zeroizing::new(format!(
            "{}:{}",
            self.name,
            BASE64.encode(self.key.as_slice())
        ))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Key material derived from the master key for `label`: used once, when a built-in key
    /// is first created, so every server derives the same.
    fn derive(&self, label: &[u8]) -> Zeroizing<[u8; 32]> {
        let mut derived = Zeroizing::new([0u8; 32]);
        Hkdf::<Sha256>::new(None, self.key.as_slice())
            .expand(label, derived.as_mut_slice())
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        derived
    }
}

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MasterKey")
            .field("name", &self.name)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// Key names clients and operators may use: 1 to 64 of `A-Z a-z 0-9 . _ -`. Reserved keys
/// start with `@`, so no client can name one.
fn validate_key_name(name: &str) -> Result<(), KmsError> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if valid {
        Ok(())
    } else {
        Err(KmsError::Invalid(format!("invalid key name {name:?}")))
    }
}

/// Where the built-in service keeps its catalog (the server implements it on its system
/// records). The bytes are JSON whose key material is sealed by the master key: safe to
/// keep on the data drives.
#[async_trait]
pub trait KeyCatalog: Send + Sync {
    /// The stored catalog, `None` before the first save.
    async fn load(&self) -> Result<Option<Vec<u8>>, KmsError>;
    /// Replaces the stored catalog if it still holds `expected` (`None`: no catalog yet),
    /// atomically: readers see the old bytes or the new. `false` when another writer (another
    /// server) changed it first: nothing was written.
    async fn save_if(&self, expected: Option<&[u8]>, bytes: &[u8]) -> Result<bool, KmsError>;
}

/// A catalog in memory, for tests and single-process tools.
#[derive(Debug, Default)]
pub struct MemoryCatalog(Mutex<Option<Vec<u8>>>);

impl MemoryCatalog {
    pub fn new() -> Self {
        Self::default()
    }

    /// A catalog holding `bytes`, as if saved earlier.
    pub fn with_bytes(bytes: Vec<u8>) -> Self {
        Self(Mutex::new(Some(bytes)))
    }

    /// The saved bytes, if any.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[async_trait]
impl KeyCatalog for MemoryCatalog {
    async fn load(&self) -> Result<Option<Vec<u8>>, KmsError> {
        Ok(self.bytes())
    }

    async fn save_if(&self, expected: Option<&[u8]>, bytes: &[u8]) -> Result<bool, KmsError> {
        let mut stored = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if stored.as_deref() != expected {
            return Ok(false);
        }
        *stored = Some(bytes.to_vec());
        Ok(true)
    }
}

/// The stored catalog.
#[derive(Serialize, Deserialize)]
struct CatalogFile {
    version: u32,
    keys: Vec<CatalogEntry>,
}

/// One named key as stored.
#[derive(Clone, Serialize, Deserialize)]
struct CatalogEntry {
    name: String,
    /// Seconds since the Unix epoch.
    created: u64,
    enabled: bool,
    /// Name of the master key that sealed `sealed`.
    sealed_by: String,
    /// Base64 of the seal's IV.
    iv: String,
    /// Base64 of the sealed material and its tag.
    sealed: String,
}

/// One named key in memory: its stored entry and its opened material.
#[derive(Clone)]
struct NamedKey {
    entry: CatalogEntry,
    material: Zeroizing<[u8; 32]>,
}

impl NamedKey {
    fn info(&self) -> KeyInfo {
        KeyInfo {
            name: self.entry.name.clone(),
            enabled: self.entry.enabled,
            created: UNIX_EPOCH + Duration::from_secs(self.entry.created),
        }
    }
}

type Keys = BTreeMap<String, NamedKey>;

/// The associated data sealing a named key's material under the master key.
fn named_key_ad(name: &str) -> Vec<u8> {
    let mut ad = b"strata kms named key v1".to_vec();
    push_length_prefixed(&mut ad, name.as_bytes());
    ad
}

/// The associated data sealing a data key: the key's name, then each context pair in
/// order, every field length-prefixed (the canonical form of the context).
fn data_key_ad(key_id: &str, context: &EncryptionContext) -> Vec<u8> {
    let mut ad = b"strata kms data key v1".to_vec();
    push_length_prefixed(&mut ad, key_id.as_bytes());
    ad.extend_from_slice(&(context.len() as u32).to_be_bytes());
    for (name, value) in context {
        push_length_prefixed(&mut ad, name.as_bytes());
        push_length_prefixed(&mut ad, value.as_bytes());
    }
    ad
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// The built-in [`KeyService`]. See the module documentation for its design.
pub struct BuiltinKms {
    master: MasterKey,
    /// Earlier master keys, to open catalog entries not yet re-sealed by [`Self::rotate`].
    previous: Vec<MasterKey>,
    catalog: Arc<dyn KeyCatalog>,
    keys: ArcSwap<Keys>,
    /// Serialises this server's catalog writes.
    writer: tokio::sync::Mutex<()>,
    /// When a lookup of an unknown key last re-read the catalog.
    last_miss_reload: Mutex<Option<Instant>>,
}

impl BuiltinKms {
    /// Opens the service: reads the catalog, and on first start creates the default key
    /// (named after the master key) and the SSE-S3 key in it.
    pub async fn open(master: MasterKey, catalog: Arc<dyn KeyCatalog>) -> Result<Self, KmsError> {
        Self::open_with_previous(master, Vec::new(), catalog).await
    }

    /// Like [`open`](Self::open), while rotating: catalog entries sealed by any of the
    /// `previous` master keys still open, until [`rotate`](Self::rotate) re-seals them.
    pub async fn open_with_previous(
        master: MasterKey,
        previous: Vec<MasterKey>,
        catalog: Arc<dyn KeyCatalog>,
    ) -> Result<Self, KmsError> {
        let kms = Self {
            master,
            previous,
            catalog,
            keys: ArcSwap::from_pointee(Keys::new()),
            writer: tokio::sync::Mutex::new(()),
            last_miss_reload: Mutex::new(None),
        };
        kms.reload().await?;
        let keys = kms.keys.load();
        if !keys.contains_key(SSE_S3_KEY) || !keys.contains_key(kms.master.name()) {
            kms.mutate(|kms, keys| {
                for (name, label) in [
                    (SSE_S3_KEY.to_owned(), b"strata sse-s3".to_vec()),
                    (kms.master.name.clone(), {
                        let mut label = b"strata kms default key".to_vec();
                        push_length_prefixed(&mut label, kms.master.name.as_bytes());
                        label
                    }),
                ] {
                    if !keys.contains_key(&name) {
                        let material = kms.master.derive(&label);
                        keys.insert(name.clone(), kms.seal_named_key(&name, material));
                    }
                }
                Ok(())
            })
            .await?;
        }
        Ok(kms)
    }

    /// Re-reads the catalog (to see changes made by other servers).
    pub async fn reload(&self) -> Result<(), KmsError> {
        let keys = self.load_catalog().await?;
        self.keys.store(Arc::new(keys));
        Ok(())
    }

    /// Re-seals every catalog entry under the current master key and saves the catalog;
    /// returns how many entries changed. Afterwards the previous master keys are no longer
    /// needed. Objects are untouched: their data keys are sealed by named keys, whose
    /// material does not change.
    pub async fn rotate(&self) -> Result<usize, KmsError> {
        self.mutate(|kms, keys| {
            let mut resealed = 0;
            for key in keys.values_mut() {
                if key.entry.sealed_by != kms.master.name {
                    let fresh = kms.seal_named_key(&key.entry.name, key.material.clone());
                    key.entry.sealed_by = fresh.entry.sealed_by;
                    key.entry.iv = fresh.entry.iv;
                    key.entry.sealed = fresh.entry.sealed;
                    resealed += 1;
                }
            }
            Ok(resealed)
        })
        .await
    }

    /// A catalog entry for `material` under `name`, sealed by the current master key.
    fn seal_named_key(&self, name: &str, material: Zeroizing<[u8; 32]>) -> NamedKey {
        let (iv, sealed) = seal_bytes(&self.master.key, &named_key_ad(name), material.as_slice());
        NamedKey {
            entry: CatalogEntry {
                name: name.to_owned(),
                created: now_unix(),
                enabled: true,
                sealed_by: self.master.name.clone(),
                iv: BASE64.encode(iv),
                sealed: BASE64.encode(sealed),
            },
            material,
        }
    }

    /// Reads and opens the stored catalog.
    async fn load_catalog(&self) -> Result<Keys, KmsError> {
        self.open_catalog(self.catalog.load().await?.as_deref())
    }

    /// Opens the keys of a stored catalog (none: no catalog yet).
    fn open_catalog(&self, stored: Option<&[u8]>) -> Result<Keys, KmsError> {
        let Some(bytes) = stored else {
            return Ok(Keys::new());
        };
        let file: CatalogFile = serde_json::from_slice(bytes)
            .map_err(|error| KmsError::Storage(format!("KMS catalog does not decode: {error}")))?;
        if file.version != CATALOG_VERSION {
            return Err(KmsError::Storage(format!(
                "KMS catalog version {} is not supported",
                file.version
            )));
        }
        let mut keys = Keys::new();
        for entry in file.keys {
            let material = self.open_entry(&entry)?;
            keys.insert(entry.name.clone(), NamedKey { entry, material });
        }
        Ok(keys)
    }

    fn open_entry(&self, entry: &CatalogEntry) -> Result<Zeroizing<[u8; 32]>, KmsError> {
        let storage =
            |what: &str| KmsError::Storage(format!("KMS catalog key {:?}: {what}", entry.name));
        let iv: [u8; 32] = BASE64
            .decode(&entry.iv)
            .ok()
            .and_then(|iv| iv.try_into().ok())
            .ok_or_else(|| storage("bad IV"))?;
        let sealed = BASE64
            .decode(&entry.sealed)
            .map_err(|_| storage("bad sealed material"))?;
        let mut masters = std::iter::once(&self.master)
            .chain(&self.previous)
            .filter(|master| master.name == entry.sealed_by)
            .peekable();
        if masters.peek().is_none() {
            return Err(storage(&format!(
                "sealed by master key {:?}, which is not configured",
                entry.sealed_by
            )));
        }
        let ad = named_key_ad(&entry.name);
        let material = masters
            .find_map(|master| open_bytes(&master.key, &iv, &ad, &sealed))
            .ok_or_else(|| {
                storage(&format!(
                    "does not open with master key {:?} (wrong key, or altered)",
                    entry.sealed_by
                ))
            })?;
        let material: [u8; 32] = material
            .as_slice()
            .try_into()
            .map_err(|_| storage("material is not 32 bytes"))?;
        Ok(Zeroizing::new(material))
    }

    /// Applies `change` to a fresh copy of the stored catalog, saves it, and publishes it.
    async fn mutate<T>(
        &self,
        change: impl Fn(&Self, &mut Keys) -> Result<T, KmsError>,
    ) -> Result<T, KmsError> {
        let _writing = self.writer.lock().await;
        // Read, change, and save only over what was read: a change another server saved
        // meanwhile is read and changed again, never overwritten (a key lost from the catalog
        // is every object under it lost).
        for _ in 0..MUTATE_ATTEMPTS {
            let stored = self.catalog.load().await?;
            let mut keys = self.open_catalog(stored.as_deref())?;
            let result = change(self, &mut keys)?;
            let file = CatalogFile {
                version: CATALOG_VERSION,
                keys: keys.values().map(|key| key.entry.clone()).collect(),
            };
            let bytes = serde_json::to_vec(&file)
                .map_err(|error| KmsError::Storage(format!("encoding KMS catalog: {error}")))?;
            if self.catalog.save_if(stored.as_deref(), &bytes).await? {
                self.keys.store(Arc::new(keys));
                return Ok(result);
            }
        }
        Err(KmsError::Storage(
            "the KMS catalog kept changing under other writers; try again".into(),
        ))
    }

    /// A client-nameable key, re-reading the catalog if it is unknown here (another server
    /// may have created it), at most once per [`MISS_RELOAD_INTERVAL`].
    async fn find_key(&self, name: &str) -> Result<NamedKey, KmsError> {
        if validate_key_name(name).is_err() {
            return Err(KmsError::NoSuchKey(name.to_owned()));
        }
        if let Some(key) = self.keys.load().get(name) {
            return Ok(key.clone());
        }
        let reload_due = {
            let mut last = self
                .last_miss_reload
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let due = last.is_none_or(|at| at.elapsed() >= MISS_RELOAD_INTERVAL);
            if due {
                *last = Some(Instant::now());
            }
            due
        };
        if reload_due {
            self.reload().await?;
        }
        self.keys
            .load()
            .get(name)
            .cloned()
            .ok_or_else(|| KmsError::NoSuchKey(name.to_owned()))
    }

    /// A key that may seal and open data keys now.
    async fn usable_key(&self, name: &str) -> Result<NamedKey, KmsError> {
        let key = self.find_key(name).await?;
        if !key.entry.enabled {
            return Err(KmsError::KeyDisabled(name.to_owned()));
        }
        Ok(key)
    }

    async fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), KmsError> {
        self.find_key(name).await?;
        self.mutate(|_, keys| {
            let key = keys
                .get_mut(name)
                .ok_or_else(|| KmsError::NoSuchKey(name.to_owned()))?;
            key.entry.enabled = enabled;
            Ok(())
        })
        .await
    }
}

impl std::fmt::Debug for BuiltinKms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinKms")
            .field("master", &self.master)
            .field("keys", &self.keys.load().len())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl KeyService for BuiltinKms {
    async fn generate_data_key(
        &self,
        key_id: &str,
        context: &EncryptionContext,
    ) -> Result<DataKey, KmsError> {
        let key = self.usable_key(key_id).await?;
        let plaintext = random_key();
        let (iv, sealed_key) = seal_bytes(
            &key.material,
            &data_key_ad(key_id, context),
            plaintext.as_slice(),
        );
        let mut sealed = Vec::with_capacity(SEALED_DATA_KEY_LEN);
        sealed.push(DATA_KEY_VERSION);
        sealed.extend_from_slice(&iv);
        sealed.extend_from_slice(&sealed_key);
        Ok(DataKey { plaintext, sealed })
    }

    async fn decrypt_data_key(
        &self,
        key_id: &str,
        sealed: &[u8],
        context: &EncryptionContext,
    ) -> Result<Zeroizing<[u8; 32]>, KmsError> {
        let key = self.usable_key(key_id).await?;
        if sealed.len() != SEALED_DATA_KEY_LEN || sealed[0] != DATA_KEY_VERSION {
            return Err(KmsError::Invalid("not a sealed data key".into()));
        }
        let (iv, sealed_key) = sealed[1..].split_at(32);
        let iv: [u8; 32] = iv
            .try_into()
            .map_err(|_| KmsError::Invalid("not a sealed data key".into()))?;
        let plaintext = open_bytes(
            &key.material,
            &iv,
            &data_key_ad(key_id, context),
            sealed_key,
        )
        .ok_or(KmsError::Tampered)?;
        let plaintext: [u8; 32] = plaintext
            .as_slice()
            .try_into()
            .map_err(|_| KmsError::Tampered)?;
        Ok(Zeroizing::new(plaintext))
    }

    async fn sse_s3_kek(&self) -> Result<Zeroizing<[u8; 32]>, KmsError> {
        self.keys
            .load()
            .get(SSE_S3_KEY)
            .map(|key| key.material.clone())
            .ok_or_else(|| KmsError::Storage("the SSE-S3 key is missing from the catalog".into()))
    }

    async fn create_key(&self, name: &str) -> Result<(), KmsError> {
        validate_key_name(name)?;
        self.mutate(|kms, keys| {
            if keys.contains_key(name) {
                return Err(KmsError::KeyExists(name.to_owned()));
            }
            keys.insert(name.to_owned(), kms.seal_named_key(name, random_key()));
            Ok(())
        })
        .await
    }

    async fn list_keys(&self) -> Result<Vec<KeyInfo>, KmsError> {
        Ok(self
            .keys
            .load()
            .values()
            .filter(|key| validate_key_name(&key.entry.name).is_ok())
            .map(NamedKey::info)
            .collect())
    }

    async fn key_status(&self, name: &str) -> Result<KeyInfo, KmsError> {
        Ok(self.find_key(name).await?.info())
    }

    async fn disable_key(&self, name: &str) -> Result<(), KmsError> {
        self.set_enabled(name, false).await
    }

    async fn enable_key(&self, name: &str) -> Result<(), KmsError> {
        self.set_enabled(name, true).await
    }

    async fn rotate(&self) -> Result<usize, KmsError> {
        BuiltinKms::rotate(self).await
    }

    async fn reload(&self) -> Result<(), KmsError> {
        BuiltinKms::reload(self).await
    }

    fn default_key(&self) -> Option<String> {
        Some(self.master.name.clone())
    }
}

#[cfg(test)]
#[path = "builtin_tests.rs"]
mod tests;
