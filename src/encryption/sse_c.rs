//! SSE-C: the key a client sends with each request. It is validated here, used as the
//! key-encryption key of the object key, and never stored: the object's record keeps only a
//! salted keyed hash of it (its fingerprint), to tell a wrong key from a damaged record.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::{Hmac, Mac};
use md5::{Digest, Md5};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::keys::random_key;

/// The only algorithm S3 accepts in `x-amz-server-side-encryption-customer-algorithm`.
pub const CUSTOMER_ALGORITHM: &str = "AES256";

/// Why a request's SSE-C headers were refused. Every case is S3's `400 InvalidArgument`;
/// [`message`](Self::message) is the text S3 sends with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CustomerKeyError {
    /// The algorithm header is missing or not `AES256`.
    #[error("{}", self.message())]
    InvalidAlgorithm,
    /// The key header is missing.
    #[error("{}", self.message())]
    MissingKey,
    /// The key is not base64 of exactly 32 bytes.
    #[error("{}", self.message())]
    InvalidKey,
    /// The key-MD5 header is missing.
    #[error("{}", self.message())]
    MissingKeyMd5,
    /// The key-MD5 header is not the base64 MD5 of the decoded key.
    #[error("{}", self.message())]
    KeyMd5Mismatch,
}

impl CustomerKeyError {
    /// S3's error code for every case.
    pub const S3_CODE: &'static str = "InvalidArgument";

    /// The message S3 answers with.
    pub fn message(&self) -> &'static str {
        match self {
            Self::InvalidAlgorithm => "Requests specifying Server Side Encryption with Customer provided keys must provide a valid encryption algorithm.",
            Self::MissingKey => "Requests specifying Server Side Encryption with Customer provided keys must provide an appropriate secret key.",
            Self::InvalidKey => "The secret key was invalid for the specified algorithm.",
            Self::MissingKeyMd5 => "Requests specifying Server Side Encryption with Customer provided keys must provide the client calculated MD5 of the secret key.",
            Self::KeyMd5Mismatch => "The calculated MD5 hash of the key did not match the hash that was provided.",
        }
    }
}

/// A client's validated 256-bit SSE-C key.
pub struct CustomerKey(Zeroizing<[u8; 32]>);

impl CustomerKey {
    /// Validates the three SSE-C header values (`…-customer-algorithm`, `…-customer-key`,
    /// `…-customer-key-MD5`, or their `x-amz-copy-source-…` forms), each `None` when absent.
    /// The checks run in S3's order: algorithm, key, then its MD5.
    pub fn from_headers(
        algorithm: Option<&str>,
        key: Option<&str>,
        key_md5: Option<&str>,
    ) -> Result<Self, CustomerKeyError> {
        if algorithm != Some(CUSTOMER_ALGORITHM) {
            return Err(CustomerKeyError::InvalidAlgorithm);
        }
        let key = key.ok_or(CustomerKeyError::MissingKey)?;
        let decoded = Zeroizing::new(
            BASE64
                .decode(key.trim())
                .map_err(|_| CustomerKeyError::InvalidKey)?,
        );
        let bytes: [u8; 32] = decoded
            .as_slice()
            .try_into()
            .map_err(|_| CustomerKeyError::InvalidKey)?;
        let customer = Self(Zeroizing::new(bytes));
        let key_md5 = key_md5.ok_or(CustomerKeyError::MissingKeyMd5)?;
        let claimed = BASE64
            .decode(key_md5.trim())
            .map_err(|_| CustomerKeyError::KeyMd5Mismatch)?;
        if !bool::from(claimed.ct_eq(customer.md5().as_slice())) {
            return Err(CustomerKeyError::KeyMd5Mismatch);
        }
        Ok(customer)
    }

    /// A customer key from its 32 bytes (for tests and tools; requests go through
    /// [`from_headers`](Self::from_headers)).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(Zeroizing::new(bytes))
    }

    fn md5(&self) -> [u8; 16] {
        Md5::digest(self.0.as_slice()).into()
    }

    /// Base64 of the key's MD5: what S3 echoes in `…-customer-key-MD5` response headers.
    pub fn key_md5_base64(&self) -> String {
        BASE64.encode(self.md5())
    }

    /// A fresh random salt for [`fingerprint`](Self::fingerprint), stored beside it.
    pub fn new_salt() -> [u8; 32] {
        *random_key()
    }

    /// HMAC-SHA256 keyed by the per-object `salt` over a label and the key: what the object's
    /// record keeps instead of the key. The salt makes equal keys on two objects unlinkable.
    pub fn fingerprint(&self, salt: &[u8; 32]) -> [u8; 32] {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(salt).expect("HMAC accepts a key of any length");
        mac.update(b"strata sse-c key fingerprint v1");
        mac.update(self.0.as_slice());
        mac.finalize().into_bytes().into()
    }

    /// Whether this is the key whose fingerprint under `salt` is `stored`, compared in
    /// constant time.
    pub fn matches(&self, salt: &[u8; 32], stored: &[u8]) -> bool {
        self.fingerprint(salt).ct_eq(stored).into()
    }

    /// The key as the key-encryption key of the object key it protects.
    pub(crate) fn as_kek(&self) -> &[u8; 32] {
        &self.0
    }
}

