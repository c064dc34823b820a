//! Object keys: the random key behind each encrypted object, the package keys derived from
//! it, and its sealed (wrapped) form kept in the object's metadata record.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hkdf::Hkdf;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use zeroize::Zeroizing;

use super::package::PackageKey;
use super::EncryptionError;
pub(crate) use crate::kms::sealing::random_key;
use crate::kms::sealing::{open_bytes, push_length_prefixed, seal_bytes};

/// The algorithm tag of [`SealedKey`]s written by this version: AES-256-GCM under a key
/// derived by HKDF-SHA256 from the key-encryption key and a random 32-byte IV.
pub const SEAL_ALGORITHM: &str = "AES-256-GCM-HKDF-SHA256";

/// The random key of one object version; every package key of the object derives from it.
///
/// Never stored in the clear: the metadata record holds it as a [`SealedKey`].
pub struct ObjectKey(Zeroizing<[u8; 32]>);

impl ObjectKey {
    /// A fresh random object key.
    pub fn generate() -> Self {
        Self(random_key())
    }

    /// An object key from its 32 bytes (as opened from a sealed key, or in tests).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(Zeroizing::new(bytes))
    }

    /// The package key of an object written by a single PUT (or a copy).
    pub fn object_package_key(&self) -> PackageKey {
        PackageKey::from_bytes(self.derive(b"strata sse package key: object"))
    }

    /// The package key of part `part_number` of a multipart upload. Every part has its own,
    /// because package sequence numbers restart at 0 in every part: parts sharing a key
    /// would reuse nonces, and packages could be swapped between parts.
    /// The package key of one part of a multipart upload, named by something unique to
    /// that upload of the part (its file name): a part sent again gets another key, so no
    /// key ever seals two different streams.
    pub fn part_package_key(&self, part: &str) -> PackageKey {
        let mut info = b"strata sse package key: part ".to_vec();
        info.extend_from_slice(part.as_bytes());
        PackageKey::from_bytes(self.derive(&info))
    }

    fn derive(&self, info: &[u8]) -> [u8; 32] {
        let mut derived = [0u8; 32];
        Hkdf::<Sha256>::new(None, self.0.as_slice())
            .expand(info, &mut derived)
            .expect("32 bytes is a valid HKDF-SHA256 output length");
        derived
    }
}

impl std::fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ObjectKey(<redacted>)")
    }
}

/// Which kind of server-side encryption protects an object; part of every seal's context so
/// a key sealed for one kind never opens as another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SseKind {
    /// SSE-S3: the deployment's own key.
    S3,
    /// SSE-KMS: a data key from the key service.
    Kms,
    /// SSE-C: the client's key.
    Customer,
}

impl SseKind {
    fn label(self) -> &'static [u8] {
        match self {
            SseKind::S3 => b"sse-s3",
            SseKind::Kms => b"sse-kms",
            SseKind::Customer => b"sse-c",
        }
    }
}

/// What a sealed object key is bound to: it opens only for the same bucket, object name and
/// kind of encryption, so a sealed key copied into another object's record does not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealContext<'a> {
    pub bucket: &'a str,
    pub object: &'a str,
    pub kind: SseKind,
}

impl SealContext<'_> {
    /// The associated data of the seal: a label, then each field length-prefixed so no two
    /// contexts serialise alike.
    fn associated_data(&self) -> Vec<u8> {
        let mut ad = b"strata sse object key v1".to_vec();
        for field in [
            self.kind.label(),
            self.bucket.as_bytes(),
            self.object.as_bytes(),
        ] {
            push_length_prefixed(&mut ad, field);
        }
        ad
    }
}

/// An object key encrypted by a key-encryption key, as stored in the object's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedKey {
    /// [`SEAL_ALGORITHM`]; anything else is refused rather than guessed at.
    pub algorithm: String,
    /// Base64 of the random 32-byte IV that, with the key-encryption key, derives the
    /// one-time sealing key.
    pub iv: String,
    /// Base64 of the encrypted object key followed by its 16-byte tag.
    pub ciphertext: String,
}

/// Seals `key` under the key-encryption key `kek`, bound to `context`.
pub fn seal(kek: &[u8; 32], key: &ObjectKey, context: &SealContext) -> SealedKey {
    let (iv, ciphertext) = seal_bytes(kek, &context.associated_data(), key.0.as_slice());
    SealedKey {
        algorithm: SEAL_ALGORITHM.to_owned(),
        iv: BASE64.encode(iv),
        ciphertext: BASE64.encode(ciphertext),
    }
}

