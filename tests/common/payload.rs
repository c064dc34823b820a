//! Bucket names, deterministic payloads and digests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use md5::{Digest as _, Md5};
use sha2::Sha256;

static BUCKET_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A bucket name unique within this test run: `prefix-<pid>-<n>-<nanos>`, valid per AWS rules.
pub fn unique_bucket(prefix: &str) -> String {
    let n = BUCKET_COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let prefix: String = prefix
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(30)
        .collect();
    let prefix = prefix.trim_matches('-');
    let prefix = if prefix.is_empty() { "b" } else { prefix };
    format!("{prefix}-{}-{n}-{nanos:x}", std::process::id())
}

/// Deterministic pseudo-random bytes (SplitMix64), distinct per `seed`.
pub fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(len as u64);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        out.extend_from_slice(&z.to_le_bytes());
    }
    out.truncate(len);
    out
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

pub fn md5_hex(data: &[u8]) -> String {
    hex::encode(Md5::digest(data))
}

pub fn md5_bytes(data: &[u8]) -> [u8; 16] {
    Md5::digest(data).into()
}

/// The ETag S3 returns for a single PUT, quotes included.
pub fn quoted_md5(data: &[u8]) -> String {
    format!("\"{}\"", md5_hex(data))
}

/// Multipart ETag: hex(MD5(MD5(p1) || ... || MD5(pn))) + "-n", quoted.
pub fn multipart_etag(parts: &[&[u8]]) -> String {
    let mut concat = Vec::with_capacity(parts.len() * 16);
    for p in parts {
        concat.extend_from_slice(&md5_bytes(p));
    }
    format!("\"{}-{}\"", md5_hex(&concat), parts.len())
}

/// Asserts equal length and SHA-256 (never prints megabytes of bytes).
#[track_caller]
pub fn assert_same_bytes(got: &[u8], want: &[u8], what: &str) {
    assert_eq!(
        got.len(),
        want.len(),
        "{what}: length differs (got {}, want {})",
        got.len(),
        want.len()
    );
    if got != want {
        let first = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "{what}: bytes differ (sha256 got {}, want {}); first difference at offset {first}",
            sha256_hex(got),
            sha256_hex(want)
        );
    }
}
