//! Progress a job publishes for every node: in a cluster a drain or a rebalance runs on the
//! node elected for it, while an operator asks any node where it stands. The job writes its
//! figures as a deployment-wide record, at most every few seconds; the others read it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::object::{ObjectError, ObjectStore};

/// How often a job in progress writes its figures.
const EVERY: Duration = Duration::from_secs(2);

/// One job's published figures.
pub struct Published {
    record: String,
    written: Mutex<Option<Instant>>,
}

impl Published {
    pub fn new(record: String) -> Self {
        Published {
            record,
            written: Mutex::new(None),
        }
    }

    /// Writes `figures`, unless they were written less than [`EVERY`] ago and `now` is
    /// false. A failure is only logged: the job goes on, and writes again later.
    pub async fn write(&self, store: &ObjectStore, figures: &impl Serialize, now: bool) {
        {
            let mut written = self.written.lock().expect("published");
            if !now && written.is_some_and(|at| at.elapsed() < EVERY) {
                return;
            }
            *written = Some(Instant::now());
        }
        let bytes = serde_json::to_vec(figures).expect("figures serialize");
        if let Err(e) = store.system_put(&self.record, bytes).await {
            tracing::warn!(record = %self.record, error = %e, "could not publish a job's progress");
        }
    }

    /// The figures last published as `record`; `None` when none were. An error when the
    /// record cannot be read or decoded (written by a newer release): a job must not take
    /// that for nothing published.
    pub async fn read<T: DeserializeOwned>(
        store: &ObjectStore,
        record: &str,
    ) -> Result<Option<T>, ObjectError> {
        let Some(bytes) = store.system_get(record).await? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ObjectError::Internal(format!("{record} does not decode: {e}")))
    }
}