/// Opens a sealed object key. Fails with [`EncryptionError::Unseal`] when the KEK or the
/// context differ from the seal's, or the sealed key was altered.
pub fn unseal(
    kek: &[u8; 32],
    sealed: &SealedKey,
    context: &SealContext,
) -> Result<ObjectKey, EncryptionError> {
    if sealed.algorithm != SEAL_ALGORITHM {
        return Err(EncryptionError::UnsupportedAlgorithm(
            sealed.algorithm.clone(),
        ));
    }
    let malformed = |what: &str| EncryptionError::Malformed(format!("sealed key: {what}"));
    let iv: [u8; 32] = BASE64
        .decode(&sealed.iv)
        .ok()
        .and_then(|iv| iv.try_into().ok())
        .ok_or_else(|| malformed("bad IV"))?;
    let ciphertext = BASE64
        .decode(&sealed.ciphertext)
        .map_err(|_| malformed("bad ciphertext encoding"))?;
    let plain = open_bytes(kek, &iv, &context.associated_data(), &ciphertext)
        .ok_or(EncryptionError::Unseal)?;
    let bytes: [u8; 32] = plain
        .as_slice()
        .try_into()
        .map_err(|_| malformed("not a 32-byte key"))?;
    Ok(ObjectKey::from_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEK: [u8; 32] = [7; 32];

    fn context<'a>(bucket: &'a str, object: &'a str, kind: SseKind) -> SealContext<'a> {
        SealContext {
            bucket,
            object,
            kind,
        }
    }

    #[test]
    fn sealed_key_round_trips_through_json() {
        let key = ObjectKey::generate();
        let ctx = context("photos", "2024/a.jpg", SseKind::S3);
        let sealed = seal(&KEK, &key, &ctx);
        let json = serde_json::to_string(&sealed).expect("serialises");
        let back: SealedKey = serde_json::from_str(&json).expect("parses");
        let opened = unseal(&KEK, &back, &ctx).expect("opens");
        assert_eq!(*opened.0, *key.0);
    }

    #[test]
    fn sealed_key_moved_to_another_object_does_not_open() {
        let key = ObjectKey::generate();
        let sealed = seal(&KEK, &key, &context("b", "a", SseKind::S3));
        for other in [
            context("b", "other", SseKind::S3),
            context("other", "a", SseKind::S3),
            context("b", "a", SseKind::Kms),
            context("b", "a", SseKind::Customer),
            // Length prefixes keep "b"+"a" apart from "ba"+"" and "" + "ba".
            context("ba", "", SseKind::S3),
            context("", "ba", SseKind::S3),
        ] {
            assert!(matches!(
                unseal(&KEK, &sealed, &other),
                Err(EncryptionError::Unseal)
            ));
        }
    }

    #[test]
    fn sealed_key_opens_only_with_its_kek_and_unaltered() {
        let key = ObjectKey::generate();
        let ctx = context("b", "o", SseKind::Kms);
        let sealed = seal(&KEK, &key, &ctx);
        assert!(matches!(
            unseal(&[8; 32], &sealed, &ctx),
            Err(EncryptionError::Unseal)
        ));
        let mut bytes = BASE64.decode(&sealed.ciphertext).expect("base64");
        for i in 0..bytes.len() {
            bytes[i] ^= 1;
            let altered = SealedKey {
                ciphertext: BASE64.encode(&bytes),
                ..sealed.clone()
            };
            assert!(unseal(&KEK, &altered, &ctx).is_err(), "byte {i}");
            bytes[i] ^= 1;
        }
        let other_iv = SealedKey {
            iv: BASE64.encode([0u8; 32]),
            ..sealed.clone()
        };
        assert!(unseal(&KEK, &other_iv, &ctx).is_err());
        let short_iv = SealedKey {
            iv: BASE64.encode([0u8; 12]),
            ..sealed.clone()
        };
        assert!(matches!(
            unseal(&KEK, &short_iv, &ctx),
            Err(EncryptionError::Malformed(_))
        ));
        let other_algorithm = SealedKey {
            algorithm: "ROT13".into(),
            ..sealed
        };
        assert!(matches!(
            unseal(&KEK, &other_algorithm, &ctx),
            Err(EncryptionError::UnsupportedAlgorithm(_))
        ));
    }

    #[test]
    fn every_seal_of_one_key_differs() {
        let key = ObjectKey::generate();
        let ctx = context("b", "o", SseKind::S3);
        assert_ne!(seal(&KEK, &key, &ctx), seal(&KEK, &key, &ctx));
    }

    #[test]
    fn package_keys_differ_per_part_and_from_the_object_key() {
        let key = ObjectKey::generate();
        let mut derived: Vec<[u8; 32]> = vec![key.object_package_key().bytes()];
        for part in ["part.1.a", "part.1.b", "part.2.a", ""] {
            derived.push(key.part_package_key(part).bytes());
        }
        derived.push(*key.0);
        let count = derived.len();
        derived.sort();
        derived.dedup();
        assert_eq!(derived.len(), count);
        // Deterministic: the same object key always gives the same package keys.
        assert_eq!(
            key.part_package_key("part.3.a").bytes(),
            key.part_package_key("part.3.a").bytes()
        );
    }

    #[test]
    fn debug_output_redacts_keys() {
        let key = ObjectKey::from_bytes([0xab; 32]);
        assert!(!format!("{key:?}").contains("ab"));
        assert!(!format!("{:?}", key.object_package_key()).contains("171"));
    }
}
