//! Authentication of the drive RPC: every request is signed with a secret the cluster's nodes
//! share, and a signed request is accepted once, within a minute of its signing.
//!
//! The signature is HMAC-SHA256, keyed by the secret, over the method, the path, the
//! deployment id, the request's time and nonce, and the SHA-256 of its arguments (for the
//! shard stream, its arguments header: the shard's bytes are covered by their bitrot
//! checksums end to end instead). Each field is length-prefixed, so no two different requests
//! sign the same bytes. The receiving node refuses a request signed more than
//! [`MAX_SKEW`] from its clock, and one whose (time, nonce) it has seen: a captured request
//! cannot be sent again. Pure functions of their inputs, `now` included.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use thiserror::Error;
use zeroize::Zeroizing;

/// The shortest cluster secret accepted: 256 bits.
pub const MIN_SECRET_LEN: usize = 32;
/// How far a request's time may be from the receiver's clock, either way.
pub const MAX_SKEW: Duration = Duration::from_secs(60);
/// Nonces remembered at most. Each is kept for at most 2 × [`MAX_SKEW`]; past this many
/// requests in that time the service refuses new ones (as busy) rather than forget a nonce
/// it may be shown again.
pub const NONCE_CAPACITY: usize = 1 << 20;

/// Separates this signature from any other use of the secret.
const SCHEME: &[u8] = b"strata-drive-rpc-v1";

/// Why a request, or a secret, was refused. Messages are short and say nothing of the secret.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum AuthError {
    #[error("cluster secret must be at least {MIN_SECRET_LEN} bytes, got {0}")]
    SecretTooShort(usize),
    #[error("missing or malformed {0} header")]
    Malformed(&'static str),
    #[error("request time is outside the accepted window")]
    Stale,
    #[error("bad signature")]
    BadSignature,
    #[error("request replayed")]
    Replayed,
    /// Too many requests within the window to remember them all.
    #[error("too many requests")]
    Busy,
}

/// The cluster secret and the deployment it signs for. Cloning shares the key.
#[derive(Clone)]
pub struct ClusterAuth {
    key: Arc<Zeroizing<Vec<u8>>>,
    deployment_id: String,
}

impl std::fmt::Debug for ClusterAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterAuth")
            .field("deployment_id", &self.deployment_id)
            .finish_non_exhaustive()
    }
}

/// The three signature headers of a request, as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHeaders {
    /// Milliseconds since the Unix epoch.
    pub time: String,
    /// 32 hex digits.
    pub nonce: String,
    /// 64 hex digits.
    pub signature: String,
}

/// A request's signature headers, parsed: what it claims before its signature is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    time_ms: u64,
    nonce: u128,
    signature: [u8; 32],
}

impl Claim {
    /// Parses the headers (`None`: absent).
    pub fn parse(
        time: Option<&str>,
        nonce: Option<&str>,
        signature: Option<&str>,
    ) -> Result<Self, AuthError> {
        let time_ms = time
            .and_then(|t| t.parse().ok())
            .ok_or(AuthError::Malformed("time"))?;
        let nonce = nonce
            .filter(|n| n.len() == 32)
            .and_then(|n| u128::from_str_radix(n, 16).ok())
            .ok_or(AuthError::Malformed("nonce"))?;
        let mut bytes = [0u8; 32];
        signature
            .and_then(|s| hex::decode_to_slice(s, &mut bytes).ok())
            .ok_or(AuthError::Malformed("signature"))?;
        Ok(Self {
            time_ms,
            nonce,
            signature: bytes,
        })
    }
}

impl ClusterAuth {
    /// The secret must be at least [`MIN_SECRET_LEN`] bytes.
    pub fn new(secret: &[u8], deployment_id: &str) -> Result<Self, AuthError> {
        if secret.len() < MIN_SECRET_LEN {
            return Err(AuthError::SecretTooShort(secret.len()));
        }
        Ok(Self {
            key: Arc::new(Zeroizing::new(secret.to_vec())),
            deployment_id: deployment_id.to_string(),
        })
    }

    pub fn deployment_id(&self) -> &str {
        &self.deployment_id
    }

    /// Signs a request at `now` with a fresh random nonce.
    pub fn sign(&self, method: &str, path: &str, args: &[u8], now: SystemTime) -> SignedHeaders {
        self.sign_with_nonce(method, path, args, millis(now), rand::random())
    }

    fn sign_with_nonce(
        &self,
        method: &str,
        path: &str,
        args: &[u8],
        time_ms: u64,
        nonce: u128,
    ) -> SignedHeaders {
        let mac = self.mac(method, path, args, time_ms, nonce);
        SignedHeaders {
            time: time_ms.to_string(),
            nonce: format!("{nonce:032x}"),
            signature: hex::encode(mac.finalize().into_bytes()),
        }
    }

