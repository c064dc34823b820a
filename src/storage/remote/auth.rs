//! Authentication of the drive RPC: every request is signed with a secret the cluster's nodes
//! share, and a signed request is accepted once, within a minute of its signing.
//!
//! The signature is HMAC-SHA256, keyed by the secret, over the method, the path, the
//! deployment id, the request's time and nonce, and the SHA-256 of its arguments (for the
//! shard stream, its arguments header: the shard's bytes are covered by their bitrot
//! checksums). Each field is length-prefixed, so no two different requests sign the same
//! bytes. The digest of the arguments travels in a header too, so the receiver checks the
//! signature before it reads a byte of the body, then the body against the digest. The
//! receiving node refuses a request signed more than [`MAX_SKEW`] from its clock, and one
//! whose (time, nonce) it has seen: a captured request cannot be sent again. Pure functions
//! of their inputs, `now` included.

use std::collections::{BTreeMap, HashSet};
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
/// Nonces remembered at most (some 32 MiB). Each is kept while its request could still be
/// accepted; past this many, the oldest second of them is forgotten and requests signed in it
/// or before are refused as stale: under a load beyond it the window narrows (less clock skew
/// is tolerated) instead of every request being refused.
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

/// The signature headers of a request, as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHeaders {
    /// Milliseconds since the Unix epoch.
    pub time: String,
    /// 32 hex digits.
    pub nonce: String,
    /// 64 hex digits.
    pub signature: String,
    /// The SHA-256 of the arguments, 64 hex digits.
    pub args_digest: String,
}

/// The SHA-256 of a request's arguments, which its signature covers.
pub type ArgsDigest = [u8; 32];

pub fn args_digest(args: &[u8]) -> ArgsDigest {
    Sha256::digest(args).into()
}

