//! What durability costs one drive's metadata commit, on this disk, in one run:
//!
//! - redb's two-phase commit (on in every drive since it guards against a partial commit
//!   being taken for whole after a crash) against a one-phase commit of the same
//!   transaction: one small record, as a small PUT commits on each drive, and 25,000
//!   records, as the listing bench's fill commits them; and a fill of a million keys into
//!   an empty database in such transactions, from start to end;
//! - the fsync of an existing folder, which placing shard files now pays for each of the
//!   three folders above a version's data folder (a concurrent writer may have created one
//!   and not synced it yet), beside a one-phase small commit.
//!
//! Run: `cargo bench --bench commit`. Rounds alternate between the variants; the `summary:`
//! lines give medians over every commit of all rounds.

mod common;

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use common::stats::median;
use redb::{Database, TableDefinition};

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("objects");
const ROUNDS: usize = 7;
/// Small commits per round and variant.
const SMALL: usize = 100;
/// Large commits per round and variant, and records in each.
const LARGE: usize = 2;
const LARGE_RECORDS: usize = 25_000;
/// Keys of a fill, and fills per variant (alternating).
const FILL_KEYS: usize = 1_000_000;
const FILLS: usize = 3;

/// Commits `records` records of a few hundred bytes in one transaction; milliseconds.
fn commit(db: &Database, two_phase: bool, first: usize, records: usize) -> f64 {
    let started = Instant::now();
    let mut txn = db.begin_write().expect("write transaction");
    txn.set_two_phase_commit(two_phase);
    {
        let mut table = txn.open_table(TABLE).expect("table");
        let value = vec![7u8; 600];
        for n in first..first + records {
            let key = format!("bucket\0dataset/shard-{n:09}");
            table
                .insert(key.as_bytes(), value.as_slice())
                .expect("insert");
        }
    }
    txn.commit().expect("commit");
    started.elapsed().as_secs_f64() * 1e3
}

/// Fills a fresh database with `FILL_KEYS` keys, `LARGE_RECORDS` per transaction; seconds.
fn fill(path: &Path, two_phase: bool) -> f64 {
    let _ = std::fs::remove_file(path);
    let db = Database::create(path).expect("database");
    let started = Instant::now();
    for first in (0..FILL_KEYS).step_by(LARGE_RECORDS) {
        commit(&db, two_phase, first, LARGE_RECORDS);
    }
    started.elapsed().as_secs_f64()
}

fn fsync_dir(dir: &Path) -> f64 {
    let started = Instant::now();
    File::open(dir).and_then(|d| d.sync_all()).expect("fsync");
    started.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let dir = common::temp_dir("commit-bench-");
    let one_phase = Database::create(dir.path().join("one.redb")).expect("database");
    let two_phase = Database::create(dir.path().join("two.redb")).expect("database");
    let folder = dir.path().join("data/bucket/ab");
    std::fs::create_dir_all(&folder).expect("folders");

    let (mut small1, mut small2, mut large1, mut large2, mut fsyncs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut next = 0;
    for round in 0..ROUNDS {
        for _ in 0..SMALL {
            small1.push(commit(&one_phase, false, next, 1));
            small2.push(commit(&two_phase, true, next, 1));
            fsyncs.push(fsync_dir(&folder));
            next += 1;
        }
        for _ in 0..LARGE {
            large1.push(commit(&one_phase, false, next, LARGE_RECORDS));
            large2.push(commit(&two_phase, true, next, LARGE_RECORDS));
            next += LARGE_RECORDS;
        }
        println!(
            "round {}: small {:.3} / {:.3} ms, large {:.1} / {:.1} ms (one / two phases), folder fsync {:.3} ms",
            round + 1,
            median(&small1),
            median(&small2),
            median(&large1),
            median(&large2),
            median(&fsyncs)
        );
    }
    let (mut fill1, mut fill2) = (Vec::new(), Vec::new());
    for round in 0..FILLS {
        fill1.push(fill(&dir.path().join("fill.redb"), false));
        fill2.push(fill(&dir.path().join("fill.redb"), true));
        println!(
            "fill {}: {FILL_KEYS} keys in {:.1} / {:.1} s (one / two phases)",
            round + 1,
            fill1[round],
            fill2[round]
        );
    }
    let (s1, s2, l1, l2, f) = (
        median(&small1),
        median(&small2),
        median(&large1),
        median(&large2),
        median(&fsyncs),
    );
    println!(
        "summary: one-record commit: one phase {s1:.3} ms, two phases {s2:.3} ms ({:.2}x)",
        s2 / s1
    );
    println!(
        "summary: {LARGE_RECORDS}-record commit: one phase {l1:.1} ms, two phases {l2:.1} ms ({:.2}x)",
        l2 / l1
    );
    let (m1, m2) = (median(&fill1), median(&fill2));
    println!(
        "summary: fill of {FILL_KEYS} keys: one phase {m1:.1} s, two phases {m2:.1} s ({:.2}x)",
        m2 / m1
    );
    println!(
        "summary: fsync of an existing folder: {f:.3} ms ({:.2}x a one-phase one-record commit); \
         placing shards pays three per drive",
        f / s1
    );
}