    /// Whether the claimed time is within [`MAX_SKEW`] of `now`: checked before a request's
    /// arguments are read, so a stale request costs nothing more.
    pub fn check_time(&self, claim: &Claim, now: SystemTime) -> Result<(), AuthError> {
        match millis(now).abs_diff(claim.time_ms) <= MAX_SKEW.as_millis() as u64 {
            true => Ok(()),
            false => Err(AuthError::Stale),
        }
    }

    /// Accepts a request: fresh, signed with this secret for this deployment over exactly
    /// these method, path and arguments, and never seen before. Only a request that passes
    /// every check is remembered.
    pub fn verify(
        &self,
        claim: &Claim,
        method: &str,
        path: &str,
        args: &[u8],
        now: SystemTime,
        seen: &NonceCache,
    ) -> Result<(), AuthError> {
        self.check_time(claim, now)?;
        self.mac(method, path, args, claim.time_ms, claim.nonce)
            .verify_slice(&claim.signature)
            .map_err(|_| AuthError::BadSignature)?;
        seen.remember(claim.time_ms, claim.nonce, millis(now))
    }

    fn mac(
        &self,
        method: &str,
        path: &str,
        args: &[u8],
        time_ms: u64,
        nonce: u128,
    ) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        let args_digest = Sha256::digest(args);
        let fields: [&[u8]; 7] = [
            SCHEME,
            method.as_bytes(),
            path.as_bytes(),
            self.deployment_id.as_bytes(),
            &time_ms.to_be_bytes(),
            &nonce.to_be_bytes(),
            &args_digest,
        ];
        for field in fields {
            mac.update(&(field.len() as u64).to_be_bytes());
            mac.update(field);
        }
        mac
    }
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The (time, nonce) of the requests accepted within the window, so none is accepted twice.
///
/// A request is accepted only while its time is within [`MAX_SKEW`] of the clock, so its
/// nonce need be kept only that long; entries older than that are dropped as time passes.
/// The drop line follows the latest clock reading seen, never going back: were the clock set
/// back, requests older than the line are refused as stale rather than checked against
/// nonces already forgotten.
pub struct NonceCache {
    capacity: usize,
    state: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    /// Ordered by time first, so the expired ones are at the front.
    entries: BTreeSet<(u64, u128)>,
    latest_now_ms: u64,
}

