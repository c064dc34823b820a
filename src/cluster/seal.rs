//! The seal on every record value this cluster keeps in etcd: an HMAC-SHA256, under the
//! cluster secret, of the deployment, the record's key and its value. Whoever can write to
//! etcd without the secret (a leaked etcd credential, an etcd reachable by others) can delete
//! or replace a value, but not forge one a node believes, nor move one to another key.
//!
//! A sealed value is [`MAGIC`], the 32-byte tag, then the value. Record encodings start with
//! their format's version byte (1) and tombstones with `d`, so a value written before records
//! were sealed is told apart; like a forged one, it is unverified, and nodes take the drives'
//! copy instead (see `ControlPlane`'s `RecordAuthority`).

use hmac::Mac;

use crate::storage::remote::ClusterAuth;

/// Starts every sealed value: never the first byte of a record's encoding or a tombstone.
const MAGIC: &[u8] = b"\xffS1";
const TAG_LEN: usize = 32;
/// Separates this use of the secret from the drive RPC's.
const SCHEME: &[u8] = b"strata-etcd-record-v1";

/// Seals and opens record values for one deployment, under the cluster secret that signs its
/// drive calls. Cloning shares the key.
#[derive(Clone, Debug)]
pub struct RecordSeal {
    auth: ClusterAuth,
}

impl RecordSeal {
    pub fn new(auth: ClusterAuth) -> Self {
        Self { auth }
    }

    /// The value as stored under `key`. The same value always seals to the same bytes, so a
    /// compare-and-swap can compare sealed bytes.
    pub fn seal(&self, key: &str, value: &[u8]) -> Vec<u8> {
        let tag = self.tag(key, value).finalize().into_bytes();
        [MAGIC, &tag[..], value].concat()
    }

    /// The value stored under `key`, if it carries this cluster's seal for that key.
    pub fn open<'a>(&self, key: &str, stored: &'a [u8]) -> Option<&'a [u8]> {
        let sealed = stored.strip_prefix(MAGIC)?;
        if sealed.len() < TAG_LEN {
            return None;
        }
        let (tag, value) = sealed.split_at(TAG_LEN);
        self.tag(key, value).verify_slice(tag).ok()?;
        Some(value)
    }

    fn tag(&self, key: &str, value: &[u8]) -> hmac::Hmac<sha2::Sha256> {
        let deployment = self.auth.deployment_id().as_bytes();
        self.auth
            .keyed(&[SCHEME, deployment, key.as_bytes(), value])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn seal_of(secret: &[u8], deployment: &str) -> RecordSeal {
        RecordSeal::new(ClusterAuth::new(secret, deployment).unwrap())
    }

    #[test]
    fn only_a_value_sealed_for_its_key_opens() {
        let seal = seal_of(SECRET, "dep");
        let stored = seal.seal("buckets/a", b"\x01record");
        assert_eq!(
            stored,
            seal.seal("buckets/a", b"\x01record"),
            "deterministic"
        );
        assert_eq!(seal.open("buckets/a", &stored), Some(&b"\x01record"[..]));
        // Moved to another key, changed, sealed by another secret or deployment, or never
        // sealed: not opened.
        assert_eq!(seal.open("buckets/b", &stored), None);
        let mut changed = stored.clone();
        *changed.last_mut().unwrap() ^= 1;
        assert_eq!(seal.open("buckets/a", &changed), None);
        let other = seal_of(&[7; 32], "dep").seal("buckets/a", b"\x01record");
        assert_eq!(seal.open("buckets/a", &other), None);
        let elsewhere = seal_of(SECRET, "other").seal("buckets/a", b"\x01record");
        assert_eq!(seal.open("buckets/a", &elsewhere), None);
        assert_eq!(seal.open("buckets/a", b"\x01record"), None);
        assert_eq!(seal.open("buckets/a", b"deleted"), None);
        assert_eq!(seal.open("buckets/a", MAGIC), None);
        let empty = seal.seal("k", b"");
        assert_eq!(seal.open("k", &empty), Some(&b""[..]));
    }
}