/// Parses the hex digest a request names its arguments by (`None`: absent).
pub fn parse_args_digest(hex_digest: Option<&str>) -> Result<ArgsDigest, AuthError> {
    let mut digest = [0u8; 32];
    hex_digest
        .and_then(|d| hex::decode_to_slice(d, &mut digest).ok())
        .ok_or(AuthError::Malformed("arguments digest"))?;
    Ok(digest)
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
        let digest = args_digest(args);
        let mac = self.mac(method, path, &digest, time_ms, nonce);
        SignedHeaders {
            time: time_ms.to_string(),
            nonce: format!("{nonce:032x}"),
            signature: hex::encode(mac.finalize().into_bytes()),
            args_digest: hex::encode(digest),
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
    /// these method, path and arguments (named by their digest, which the caller checks the
    /// arguments against), and never seen before. Only a request that passes every check is
    /// remembered.
    pub fn verify(
        &self,
        claim: &Claim,
        method: &str,
        path: &str,
        args_digest: &ArgsDigest,
        now: SystemTime,
        seen: &NonceCache,
    ) -> Result<(), AuthError> {
        self.check_time(claim, now)?;
        self.mac(method, path, args_digest, claim.time_ms, claim.nonce)
            .verify_slice(&claim.signature)
            .map_err(|_| AuthError::BadSignature)?;
        seen.remember(claim.time_ms, claim.nonce, millis(now))
    }

    fn mac(
        &self,
        method: &str,
        path: &str,
        args_digest: &ArgsDigest,
        time_ms: u64,
        nonce: u128,
    ) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        let fields: [&[u8]; 7] = [
            SCHEME,
            method.as_bytes(),
            path.as_bytes(),
            self.deployment_id.as_bytes(),
            &time_ms.to_be_bytes(),
            &nonce.to_be_bytes(),
            args_digest,
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
/// nonce need be kept only that long. Nonces are kept by the second their request was signed
/// in, and forgotten a whole second at a time. Requests signed before the oldest second kept
/// are refused as stale, so a nonce is never forgotten while its request could still pass.
/// That line follows the latest clock reading seen, never going back (were the clock set
/// back, older requests are refused rather than checked against forgotten nonces), and moves
/// ahead of it when more than the capacity would be kept.
pub struct NonceCache {
    capacity: usize,
    state: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    /// Nonces by the second (since the epoch) their request was signed in.
    by_second: BTreeMap<u64, HashSet<u128>>,
    len: usize,
    /// Requests signed before this millisecond are refused as stale.
    line_ms: u64,
}

impl Seen {
    /// Forgets the oldest second kept, and every request signed in it or before.
    fn forget_oldest_second(&mut self) {
        if let Some((second, nonces)) = self.by_second.pop_first() {
            self.len -= nonces.len();
            self.line_ms = self.line_ms.max((second + 1) * 1000);
        }
    }
}

impl NonceCache {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            state: Mutex::new(Seen::default()),
        }
    }

    /// Records a request's (time, nonce); refuses one already recorded, and one signed
    /// before what is remembered.
    fn remember(&self, time_ms: u64, nonce: u128, now_ms: u64) -> Result<(), AuthError> {
        let mut seen = self.state.lock().expect("not poisoned");
        let window_start = now_ms.saturating_sub(MAX_SKEW.as_millis() as u64);
        seen.line_ms = seen.line_ms.max(window_start);
        while (seen.by_second.first_key_value())
            .is_some_and(|(&second, _)| (second + 1) * 1000 <= seen.line_ms)
        {
            seen.forget_oldest_second();
        }
        if time_ms < seen.line_ms {
            return Err(AuthError::Stale);
        }
        let second = time_ms / 1000;
        if seen
            .by_second
            .get(&second)
            .is_some_and(|n| n.contains(&nonce))
        {
            return Err(AuthError::Replayed);
        }
        while seen.len >= self.capacity {
            seen.forget_oldest_second();
        }
        if time_ms < seen.line_ms {
            return Err(AuthError::Stale);
        }
        seen.by_second.entry(second).or_default().insert(nonce);
        seen.len += 1;
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
            let got = auth.verify(
                &claim(&headers),
                "POST",
                path,
                &args_digest(args),
                at(now),
                &seen,
            );
            assert_eq!(got, expected, "{what}");
        }
        let headers = sign(&auth, now);
        let mut tampered = claim(&headers);
        tampered.time_ms += 1;
        let seen = NonceCache::new(16);
        let got = auth.verify(
            &tampered,
            "POST",
            "/p",
            &args_digest(b"args"),
            at(now),
            &seen,
        );
        assert_eq!(got, Err(AuthError::BadSignature), "time changed");
    }

    #[test]
    fn a_request_is_accepted_once() {
        let auth = ClusterAuth::new(SECRET, "dep").unwrap();
        let seen = NonceCache::new(16);
        let headers = auth.sign("POST", "/p", b"", at(5_000_000));
        let digest = parse_args_digest(Some(&headers.args_digest)).unwrap();
        assert_eq!(digest, args_digest(b""));
        let verify = |now| auth.verify(&claim(&headers), "POST", "/p", &digest, at(now), &seen);
        assert_eq!(verify(5_000_000), Ok(()));
        assert_eq!(verify(5_000_001), Err(AuthError::Replayed));
        assert_eq!(verify(5_059_000), Err(AuthError::Replayed));
        // Once its time is past the window, it is stale whatever the cache holds.
        assert_eq!(verify(5_061_000), Err(AuthError::Stale));
    }

    #[test]
    fn the_cache_forgets_expired_nonces() {
        let seen = NonceCache::new(16);
        assert_eq!(seen.remember(1_000_000, 1, 1_000_000), Ok(()));
        assert_eq!(seen.remember(1_000_500, 2, 1_000_500), Ok(()));
        assert_eq!(
            seen.remember(1_000_500, 2, 1_000_600),
            Err(AuthError::Replayed)
        );
        // A minute on, both have expired.
        assert_eq!(seen.remember(1_061_001, 3, 1_061_001), Ok(()));
        assert_eq!(seen.state.lock().unwrap().len, 1);
        // The clock set back does not bring forgotten nonces back into the window.
        assert_eq!(
            seen.remember(1_000_000, 1, 1_000_000),
            Err(AuthError::Stale)
        );
    }

    /// More requests within the window than the cache holds: the oldest second is forgotten
    /// and requests signed in it become stale, while fresh ones are still accepted (before,
    /// every request past the capacity was refused for up to two minutes).
    #[test]
    fn a_full_cache_narrows_the_window_instead_of_refusing_fresh_requests() {
        let seen = NonceCache::new(1000);
        let now = 10_000_000;
        // 500 requests signed 30 s ago, 500 signed 10 s ago: full.
        for nonce in 0..500 {
            assert_eq!(seen.remember(now - 30_000, nonce, now), Ok(()));
            assert_eq!(seen.remember(now - 10_000, 1000 + nonce, now), Ok(()));
        }
        // Fresh requests keep being accepted, far past the capacity: 500 a second for 10 s.
        let mut clock = now;
        for nonce in 0..5000 {
            clock = now + 2 * nonce as u64;
            assert_eq!(
                seen.remember(clock, 10_000 + nonce, clock),
                Ok(()),
                "{nonce}"
            );
        }
        // Each is still refused a second time while it is remembered.
        assert_eq!(
            seen.remember(clock, 14_999, clock),
            Err(AuthError::Replayed)
        );
        // The seconds forgotten to make room are stale now, though within MAX_SKEW.
        assert_eq!(seen.remember(now - 30_000, 0, clock), Err(AuthError::Stale));
        assert_eq!(
            seen.remember(now - 10_000, 1000, clock),
            Err(AuthError::Stale)
        );
        assert!(seen.state.lock().unwrap().len <= 1000);
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
