//! What the benches share: the deployment they run on (6+3 over 9 drive folders, with one
//! set of root credentials), the release `strata` binary as a child process, signed S3
//! requests with reqwest, filling a bucket straight into the drives' metadata databases, and
//! medians.
//!
//! Each bench includes this with `mod common;` and uses a part of it; what a bench measures
//! and prints stays in the bench.
// Each bench uses a subset of the helpers; the rest would be dead code in that bench.
#![allow(dead_code)]

pub mod fill;
pub mod request;
pub mod server;
pub mod sigv4;
pub mod stats;
pub mod store;

use std::path::{Path, PathBuf};

use tempfile::TempDir;

pub const DATA: usize = 6;
pub const PARITY: usize = 3;
/// Root credentials of every bench deployment, in-process and served.
pub const USER: &str = "bench-admin";
pub const PASSWORD: &str = "bench-password-0123456789";
pub const REGION: &str = "us-east-1";

/// The value of environment variable `name`, or `default` if it is unset; panics if it does
/// not parse.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// A fresh folder under target/tmp, on the repository's disk (/tmp may be tmpfs); removed
/// on drop, which must come after any server over it is gone.
pub fn temp_dir(prefix: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temp folder")
}

/// The drive folders `d1`..`d9` of one deployment under `root`.
pub fn drives(root: &Path) -> Vec<PathBuf> {
    (1..=DATA + PARITY)
        .map(|i| root.join(format!("d{i}")))
        .collect()
}
