//! Medians and percentiles of timings, and timing many calls over concurrent clients.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Median and 90th percentile, in milliseconds.
#[derive(Clone, Copy)]
pub struct Figures {
    pub median: f64,
    pub p90: f64,
}

impl Figures {
    pub fn of(ms: &[f64]) -> Self {
        let mut ms = ms.to_vec();
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
        Figures {
            median: at(0.5),
            p90: at(0.9),
        }
    }
}

/// The median of `values` (the upper one of an even count); NaN if there are none.
pub fn median(values: &[f64]) -> f64 {
    match values.is_empty() {
        true => f64::NAN,
        false => Figures::of(values).median,
    }
}

/// The `q` quantile of `ms` (sorted in place).
pub fn percentile(ms: &mut [f64], q: f64) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[((ms.len() - 1) as f64 * q).round() as usize]
}

/// Runs `op(i)` for `0..count` over `clients` concurrent workers; per-call milliseconds and
/// the wall time in seconds.
pub async fn timed<F, Fut>(count: usize, clients: usize, op: F) -> (Vec<f64>, f64)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let (op, next) = (op.clone(), next.clone());
            tokio::spawn(async move {
                let mut ms = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        return ms;
                    }
                    let start = Instant::now();
                    op(i).await;
                    ms.push(start.elapsed().as_secs_f64() * 1e3);
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for worker in workers {
        all.extend(worker.await.expect("worker"));
    }
    (all, started.elapsed().as_secs_f64())
}

/// `count` requests of `method` to `{prefix}/obj-NNNNNN` by `clients` clients at once, each
/// sending `body` for a PUT and nothing otherwise: every latency in ms, and the seconds all took.
pub async fn timed_requests(
    client: &reqwest::Client,
    method: reqwest::Method,
    prefix: String,
    body: Arc<super::request::Payload>,
    count: usize,
    clients: usize,
) -> (Vec<f64>, f64) {
    let client = client.clone();
    timed(count, clients, move |i| {
        let (client, method, body) = (client.clone(), method.clone(), body.clone());
        let url = format!("{prefix}/obj-{i:06}");
        async move {
            let payload = match method == reqwest::Method::PUT {
                true => &*body,
                false => &super::request::Payload::empty(),
            };
            super::request::send(&client, method, &url, payload, &[]).await;
        }
    })
    .await
}
