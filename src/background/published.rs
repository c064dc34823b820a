//! Progress a job publishes for every node: in a cluster a drain or a rebalance runs on the
//! node elected for it, while an operator asks any node where it stands. The job writes its
//! figures as a deployment-wide record, at most every few seconds; the others read it.
//!
//! A job writes only over what it last read or wrote there: figures another node published
//! meanwhile (one elected after it, or the start of a new run) are never overwritten by one
//! that has not seen them.

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
    state: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    /// The record as this job last read or wrote it (`Some(None)`: it held nothing); `None`
    /// until the job reads it, and again once another writer overtook it.
    bytes: Option<Option<Vec<u8>>>,
    written: Option<Instant>,
}

impl Published {
    pub fn new(record: String) -> Self {
        Published {
            record,
            state: Mutex::new(Seen::default()),
        }
    }

    /// The figures published as `record`, for those who only look; `None` when none were.
    /// An error when the record cannot be read or decoded (written by a newer release): a
    /// job must not take that for nothing published.
    pub async fn look<T: DeserializeOwned>(
        store: &ObjectStore,
        record: &str,
    ) -> Result<Option<T>, ObjectError> {
        let bytes = store.system_get(record).await?;
        decode(record, bytes.as_deref())
    }

    /// The figures published, read by the job before it writes its own: what it writes
    /// next is conditional on them.
    pub async fn read<T: DeserializeOwned>(
        &self,
        store: &ObjectStore,
    ) -> Result<Option<T>, ObjectError> {
        let bytes = store.system_get(&self.record).await?;
        let figures = decode(&self.record, bytes.as_deref())?;
        self.state.lock().expect("published").bytes = Some(bytes);
        Ok(figures)
    }

    /// Writes `figures` if the record still holds what this job last read or wrote, unless
    /// they were written less than [`EVERY`] ago and `now` is false. Overtaken by another
    /// writer, the job writes nothing more until it reads again. A failure is only logged:
    /// the job goes on, and writes again later.
    pub async fn write(&self, store: &ObjectStore, figures: &impl Serialize, now: bool) {
        let expected = {
            let mut state = self.state.lock().expect("published");
            if !now && state.written.is_some_and(|at| at.elapsed() < EVERY) {
                return;
            }
            let Some(expected) = state.bytes.clone() else {
                return;
            };
            state.written = Some(Instant::now());
            expected
        };
        let bytes = serde_json::to_vec(figures).expect("figures serialize");
        let written = store
            .system_put_if(&self.record, expected.as_deref(), bytes.clone())
            .await;
        let mut state = self.state.lock().expect("published");
        match written {
            Ok(true) => state.bytes = Some(Some(bytes)),
            Ok(false) => {
                tracing::info!(record = %self.record, "another server published a job's figures over these: not written until read again");
                state.bytes = None;
            }
            Err(e) => {
                tracing::warn!(record = %self.record, error = %e, "could not publish a job's progress");
                // It may have been written: what the record holds is known again once read.
                state.bytes = None;
            }
        }
    }

    /// Publishes `figures` whatever the record holds: the start of a new run.
    pub async fn replace(
        &self,
        store: &ObjectStore,
        figures: &impl Serialize,
    ) -> Result<(), ObjectError> {
        let bytes = serde_json::to_vec(figures).expect("figures serialize");
        store.system_put(&self.record, bytes.clone()).await?;
        let mut state = self.state.lock().expect("published");
        state.bytes = Some(Some(bytes));
        state.written = Some(Instant::now());
        Ok(())
    }
}

fn decode<T: DeserializeOwned>(
    record: &str,
    bytes: Option<&[u8]>,
) -> Result<Option<T>, ObjectError> {
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    serde_json::from_slice(bytes)
        .map(Some)
        .map_err(|e| ObjectError::Internal(format!("{record} does not decode: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Before, a job wrote its figures whatever the record held: a node that lost its
    /// election wrote over the next one's figures, and a drain's start published late
    /// overtook the figures of the node that drained.
    #[tokio::test]
    async fn a_job_never_writes_over_figures_it_has_not_seen() {
        let dir = tempfile::tempdir().unwrap();
        let (_, store, _) = crate::background::test_deployment(dir.path());
        let (ours, theirs) = (Published::new("job".into()), Published::new("job".into()));
        assert_eq!(ours.read::<u64>(&store).await.unwrap(), None);
        ours.write(&store, &1u64, true).await;
        assert_eq!(theirs.read::<u64>(&store).await.unwrap(), Some(1));
        theirs.write(&store, &20u64, true).await;

        // Ours did not see theirs: neither this write nor the next goes through.
        ours.write(&store, &2u64, true).await;
        ours.write(&store, &3u64, true).await;
        assert_eq!(
            Published::look::<u64>(&store, "job").await.unwrap(),
            Some(20)
        );

        // Once it has read them, it may.
        assert_eq!(ours.read::<u64>(&store).await.unwrap(), Some(20));
        ours.write(&store, &21u64, true).await;
        assert_eq!(
            Published::look::<u64>(&store, "job").await.unwrap(),
            Some(21)
        );

        // A new run's start replaces whatever was published.
        Published::new("job".into())
            .replace(&store, &0u64)
            .await
            .unwrap();
        ours.write(&store, &22u64, true).await;
        assert_eq!(
            Published::look::<u64>(&store, "job").await.unwrap(),
            Some(0)
        );
    }

    #[tokio::test]
    async fn a_job_writes_at_most_every_few_seconds_unless_told_now() {
        let dir = tempfile::tempdir().unwrap();
        let (_, store, _) = crate::background::test_deployment(dir.path());
        let published = Published::new("job".into());
        published.read::<u64>(&store).await.unwrap();
        published.write(&store, &1u64, false).await;
        published.write(&store, &2u64, false).await;
        assert_eq!(
            Published::look::<u64>(&store, "job").await.unwrap(),
            Some(1)
        );
        published.write(&store, &3u64, true).await;
        assert_eq!(
            Published::look::<u64>(&store, "job").await.unwrap(),
            Some(3)
        );
    }
}
