//! The building block of every key wrap in Strata (object keys, the key service's named keys
//! and data keys): AES-256-GCM under a one-time key derived from the key-encryption key and a
//! random IV, each wrap with its own labelled associated data.

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes256Gcm, KeyInit, Tag};
use hkdf::Hkdf;
use rand::RngCore;
use sha2::Sha256;
use zeroize::Zeroizing;

/// 32 random bytes from the thread-local CSPRNG (ChaCha, seeded and reseeded by the OS).
pub fn random_key() -> Zeroizing<[u8; 32]> {
    let mut key = Zeroizing::new([0u8; 32]);
    rand::rng().fill_bytes(key.as_mut_slice());
    key
}

/// Appends `field` with its length (4 bytes, big-endian) in front.
pub fn push_length_prefixed(out: &mut Vec<u8>, field: &[u8]) {
    // Fields are names and small values; a longer one would still be unambiguous up to
    // 4 GiB, and none comes near it.
    out.extend_from_slice(&(field.len() as u32).to_be_bytes());
    out.extend_from_slice(field);
}

/// The one-time AES-256-GCM key of one seal. Deriving a fresh key per seal from a random IV
/// (instead of using the KEK with random 96-bit nonces) keeps a single KEK safe however many
/// keys it seals: nonce collisions stop being a concern.
fn sealing_cipher(kek: &[u8; 32], iv: &[u8; 32]) -> Aes256Gcm {
    let mut key = Zeroizing::new([0u8; 32]);
    Hkdf::<Sha256>::new(Some(iv), kek)
        .expand(b"strata seal v1", key.as_mut_slice())
        .expect("32 bytes is a valid HKDF-SHA256 output length");
    Aes256Gcm::new(aes_gcm::Key::<Aes256Gcm>::from_slice(key.as_slice()))
}

/// The nonce of a sealing key, used once: every seal has its own key.
const SEAL_NONCE: [u8; 12] = [0; 12];

/// Encrypts `plain` under `kek` with associated data `ad`: returns the random IV and the
/// ciphertext followed by its tag. The building block of every key wrap in Strata (object
/// keys, the KMS's named keys and data keys), each with its own labelled `ad`.
pub fn seal_bytes(kek: &[u8; 32], ad: &[u8], plain: &[u8]) -> ([u8; 32], Vec<u8>) {
    let iv = *random_key();
    let mut buffer = plain.to_vec();
    let tag = sealing_cipher(kek, &iv)
        .encrypt_in_place_detached(&SEAL_NONCE.into(), ad, &mut buffer)
        .expect("a short buffer always encrypts");
    buffer.extend_from_slice(&tag);
    (iv, buffer)
}

/// Opens what [`seal_bytes`] sealed; `None` if the KEK, IV, `ad` or ciphertext differ.
pub fn open_bytes(
    kek: &[u8; 32],
    iv: &[u8; 32],
    ad: &[u8],
    sealed: &[u8],
) -> Option<Zeroizing<Vec<u8>>> {
    let body_len = sealed.len().checked_sub(TAG_SIZE)?;
    let tag = Tag::clone_from_slice(&sealed[body_len..]);
    let mut buffer = Zeroizing::new(sealed[..body_len].to_vec());
    sealing_cipher(kek, iv)
        .decrypt_in_place_detached(&SEAL_NONCE.into(), ad, &mut buffer, &tag)
        .ok()?;
    Some(buffer)
}

const TAG_SIZE: usize = 16;
