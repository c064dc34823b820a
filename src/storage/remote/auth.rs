//! Authentication of the drive RPC: every request is signed with a secret the cluster's nodes
//! share and accepted once, within a minute of its signing, by the node it was made to; every
//! answer is signed for its request; a shard stream's content is signed in its finish frame.
//!
//! Signatures are HMAC-SHA256, keyed by the secret, over length-prefixed fields (no two
//! different messages sign the same bytes). A request's covers the method, the path, the
//! node called (its drive service's `host:port`), the deployment id, the time and nonce, the
//! SHA-256 of its arguments (for the shard stream, its arguments header) and its deadline.
//! The digest of the arguments travels in a header too, so the receiver checks the signature
//! before it reads a byte of the body, then the body against the digest. The receiving node
//! refuses a request signed more than [`MAX_SKEW`] from its clock, and one whose (time,
//! nonce) it has seen: a captured request cannot be sent again. An answer's covers the
//! request's nonce, its status, its unhealed and drive-error marks and the SHA-256 of its
//! body; a stream's, every byte written. So one on the network without the secret can
//! neither forge nor replay a call, an answer, or a shard's bytes (the bitrot checksums are
//! not keyed). Pure functions of their inputs, `now` included.

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

/// Separates these signatures from any other use of the secret (and each kind from the others
/// by a second field: request, answer, stream).
const SCHEME: &[u8] = b"strata-drive-rpc-v2";

/// Why a request, or a secret, was refused. Messages are short and say nothing of the secret.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
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
    /// Which the answer's signature names; sent as [`SignedHeaders::nonce_hex`].
    pub nonce: u128,
    /// 64 hex digits.
    pub signature: String,
    /// The SHA-256 of the arguments, 64 hex digits.
    pub args_digest: String,
}

impl SignedHeaders {
    /// The nonce as its header carries it: 32 hex digits.
    pub fn nonce_hex(&self) -> String {
        format!("{:032x}", self.nonce)
    }
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