impl std::fmt::Debug for CustomerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CustomerKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(key: &[u8]) -> (String, String) {
        (BASE64.encode(key), BASE64.encode(Md5::digest(key)))
    }

    #[test]
    fn valid_headers_give_the_key() {
        let (key, md5) = headers(&[42; 32]);
        let customer =
            CustomerKey::from_headers(Some("AES256"), Some(&key), Some(&md5)).expect("valid");
        assert_eq!(*customer.as_kek(), [42; 32]);
        assert_eq!(customer.key_md5_base64(), md5);
    }

    #[test]
    fn each_invalid_header_names_its_s3_message() {
        let (key, md5) = headers(&[1; 32]);
        let (short_key, short_md5) = headers(&[1; 16]);
        let (_, other_md5) = headers(&[2; 32]);
        /// Algorithm, key and key-MD5 headers, and the error they give.
        type Case<'a> = (
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            CustomerKeyError,
        );
        let cases: [Case; 10] = [
            (
                None,
                Some(&key),
                Some(&md5),
                CustomerKeyError::InvalidAlgorithm,
            ),
            (
                Some("AES128"),
                Some(&key),
                Some(&md5),
                CustomerKeyError::InvalidAlgorithm,
            ),
            (
                Some("aes256"),
                Some(&key),
                Some(&md5),
                CustomerKeyError::InvalidAlgorithm,
            ),
            (
                Some("AES256"),
                None,
                Some(&md5),
                CustomerKeyError::MissingKey,
            ),
            (
                Some("AES256"),
                Some("not base64!"),
                Some(&md5),
                CustomerKeyError::InvalidKey,
            ),
            (
                Some("AES256"),
                Some(&short_key),
                Some(&short_md5),
                CustomerKeyError::InvalidKey,
            ),
            (
                Some("AES256"),
                Some(""),
                Some(&md5),
                CustomerKeyError::InvalidKey,
            ),
            (
                Some("AES256"),
                Some(&key),
                None,
                CustomerKeyError::MissingKeyMd5,
            ),
            (
                Some("AES256"),
                Some(&key),
                Some(&other_md5),
                CustomerKeyError::KeyMd5Mismatch,
            ),
            (
                Some("AES256"),
                Some(&key),
                Some("%%%"),
                CustomerKeyError::KeyMd5Mismatch,
            ),
        ];
        for (algorithm, key, md5, expected) in cases {
            let error = CustomerKey::from_headers(algorithm, key, md5).expect_err("invalid");
            assert_eq!(error, expected, "{algorithm:?} {key:?} {md5:?}");
        }
        assert_eq!(
            CustomerKeyError::InvalidKey.to_string(),
            "The secret key was invalid for the specified algorithm."
        );
        assert_eq!(
            CustomerKeyError::KeyMd5Mismatch.message(),
            "The calculated MD5 hash of the key did not match the hash that was provided."
        );
    }

    #[test]
    fn fingerprint_matches_only_the_same_key_and_salt() {
        let key = CustomerKey::from_bytes([3; 32]);
        let salt = CustomerKey::new_salt();
        let stored = key.fingerprint(&salt);
        assert!(key.matches(&salt, &stored));
        assert!(!CustomerKey::from_bytes([4; 32]).matches(&salt, &stored));
        assert!(!key.matches(&CustomerKey::new_salt(), &stored));
        assert!(!key.matches(&salt, &stored[..31]));
        assert_ne!(stored, [3; 32]);
        assert_ne!(key.fingerprint(&CustomerKey::new_salt()), stored);
    }

    #[test]
    fn debug_output_redacts_the_key() {
        assert_eq!(
            format!("{:?}", CustomerKey::from_bytes([9; 32])),
            "CustomerKey(<redacted>)"
        );
    }
}
