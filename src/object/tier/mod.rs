//! Tiers: colder storage that lifecycle transitions move object data to. A tier is named by
//! the `StorageClass` of transition rules; the object keeps its record here (key, metadata,
//! ETag, version) and the record says where in the tier its bytes went, so reads stream them
//! back transparently.
//!
//! This layer only defines what a tier must do; the implementations (a second local drive
//! pool, a remote S3 endpoint) live in `crate::tier`.

pub(super) mod transition;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use thiserror::Error;

use crate::body::ByteStream;

/// What went wrong talking to a tier.
#[derive(Debug, Error)]
pub enum TierError {
    /// The tier did not answer or answered with a server error: try again later.
    #[error("tier {tier} is unreachable: {reason}")]
    Unavailable { tier: String, reason: String },
    /// The tier answered that the object is not there.
    #[error("object {object} is missing from tier {tier}")]
    Missing { tier: String, object: String },
    /// Anything else (refused credentials, a malformed answer).
    #[error("tier {tier}: {reason}")]
    Failed { tier: String, reason: String },
}

/// A place object data can be moved to and read back from.
#[async_trait]
pub trait Tier: Send + Sync {
    /// The tier's name: the storage class that transition rules name and HEAD reports.
    fn name(&self) -> &str;

    /// Stores exactly `size` bytes from `body` as `object` (a name the caller makes unique;
    /// it never overwrites a live object). Succeeds only once the bytes are durable there.
    async fn put(&self, object: &str, body: ByteStream, size: u64) -> Result<(), TierError>;

    /// Streams bytes `start..end` of `object`.
    async fn get(&self, object: &str, start: u64, end: u64) -> Result<ByteStream, TierError>;

    /// Removes `object`; removing a missing object succeeds.
    async fn delete(&self, object: &str) -> Result<(), TierError>;

    /// Every object name the tier holds under this server's prefix, for tests and for
    /// operators checking that nothing was left behind.
    async fn list(&self) -> Result<Vec<String>, TierError>;
}

/// The tiers configured on a server, by name.
#[derive(Clone, Default)]
pub struct Tiers {
    by_name: BTreeMap<String, Arc<dyn Tier>>,
}

impl Tiers {
    pub fn new(tiers: Vec<Arc<dyn Tier>>) -> Self {
        Self {
            by_name: tiers
                .into_iter()
                .map(|t| (t.name().to_string(), t))
                .collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tier>> {
        self.by_name.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}