    /// The request's nonce, which its answer's signature names.
    pub fn nonce(&self) -> u128 {
        self.nonce
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
    pub fn sign(&self, request: &Signable<'_>, now: SystemTime) -> SignedHeaders {
        self.sign_with_nonce(request, millis(now), rand::random())
    }

    fn sign_with_nonce(&self, request: &Signable<'_>, time_ms: u64, nonce: u128) -> SignedHeaders {
        let mac = self.request_mac(request, time_ms, nonce);
        SignedHeaders {
            time: time_ms.to_string(),
            nonce,
            signature: hex::encode(mac.finalize().into_bytes()),
            args_digest: hex::encode(request.args_digest),
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
    /// this request (its arguments named by their digest, which the caller checks the
    /// arguments against), and never seen before. Only a request that passes every check is
    /// remembered.
    pub fn verify(
        &self,
        claim: &Claim,
        request: &Signable<'_>,
        now: SystemTime,
        seen: &NonceCache,
    ) -> Result<(), AuthError> {
        self.check_time(claim, now)?;
        self.request_mac(request, claim.time_ms, claim.nonce)
            .verify_slice(&claim.signature)
            .map_err(|_| AuthError::BadSignature)?;
        seen.remember(claim.time_ms, claim.nonce, millis(now))
    }

    /// The signature of the answer to the request whose nonce is `nonce`, hex.
    pub fn sign_answer(&self, nonce: u128, answer: &Answer<'_>) -> String {
        hex::encode(self.answer_mac(nonce, answer).finalize().into_bytes())
    }

    /// Accepts an answer signed for the request whose nonce is `nonce`, and for nothing else.
    pub fn verify_answer(
        &self,
        nonce: u128,
        answer: &Answer<'_>,
        signature: Option<&str>,
    ) -> Result<(), AuthError> {
        let mut bytes = [0u8; 32];
        signature
            .and_then(|s| hex::decode_to_slice(s, &mut bytes).ok())
            .ok_or(AuthError::Malformed("answer signature"))?;
        (self.answer_mac(nonce, answer))
            .verify_slice(&bytes)
            .map_err(|_| AuthError::BadSignature)
    }

    /// The signature of a shard stream's content, which its finish frame carries: it covers
    /// every byte written, in order, for the stream's request (named by its arguments, which
    /// name the staged file: one request per file).
    pub fn stream_mac(&self, args_digest: &ArgsDigest) -> StreamMac {
        let fields: [&[u8]; 4] = [
            SCHEME,
            b"stream",
            self.deployment_id.as_bytes(),
            args_digest,
        ];
        StreamMac(self.keyed(&fields))
    }

    fn request_mac(&self, request: &Signable<'_>, time_ms: u64, nonce: u128) -> Hmac<Sha256> {
        let fields: [&[u8]; 10] = [
            SCHEME,
            b"request",
            request.method.as_bytes(),
            request.path.as_bytes(),
            request.target.as_bytes(),
            self.deployment_id.as_bytes(),
            &time_ms.to_be_bytes(),
            &nonce.to_be_bytes(),
            request.args_digest,
            request.deadline.as_bytes(),
        ];
        self.keyed(&fields)
    }

    fn answer_mac(&self, nonce: u128, answer: &Answer<'_>) -> Hmac<Sha256> {
        let body_digest = args_digest(answer.body);
        let fields: [&[u8]; 8] = [
            SCHEME,
            b"answer",
            self.deployment_id.as_bytes(),
            &nonce.to_be_bytes(),
            &answer.status.to_be_bytes(),
            answer.unhealed.as_bytes(),
            &[u8::from(answer.drive_error)],
            &body_digest,
        ];
        self.keyed(&fields)
    }

    /// HMAC-SHA256 under the secret over length-prefixed fields: the one MAC of the cluster
    /// secret, for the drive RPC here and for other uses that name themselves in their first
    /// field (the seal of etcd records).
    pub(crate) fn keyed(&self, fields: &[&[u8]]) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        for field in fields {
            mac.update(&(field.len() as u64).to_be_bytes());
            mac.update(field);
        }
        mac
    }
}

/// What a request's signature covers besides its time and nonce.
#[derive(Debug, Clone, Copy)]
pub struct Signable<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// The drive service called, `host:port` as the layout names it: a call signed for one
    /// node is refused by every other.
    pub target: &'a str,
    pub args_digest: &'a ArgsDigest,
    /// The deadline header's value ("" when absent): signed, so it cannot be raised on the
    /// way.
    pub deadline: &'a str,
}

/// What an answer's signature covers besides its request's nonce.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    pub status: u16,
    /// The unhealed header's value ("" when absent).
    pub unhealed: &'a str,
    /// Whether the answer is marked as a drive's error.
    pub drive_error: bool,
    pub body: &'a [u8],
}

/// The running signature of a shard stream's content (see [`ClusterAuth::stream_mac`]).
pub struct StreamMac(Hmac<Sha256>);

impl StreamMac {
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> [u8; 32] {
        self.0.finalize().into_bytes().into()
    }

    /// Whether `tag` is the signature of what was streamed.
    pub fn verify(self, tag: &[u8]) -> bool {
        self.0.verify_slice(tag).is_ok()
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

    /// A cache that starts at `now`, remembering nothing from before: requests signed before
    /// it are refused as stale, so a call captured before the service (re)started cannot be
    /// replayed after. (A peer whose clock is behind by `d` is refused for the first `d`.)
    pub fn starting_at(capacity: usize, now: SystemTime) -> Self {
        let cache = Self::new(capacity);
        cache.state.lock().expect("not poisoned").line_ms = millis(now);
        cache
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
            Some(&headers.nonce_hex()),
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

    fn digest_of_args() -> ArgsDigest {
        args_digest(b"args")
    }

    fn request<'a>(path: &'a str, target: &'a str, digest: &'a ArgsDigest) -> Signable<'a> {
        Signable {
            method: "POST",
            path,
            target,
            args_digest: digest,
            deadline: "",
        }
    }