impl NonceCache {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            state: Mutex::new(Seen::default()),
        }
    }

    /// Records a request's (time, nonce); refuses one already recorded, one older than what
    /// is remembered, and any when full.
    fn remember(&self, time_ms: u64, nonce: u128, now_ms: u64) -> Result<(), AuthError> {
        let mut seen = self.state.lock().expect("not poisoned");
        seen.latest_now_ms = seen.latest_now_ms.max(now_ms);
        let oldest_kept = seen
            .latest_now_ms
            .saturating_sub(MAX_SKEW.as_millis() as u64);
        while seen
            .entries
            .first()
            .is_some_and(|&(time, _)| time < oldest_kept)
        {
            seen.entries.pop_first();
        }
        if time_ms < oldest_kept {
            return Err(AuthError::Stale);
        }
        if seen.entries.contains(&(time_ms, nonce)) {
            return Err(AuthError::Replayed);
        }
        if seen.entries.len() >= self.capacity {
            return Err(AuthError::Busy);
        }
        seen.entries.insert((time_ms, nonce));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn claim(headers: &SignedHeaders) -> Claim {
        Claim::parse(
            Some(&headers.time),
            Some(&headers.nonce),
            Some(&headers.signature),
        )
        .unwrap()
    }

    #[test]
    fn short_secrets_are_refused() {
        assert_eq!(
            ClusterAuth::new(&SECRET[..31], "dep").unwrap_err(),
            AuthError::SecretTooShort(31)
        );
        assert!(ClusterAuth::new(SECRET, "dep").is_ok());
        let debug = format!("{:?}", ClusterAuth::new(SECRET, "dep").unwrap());
        assert!(!debug.contains("0123"), "{debug}");
    }

    /// The signature is pinned (the value was computed independently, with Python's `hmac`
    /// over the length-prefixed fields): a change to what it covers is a new protocol version.
    #[test]
    fn the_signature_is_stable() {
        let auth = ClusterAuth::new(SECRET, "dep").unwrap();
        let path = "/_strata/rpc/v1/meta_get";
        let headers = auth.sign_with_nonce("POST", path, b"args", 1_700_000_000_000, 7);
        assert_eq!(headers.time, "1700000000000");
        assert_eq!(headers.nonce, "00000000000000000000000000000007");
        assert_eq!(
            headers.signature,
            "a3f03b32d9a47759809c0faf50fe393a1f4c8dcf61e202863a15371f9fad569d"
        );
    }

    /// What is signed, the path and arguments the receiver sees, what it decides.
    type Case<'a> = (
        &'a str,
        SignedHeaders,
        &'a str,
        &'a [u8],
        Result<(), AuthError>,
    );

    /// Each row changes one thing the receiver checks; only the unchanged request passes.
    #[test]
    fn verification_table() {
        let auth = ClusterAuth::new(SECRET, "dep").unwrap();
        let now = 1_000_000_000;
        let sign = |auth: &ClusterAuth, time| {
            auth.sign_with_nonce("POST", "/p", b"args", time, rand::random())
        };
        let other_secret = ClusterAuth::new(&[b'x'; 32], "dep").unwrap();
        let other_deployment = ClusterAuth::new(SECRET, "other").unwrap();
        let cases: [Case; 8] = [
            ("as signed", sign(&auth, now), "/p", b"args", Ok(())),
            (
                "other path",
                sign(&auth, now),
                "/q",
                b"args",
                Err(AuthError::BadSignature),
            ),
            (
                "other args",
                sign(&auth, now),
                "/p",
                b"argz",
                Err(AuthError::BadSignature),
            ),
            (
                "other secret",
                sign(&other_secret, now),
                "/p",
                b"args",
                Err(AuthError::BadSignature),
            ),
            (
                "other deployment",
                sign(&other_deployment, now),
                "/p",
                b"args",
                Err(AuthError::BadSignature),
            ),
            (
                "61 s old",
                sign(&auth, now - 61_000),
                "/p",
                b"args",
                Err(AuthError::Stale),
            ),
            (
                "61 s ahead",
                sign(&auth, now + 61_000),
                "/p",
                b"args",
                Err(AuthError::Stale),
            ),
            ("59 s old", sign(&auth, now - 59_000), "/p", b"args", Ok(())),
        ];
        for (what, headers, path, args, expected) in cases {
            let seen = NonceCache::new(16);
            let got = auth.verify(&claim(&headers), "POST", path, args, at(now), &seen);
            assert_eq!(got, expected, "{what}");
        }
        let headers = sign(&auth, now);
        let mut tampered = claim(&headers);
        tampered.time_ms += 1;
        let seen = NonceCache::new(16);
        let got = auth.verify(&tampered, "POST", "/p", b"args", at(now), &seen);
        assert_eq!(got, Err(AuthError::BadSignature), "time changed");
    }

    #[test]
    fn a_request_is_accepted_once() {
        let auth = ClusterAuth::new(SECRET, "dep").unwrap();
        let seen = NonceCache::new(16);
        let headers = auth.sign("POST", "/p", b"", at(5_000_000));
        let verify = |now| auth.verify(&claim(&headers), "POST", "/p", b"", at(now), &seen);
        assert_eq!(verify(5_000_000), Ok(()));
        assert_eq!(verify(5_000_001), Err(AuthError::Replayed));
        assert_eq!(verify(5_059_000), Err(AuthError::Replayed));
        // Once its time is past the window, it is stale whatever the cache holds.
        assert_eq!(verify(5_061_000), Err(AuthError::Stale));
    }

    #[test]
    fn the_cache_forgets_expired_nonces_and_refuses_when_full() {
        let seen = NonceCache::new(2);
        assert_eq!(seen.remember(1_000_000, 1, 1_000_000), Ok(()));
        assert_eq!(seen.remember(1_000_000, 2, 1_000_000), Ok(()));
        assert_eq!(seen.remember(1_000_000, 3, 1_000_000), Err(AuthError::Busy));
        // A minute on, the first two have expired and make room.
        assert_eq!(seen.remember(1_060_001, 3, 1_060_001), Ok(()));
        // The clock set back does not bring forgotten nonces back into the window.
        assert_eq!(
            seen.remember(1_000_000, 1, 1_000_000),
            Err(AuthError::Stale)
        );
    }

    #[test]
    fn malformed_headers_are_named() {
        let ok = "0".repeat(64);
        let nonce = "0".repeat(32);
        let cases = [
            (None, Some(nonce.as_str()), Some(ok.as_str()), "time"),
            (Some("x"), Some(nonce.as_str()), Some(ok.as_str()), "time"),
            (Some("1"), Some("12"), Some(ok.as_str()), "nonce"),
            (Some("1"), Some(nonce.as_str()), Some("zz"), "signature"),
            (Some("1"), Some(nonce.as_str()), None, "signature"),
        ];
        for (time, nonce, signature, which) in cases {
            assert_eq!(
                Claim::parse(time, nonce, signature),
                Err(AuthError::Malformed(which))
            );
        }
    }
}
