//! The key service behind SSE-KMS and SSE-S3: named keys that never leave it, and the data
//! keys it generates and unseals under them.
//!
//! [`KeyService`] is the seam: [`builtin::BuiltinKms`] implements it from a deployment master
//! key and a catalog of named keys kept in Strata's own records; an external KMS (KES, Vault,
//! AWS KMS) can implement it later without the object layer changing.

pub mod builtin;
pub mod sealing;

use std::collections::BTreeMap;
use std::time::SystemTime;

use async_trait::async_trait;
use zeroize::Zeroizing;

pub use builtin::{BuiltinKms, KeyCatalog, MasterKey, MemoryCatalog};

/// The encryption context of a data key: name/value pairs that must be given again, exactly,
/// to unseal it (S3's `x-amz-server-side-encryption-context`, plus what Strata binds).
pub type EncryptionContext = BTreeMap<String, String>;

/// A fresh data key: its plaintext, to use now and forget, and its sealed form, to store.
pub struct DataKey {
    pub plaintext: Zeroizing<[u8; 32]>,
    /// Opaque to the caller; only [`KeyService::decrypt_data_key`] with the same key and
    /// context opens it.
    pub sealed: Vec<u8>,
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataKey")
            .field("plaintext", &"<redacted>")
            .field("sealed_len", &self.sealed.len())
            .finish()
    }
}

/// What the key service tells about one named key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    pub name: String,
    pub enabled: bool,
    pub created: SystemTime,
}

/// Why a key-service call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KmsError {
    #[error("no such KMS key: {0}")]
    NoSuchKey(String),
    #[error("KMS key is disabled: {0}")]
    KeyDisabled(String),
    #[error("KMS key already exists: {0}")]
    KeyExists(String),
    /// A malformed input: a key name, a master key, a sealed blob of the wrong shape.
    #[error("invalid KMS input: {0}")]
    Invalid(String),
    /// Sealed data did not authenticate: another key or context, or altered bytes.
    #[error("KMS ciphertext does not open with this key and context")]
    Tampered,
    /// The catalog could not be read or written, or does not decode.
    #[error("KMS storage: {0}")]
    Storage(String),
}

impl KmsError {
    /// The S3 error code to answer with (each with HTTP 400 except `Storage`, which is the
    /// server's fault: 500 InternalError or 503).
    pub fn s3_code(&self) -> &'static str {
        match self {
            Self::NoSuchKey(_) => "KMS.NotFoundException",
            Self::KeyDisabled(_) => "KMS.DisabledException",
            Self::KeyExists(_) => "KMS.AlreadyExistsException",
            Self::Invalid(_) => "KMS.InvalidKeyUsageException",
            Self::Tampered => "KMS.InvalidCiphertextException",
            Self::Storage(_) => "InternalError",
        }
    }
}

/// A key service. Async because the real ones are remote (an external KMS) or persist
/// through Strata's own records (the built-in one's catalog): both are I/O.
#[async_trait]
pub trait KeyService: Send + Sync {
    /// A new random data key, sealed under named key `key_id` and bound to `context`.
    /// Fails with `NoSuchKey` or `KeyDisabled`.
    async fn generate_data_key(
        &self,
        key_id: &str,
        context: &EncryptionContext,
    ) -> Result<DataKey, KmsError>;

    /// Opens a data key sealed by [`generate_data_key`](Self::generate_data_key) with the
    /// same `key_id` and `context`; `Tampered` otherwise, `KeyDisabled` if the key is.
    async fn decrypt_data_key(
        &self,
        key_id: &str,
        sealed: &[u8],
        context: &EncryptionContext,
    ) -> Result<Zeroizing<[u8; 32]>, KmsError>;

    /// The key-encryption key of SSE-S3 objects: one deployment-wide secret that the
    /// service keeps (and its master-key rotation preserves).
    async fn sse_s3_kek(&self) -> Result<Zeroizing<[u8; 32]>, KmsError>;

    /// Creates a named key with fresh random material; `KeyExists` if the name is taken.
    async fn create_key(&self, name: &str) -> Result<(), KmsError>;

    /// Every named key a client may use, by name.
    async fn list_keys(&self) -> Result<Vec<KeyInfo>, KmsError>;

    /// One named key; `NoSuchKey` if it does not exist.
    async fn key_status(&self, name: &str) -> Result<KeyInfo, KmsError>;

    /// Stops a key from generating or opening data keys, until enabled again. Objects under
    /// it stay unreadable meanwhile; nothing is lost.
    async fn disable_key(&self, name: &str) -> Result<(), KmsError>;

    async fn enable_key(&self, name: &str) -> Result<(), KmsError>;

    /// Re-seals what the service keeps under its current master key (after the master key
    /// changed); returns how many keys it re-sealed.
    async fn rotate(&self) -> Result<usize, KmsError>;

    /// The key SSE-KMS uses when a request names none.
    fn default_key(&self) -> Option<String>;

    /// Reads again what the service keeps, which another server changed.
    async fn reload(&self) -> Result<(), KmsError> {
        Ok(())
    }
}