    /// The signatures are pinned (the values were computed independently, with Python's
    /// `hmac` over the length-prefixed fields): a change to what they cover is a new protocol
    /// version.
    #[test]
    fn the_signatures_are_stable() {
        let auth = ClusterAuth::new(SECRET, "dep").unwrap();
        let digest = digest_of_args();
        let call = request("/_strata/rpc/v2/meta_get", "node1:9100", &digest);
        let headers = auth.sign_with_nonce(&call, 1_700_000_000_000, 7);
        assert_eq!(headers.time, "1700000000000");
        assert_eq!(headers.nonce_hex(), "00000000000000000000000000000007");
        assert_eq!(
            headers.signature,
            "21ecf7e78c5e753364b4e97edf7e5db87af336912bfe77abc8e8a32a3cb70841"
        );
        let answer = Answer {
            status: 200,
            unhealed: "0",
            drive_error: false,
            body: b"value",
        };
        assert_eq!(
            auth.sign_answer(7, &answer),
            "f5caa0e11df593ae3eff8a122bcf84c5fad2e0989c2b7903bb8e3b5c35e275d4"
        );
    }

    /// Each row changes one thing the receiver checks; only the unchanged request passes.
    #[test]
    fn verification_table() {
        let auth = ClusterAuth::new(SECRET, "dep").unwrap();
        let now = 1_000_000_000;
        let (digest, other_digest) = (digest_of_args(), args_digest(b"argz"));
        let signed = request("/p", "node1:9100", &digest);
        let sign = |auth: &ClusterAuth, time| auth.sign_with_nonce(&signed, time, rand::random());
        let other_secret = ClusterAuth::new(&[b'x'; 32], "dep").unwrap();
        let other_deployment = ClusterAuth::new(SECRET, "other").unwrap();
        let bad = Err(AuthError::BadSignature);
        let later_deadline = Signable {
            deadline: "60000",
            ..signed
        };
        let cases = [
            ("as signed", sign(&auth, now), signed, Ok(())),
            (
                "other path",
                sign(&auth, now),
                request("/q", "node1:9100", &digest),
                bad.clone(),
            ),
            (
                "another node",
                sign(&auth, now),
                request("/p", "node2:9100", &digest),
                bad.clone(),
            ),
            (
                "other args",
                sign(&auth, now),
                request("/p", "node1:9100", &other_digest),
                bad.clone(),
            ),
            (
                "a deadline added",
                sign(&auth, now),
                later_deadline,
                bad.clone(),
            ),
            (
                "other secret",
                sign(&other_secret, now),
                signed,
                bad.clone(),
            ),
            (
                "other deployment",
                sign(&other_deployment, now),
                signed,
                bad.clone(),
            ),
            (
                "61 s old",
                sign(&auth, now - 61_000),
                signed,
                Err(AuthError::Stale),
            ),
            (
                "61 s ahead",
                sign(&auth, now + 61_000),
                signed,
                Err(AuthError::Stale),
            ),
            ("59 s old", sign(&auth, now - 59_000), signed, Ok(())),
        ];
        for (what, headers, received, expected) in cases {
            let seen = NonceCache::new(16);
            let got = auth.verify(&claim(&headers), &received, at(now), &seen);
            assert_eq!(got, expected, "{what}");
        }
        let headers = sign(&auth, now);
        let mut tampered = claim(&headers);
        tampered.time_ms += 1;
        let seen = NonceCache::new(16);
        let got = auth.verify(&tampered, &signed, at(now), &seen);
        assert_eq!(got, Err(AuthError::BadSignature), "time changed");
    }

