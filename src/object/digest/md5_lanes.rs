//! One thread hashes the ETags of every upload in flight together. MD5 cannot go faster
//! within one stream (each 64-byte block depends on the previous one), but independent
//! streams fill the SIMD lanes of one core: with 16 uploads at once, their MD5s cost about
//! as much CPU as one did.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use md5_many::{Md5Many, Md5State};
use tokio::sync::{mpsc, oneshot};

/// Blocks queued to the hashing thread across all uploads: bounded, so that when hashing
/// falls behind, uploads slow down instead of buffering.
const QUEUE_BLOCKS: usize = 64;

enum Job {
    Update {
        stream: u64,
        block: Bytes,
    },
    Finish {
        stream: u64,
        reply: oneshot::Sender<[u8; 16]>,
    },
}

impl Job {
    fn stream(&self) -> u64 {
        match self {
            Job::Update { stream, .. } | Job::Finish { stream, .. } => *stream,
        }
    }
}

/// The MD5 hashing thread, shared by every upload of a store.
pub struct Md5Lanes {
    jobs: mpsc::Sender<Job>,
    next_stream: AtomicU64,
}

impl Md5Lanes {
    /// Starts the hashing thread; it ends when the last sender is gone.
    pub fn start() -> Self {
        let (jobs, queue) = mpsc::channel(QUEUE_BLOCKS);
        std::thread::Builder::new()
            .name("md5-lanes".into())
            .spawn(move || run(queue))
            .expect("a thread can be started");
        Self {
            jobs,
            next_stream: AtomicU64::new(0),
        }
    }

    /// A new stream to hash.
    pub fn stream(&self) -> Md5Stream {
        Md5Stream {
            id: self.next_stream.fetch_add(1, Ordering::Relaxed),
            jobs: Some(self.jobs.clone()),
        }
    }
}

/// One message being hashed by [`Md5Lanes`]; blocks are hashed in the order sent.
pub struct Md5Stream {
    id: u64,
    jobs: Option<mpsc::Sender<Job>>,
}

impl Md5Stream {
    pub async fn update(&self, block: Bytes) {
        if let Some(jobs) = &self.jobs {
            let _ = jobs
                .send(Job::Update {
                    stream: self.id,
                    block,
                })
                .await;
        }
    }

    /// The digest of everything sent.
    pub async fn finish(mut self) -> Option<[u8; 16]> {
        let jobs = self.jobs.take()?;
        let (reply, digest) = oneshot::channel();
        jobs.send(Job::Finish {
            stream: self.id,
            reply,
        })
        .await
        .ok()?;
        digest.await.ok()
    }
}

impl Drop for Md5Stream {
    /// An abandoned stream (a failed upload) still has to leave the thread's table.
    fn drop(&mut self) {
        let Some(jobs) = self.jobs.take() else { return };
        let (reply, _) = oneshot::channel();
        let finish = Job::Finish {
            stream: self.id,
            reply,
        };
        if let Err(mpsc::error::TrySendError::Full(finish)) = jobs.try_send(finish) {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = jobs.send(finish).await;
                });
            }
        }
    }
}

/// The hashing thread: takes whatever jobs are queued, and hashes one block of each stream
/// per round in one multi-lane call.
fn run(mut queue: mpsc::Receiver<Job>) {
    let engine = Md5Many::new();
    let mut states: HashMap<u64, Md5State> = HashMap::new();
    while let Some(first) = queue.blocking_recv() {
        let mut pending: VecDeque<Job> = VecDeque::from([first]);
        while pending.len() < QUEUE_BLOCKS {
            match queue.try_recv() {
                Ok(job) => pending.push_back(job),
                Err(_) => break,
            }
        }
        while !pending.is_empty() {
            pending = run_round(engine, &mut states, pending);
        }
    }
}

/// Hashes at most one block per stream; returns the jobs left for later rounds, in order.
fn run_round(
    engine: Md5Many,
    states: &mut HashMap<u64, Md5State>,
    pending: VecDeque<Job>,
) -> VecDeque<Job> {
    let mut round: Vec<(u64, Bytes)> = Vec::new();
    // Streams with a job left for a later round: their later jobs must wait too.
    let mut waiting: HashSet<u64> = HashSet::new();
    let mut later = VecDeque::new();
    let mut finishes = Vec::new();
    for job in pending {
        let stream = job.stream();
        let in_round = round.iter().any(|(s, _)| *s == stream);
        if waiting.contains(&stream) || in_round {
            waiting.insert(stream);
            later.push_back(job);
            continue;
        }
        match job {
            Job::Update { stream, block } => round.push((stream, block)),
            Job::Finish { stream, reply } => finishes.push((stream, reply)),
        }
    }
    let mut lanes: Vec<Md5State> = round
        .iter()
        .map(|(s, _)| states.get(s).copied().unwrap_or_default())
        .collect();
    let inputs: Vec<&[u8]> = round.iter().map(|(_, b)| b.as_ref()).collect();
    engine.update_many(&mut lanes, &inputs);
    for ((stream, _), state) in round.iter().zip(lanes) {
        states.insert(*stream, state);
    }
    for (stream, reply) in finishes {
        let state = states.remove(&stream).unwrap_or_default();
        let _ = reply.send(state.finalize());
    }
    later
}

#[cfg(test)]
mod tests {
    use super::*;
    use md5::{Digest, Md5};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_streams_hash_like_md5_alone() {
        let lanes = std::sync::Arc::new(Md5Lanes::start());
        let mut tasks = Vec::new();
        for n in 0..24u64 {
            let lanes = lanes.clone();
            tasks.push(tokio::spawn(async move {
                // Streams of different lengths and chunk sizes, some not multiples of 64.
                let len = (n as usize * 37_019) % 3_000_000 + n as usize;
                let data: Vec<u8> = (0..len).map(|i| (i as u64 * 31 + n) as u8).collect();
                let stream = lanes.stream();
                for chunk in data.chunks(1 << 20 | (n as usize * 7)) {
                    stream.update(Bytes::copy_from_slice(chunk)).await;
                }
                let digest = stream.finish().await.unwrap();
                let expected: [u8; 16] = Md5::digest(&data).into();
                assert_eq!(digest, expected, "stream {n} of {len} bytes");
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    }

    #[tokio::test]
    async fn an_abandoned_stream_does_not_disturb_the_others() {
        let lanes = Md5Lanes::start();
        let dropped = lanes.stream();
        dropped.update(Bytes::from_static(b"half an upload")).await;
        drop(dropped);
        let kept = lanes.stream();
        kept.update(Bytes::from_static(b"hello")).await;
        let expected: [u8; 16] = Md5::digest(b"hello").into();
        assert_eq!(kept.finish().await, Some(expected));
    }
}
