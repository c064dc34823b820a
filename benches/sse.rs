//! The cost of SSE-S3 on the whole object path: PUT and GET of a 256 MiB object through
//! `ObjectStore` (6+3 over 9 drive folders, fdatasync, metadata commit), encrypted with
//! SSE-S3 and in the clear, in the same run. The GET reads the body to its end.
//!
//! Rates are GB/s (10^9 B/s) of plaintext. Each figure is the median of 5 runs, encrypted and
//! clear runs alternating, on this shared, noisy machine. The goal is SSE-S3 at 80 % or more
//! of the clear rate.
//!
//! Run: `cargo bench --bench sse`.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use rand::RngCore;
use strata::body::ByteStream;
use strata::kms::builtin::{BuiltinKms, MasterKey, MemoryCatalog};
use strata::object::{Encryption, GetOptions, ObjectKey, PutOptions};

use common::stats::median;
use common::store::{bucket, open_store};

const OBJECT: usize = 256 << 20;
/// Body chunk size, as a network read would hand them over.
const CHUNK: usize = 64 << 10;
const RUNS: usize = 5;

fn body(data: Bytes) -> ByteStream {
    let chunks = (0..data.len())
        .step_by(CHUNK)
        .map(move |at| Ok(data.slice(at..(at + CHUNK).min(data.len()))));
    Box::pin(futures::stream::iter(chunks))
}

fn gbps(time: Duration) -> f64 {
    OBJECT as f64 / time.as_secs_f64() / 1e9
}

fn main() {
    let dir = common::temp_dir("sse-bench-");
    let store = open_store(&common::drives(dir.path()));
    let runtime = tokio::runtime::Runtime::new().expect("runtime starts");
    let bucket = bucket("bench");
    let mut data = vec![0u8; OBJECT];
    rand::rng().fill_bytes(&mut data);
    let data = Bytes::from(data);
    runtime.block_on(async {
        store.create_bucket(&bucket).await.expect("bucket");
        let master = MasterKey::generate("bench").expect("master key");
        let kms = BuiltinKms::open(master, Arc::new(MemoryCatalog::new()))
            .await
            .expect("key service");
        store.set_key_service(Arc::new(kms));
    });
    let key = ObjectKey::parse("object").expect("key");
    // One PUT then one full GET of the object, encrypted or not: their times.
    let round = |encryption: Option<Encryption>| {
        runtime.block_on(async {
            let options = PutOptions {
                encryption,
                ..PutOptions::default()
            };
            let start = Instant::now();
            store
                .put_object(&bucket, &key, body(data.clone()), options)
                .await
                .expect("put");
            let put = start.elapsed();
            let start = Instant::now();
            let mut got = store
                .get_object(&bucket, &key, GetOptions::default())
                .await
                .expect("get");
            let mut read = 0;
            while let Some(chunk) = got.body.next().await {
                read += chunk.expect("read").len();
            }
            assert_eq!(read, OBJECT);
            (put, start.elapsed())
        })
    };
    round(None);
    let (mut put, mut get) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for _ in 0..RUNS {
        for (i, encryption) in [None, Some(Encryption::S3)].into_iter().enumerate() {
            let (p, g) = round(encryption);
            put[i].push(gbps(p));
            get[i].push(gbps(g));
        }
    }
    let ratio = |pair: &[Vec<f64>; 2]| {
        let ratios: Vec<f64> = pair[0].iter().zip(&pair[1]).map(|(c, e)| e / c).collect();
        median(&ratios)
    };
    println!(
        "summary: PUT of 256 MiB | clear {:.3} GB/s | SSE-S3 {:.3} GB/s | SSE-S3/clear {:.2} (goal >= 0.8)",
        median(&put[0]),
        median(&put[1]),
        ratio(&put)
    );
    println!(
        "summary: GET of 256 MiB | clear {:.3} GB/s | SSE-S3 {:.3} GB/s | SSE-S3/clear {:.2} (goal >= 0.8)",
        median(&get[0]),
        median(&get[1]),
        ratio(&get)
    );
}