    /// An answer passes only for the request it was signed for, exactly as signed.
    #[test]
    fn answers_verify_only_as_signed_for_their_request() {
        let auth = ClusterAuth::new(SECRET, "dep").unwrap();
        let answer = Answer {
            status: 200,
            unhealed: "0",
            drive_error: false,
            body: b"value",
        };
        let signature = auth.sign_answer(7, &answer);
        assert_eq!(auth.verify_answer(7, &answer, Some(&signature)), Ok(()));
        let bad = Err(AuthError::BadSignature);
        let changed = [
            ("another request's", 8, answer),
            (
                "other bytes",
                7,
                Answer {
                    body: b"forged",
                    ..answer
                },
            ),
            (
                "another status",
                7,
                Answer {
                    status: 500,
                    ..answer
                },
            ),
            (
                "marked unhealed",
                7,
                Answer {
                    unhealed: "1",
                    ..answer
                },
            ),
            (
                "marked a drive error",
                7,
                Answer {
                    drive_error: true,
                    ..answer
                },
            ),
        ];
        for (what, nonce, received) in changed {
            let got = auth.verify_answer(nonce, &received, Some(&signature));
            assert_eq!(got, bad, "{what}");
        }
        let other_secret = ClusterAuth::new(&[b'x'; 32], "dep").unwrap();
        let forged = other_secret.sign_answer(7, &answer);
        assert_eq!(auth.verify_answer(7, &answer, Some(&forged)), bad);
        assert_eq!(
            auth.verify_answer(7, &answer, None),
            Err(AuthError::Malformed("answer signature"))
        );
    }

    /// A stream's tag covers every byte in order, for the one request it was made for.
    #[test]
    fn a_stream_verifies_only_with_its_bytes() {
        let auth = ClusterAuth::new(SECRET, "dep").unwrap();
        let digest = digest_of_args();
        let tag_of = |chunks: &[&[u8]], digest: &ArgsDigest| {
            let mut mac = auth.stream_mac(digest);
            chunks.iter().for_each(|c| mac.update(c));
            mac.finish()
        };
        let tag = tag_of(&[b"shard ", b"bytes"], &digest);
        // Cut differently, the same bytes: the same tag.
        assert_eq!(tag, tag_of(&[b"shard bytes"], &digest));
        let verifies = |chunks: &[&[u8]], digest: &ArgsDigest| {
            let mut mac = auth.stream_mac(digest);
            chunks.iter().for_each(|c| mac.update(c));
            mac.verify(&tag)
        };
        assert!(verifies(&[b"shard bytes"], &digest));
        assert!(!verifies(&[b"shard bytez"], &digest));
        assert!(!verifies(&[b"shard byte"], &digest));
        assert!(!verifies(&[b"shard bytes"], &args_digest(b"another file")));
    }

    #[test]
    fn a_request_is_accepted_once() {
        let auth = ClusterAuth::new(SECRET, "dep").unwrap();
        let seen = NonceCache::new(16);
        let digest = args_digest(b"");
        let call = request("/p", "node1:9100", &digest);
        let headers = auth.sign(&call, at(5_000_000));
        assert_eq!(parse_args_digest(Some(&headers.args_digest)), Ok(digest));
        let verify = |now| auth.verify(&claim(&headers), &call, at(now), &seen);
        assert_eq!(verify(5_000_000), Ok(()));
        assert_eq!(verify(5_000_001), Err(AuthError::Replayed));
        assert_eq!(verify(5_059_000), Err(AuthError::Replayed));
        // Once its time is past the window, it is stale whatever the cache holds.
        assert_eq!(verify(5_061_000), Err(AuthError::Stale));
    }

    /// Before, a restart emptied the cache and a call captured in the minute before it was
    /// accepted once more.
    #[test]
    fn a_call_signed_before_the_service_started_is_never_accepted() {
        let seen = NonceCache::starting_at(16, at(5_000_000));
        assert_eq!(
            seen.remember(4_999_999, 1, 5_000_000),
            Err(AuthError::Stale)
        );
        assert_eq!(seen.remember(5_000_000, 1, 5_000_000), Ok(()));
        assert_eq!(seen.remember(5_000_500, 2, 5_000_100), Ok(()));
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
