//! Users' secret keys at rest. SigV4 needs the plain secret to check a signature, so it is
//! kept encrypted rather than hashed: AES-256-GCM under a key derived from the root
//! credentials and the deployment id, with the user's name as associated data (a sealed
//! secret moved to another user's record does not open).
//!
//! The key is derived with Argon2id (memory-hard): the sealed secrets sit on every drive with
//! the fingerprint of their key, so a drive that leaves the building must not make guessing
//! the root password cheap. Secrets sealed by earlier versions under a key from one HMAC
//! (HKDF-SHA256) still open, and are sealed again under the new key when loaded.
//!
//! Changing the root credentials changes the key: the secrets sealed before no longer open,
//! and those users must be added again (as in MinIO). Each sealed secret names the key that
//! sealed it by a short fingerprint, so the server can say so instead of failing silently.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The HKDF `info` of the secret-sealing key; a new purpose takes a new label.
const KEY_LABEL: &[u8] = b"strata iam user secrets v1";
const FINGERPRINT_LABEL: &[u8] = b"strata iam key fingerprint v1";
/// Argon2id's salt prefix (the deployment id follows) and cost: 19 MiB, two passes (OWASP's
/// recommended minimum), paid once per start.
const ARGON2_SALT: &[u8] = b"strata iam user secrets v2/";
const ARGON2_MEMORY_KIB: u32 = 19 * 1024;
const ARGON2_PASSES: u32 = 2;

/// A secret as stored: hex fields, so that the record stays readable JSON.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sealed {
    /// Fingerprint of the key that sealed it.
    pub key: String,
    pub nonce: String,
    pub ciphertext: String,
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealed")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

/// Why a sealed secret did not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    /// Sealed under other root credentials.
    OtherKey,
    /// Damaged, or moved to another name.
    Corrupt,
}

/// One sealing key and the fingerprint sealed secrets name it by.
#[derive(Clone)]
struct Key {
    cipher: Aes256Gcm,
    fingerprint: String,
}

impl Key {
    /// HKDF-SHA256 (RFC 5869) expansion of a pseudorandom key into the cipher's key and
    /// the fingerprint.
    fn expand(prk: &[u8; 32]) -> Self {
        let key = hmac(prk, &[KEY_LABEL, &[1]].concat());
        let fingerprint = hex::encode(&hmac(prk, &[FINGERPRINT_LABEL, &[1]].concat())[..8]);
        Self {
            cipher: Aes256Gcm::new_from_slice(&key).expect("a 32-byte key"),
            fingerprint,
        }
    }
}

/// Seals and opens secrets with the deployment's key.
pub struct SecretBox {
    key: Key,
    /// The key of earlier versions, for secrets they sealed.
    legacy: Key,
}

impl SecretBox {
    /// The key of a deployment with these root credentials.
    pub fn new(root_user: &str, root_password: &str, deployment_id: &str) -> Self {
        let credentials = [root_user.as_bytes(), b"\0", root_password.as_bytes()].concat();
        let params = argon2::Params::new(ARGON2_MEMORY_KIB, ARGON2_PASSES, 1, Some(32))
            .expect("valid Argon2 parameters");
        let argon2 =
            argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let salt = [ARGON2_SALT, deployment_id.as_bytes()].concat();
        let mut prk = [0u8; 32];
        argon2
            .hash_password_into(&credentials, &salt, &mut prk)
            .expect("Argon2 takes any password and a salt of 8 bytes or more");
        Self {
            key: Key::expand(&prk),
            legacy: Key::expand(&hmac(deployment_id.as_bytes(), &credentials)),
        }
    }

    /// Encrypts `secret`, bound to `name`.
    pub fn seal(&self, secret: &str, name: &str) -> Sealed {
        let nonce: [u8; 12] = rand::random();
        let payload = Payload {
            msg: secret.as_bytes(),
            aad: name.as_bytes(),
        };
        let ciphertext = self
            .key
            .cipher
            .encrypt(Nonce::from_slice(&nonce), payload)
            .expect("AES-GCM encrypts any short message");
        Sealed {
            key: self.key.fingerprint.clone(),
            nonce: hex::encode(nonce),
            ciphertext: hex::encode(ciphertext),
        }
    }

    /// What an earlier version sealed, for tests of what follows.
    #[cfg(test)]
    pub(crate) fn seal_as_before(&self, secret: &str, name: &str) -> Sealed {
        let before = SecretBox {
            key: self.legacy.clone(),
            legacy: self.legacy.clone(),
        };
        before.seal(secret, name)
    }

    /// Whether `sealed` was sealed under the key of earlier versions (seal it again).
    pub fn is_legacy(&self, sealed: &Sealed) -> bool {
        sealed.key == self.legacy.fingerprint
    }

    /// Decrypts a secret sealed for `name`.
    pub fn open(&self, sealed: &Sealed, name: &str) -> Result<String, OpenError> {
        let key = match &sealed.key {
            fingerprint if *fingerprint == self.key.fingerprint => &self.key,
            fingerprint if *fingerprint == self.legacy.fingerprint => &self.legacy,
            _ => return Err(OpenError::OtherKey),
        };
        let nonce = hex::decode(&sealed.nonce).map_err(|_| OpenError::Corrupt)?;
        let ciphertext = hex::decode(&sealed.ciphertext).map_err(|_| OpenError::Corrupt)?;
        if nonce.len() != 12 {
            return Err(OpenError::Corrupt);
        }
        let payload = Payload {
            msg: &ciphertext,
            aad: name.as_bytes(),
        };
        let plain = key
            .cipher
            .decrypt(Nonce::from_slice(&nonce), payload)
            .map_err(|_| OpenError::Corrupt)?;
        String::from_utf8(plain).map_err(|_| OpenError::Corrupt)
    }
}

fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_open_only_with_the_same_key_and_name() {
        let keys = SecretBox::new("root", "root-password", "deployment");
        let sealed = keys.seal("s3cr3t-value", "alice");
        assert!(!sealed.ciphertext.contains(&hex::encode("s3cr3t-value")));
        assert!(!format!("{sealed:?}").contains(&sealed.ciphertext));
        assert_eq!(keys.open(&sealed, "alice").unwrap(), "s3cr3t-value");
        // Each seal has its own nonce.
        assert_ne!(keys.seal("s3cr3t-value", "alice"), sealed);
        assert_eq!(keys.open(&sealed, "bob"), Err(OpenError::Corrupt));
        let mut damaged = sealed.clone();
        damaged.ciphertext.replace_range(0..2, "00");
        if damaged != sealed {
            assert_eq!(keys.open(&damaged, "alice"), Err(OpenError::Corrupt));
        }
        // What earlier versions sealed (one HMAC of the credentials) still opens, and says
        // it should be sealed again; what this one seals names an Argon2id-derived key.
        let legacy = Key::expand(&hmac(b"deployment", b"root\0root-password"));
        let sealed_before = keys.seal_as_before("older-secret", "carol");
        assert_eq!(sealed_before.key, legacy.fingerprint);
        assert!(keys.is_legacy(&sealed_before) && !keys.is_legacy(&sealed));
        assert_eq!(keys.open(&sealed_before, "carol").unwrap(), "older-secret");
        assert_ne!(sealed.key, legacy.fingerprint);
        for other in [
            SecretBox::new("root", "other-password", "deployment"),
            SecretBox::new("root", "root-password", "other-deployment"),
            SecretBox::new("admin", "root-password", "deployment"),
        ] {
            assert_eq!(other.open(&sealed, "alice"), Err(OpenError::OtherKey));
        }
    }
}
