//! Server-side encryption: SSE-S3, SSE-KMS and SSE-C.
//!
//! Every encrypted object version has its own random [`ObjectKey`]. Its plaintext is sealed
//! into independently authenticated packages ([`package`]) under a [`PackageKey`] derived
//! from the object key (one per part of a multipart upload), *before* erasure coding; the
//! object key itself is stored in the version's record sealed ([`SealedKey`]) by a
//! key-encryption key (KEK) that depends on the kind of encryption:
//!
//! | kind | KEK of the object key | record ([`Sse`]) |
//! | --- | --- | --- |
//! | SSE-S3 | [`KeyService::sse_s3_kek`], one per deployment | [`Sse::S3`] |
//! | SSE-KMS | a data key from [`KeyService::generate_data_key`] | [`Sse::Kms`], with the sealed data key |
//! | SSE-C | the client's key, sent with every request | [`Sse::Customer`], with a salted fingerprint of the key |
//!
//! Every seal is bound to the bucket, the object name and the kind ([`SealContext`]), so a
//! record's key copied to another object does not open there.

pub mod keys;
pub mod package;
pub mod sse_c;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::kms::{DataKey, EncryptionContext, KeyService, KmsError};

pub use keys::{seal, unseal, ObjectKey, SealContext, SealedKey, SseKind, SEAL_ALGORITHM};
pub use package::{
    decrypt_stream, encrypt_stream, package_count, plain_len, sealed_len, sealed_range, PackageKey,
    SealedRange, PACKAGE_SIZE, SEALED_PACKAGE_SIZE, TAG_LEN,
};
pub use sse_c::{CustomerKey, CustomerKeyError, CUSTOMER_ALGORITHM};

/// Why an object key could not be made or reopened.
#[derive(Debug, thiserror::Error)]
pub enum EncryptionError {
    /// The sealed key does not open with this KEK and context: another key, another
    /// object's record, or altered bytes.
    #[error("the object key does not open with this key and context")]
    Unseal,
    #[error("unsupported sealing algorithm {0:?}")]
    UnsupportedAlgorithm(String),
    /// A stored field does not decode (bad base64, wrong length).
    #[error("malformed encryption record: {0}")]
    Malformed(String),
    /// An SSE-C object read without its key (S3: 400 InvalidRequest, "The object was stored
    /// using a form of Server Side Encryption. The correct parameters must be provided to
    /// retrieve the object.").
    #[error("the object is encrypted with a customer key, which the request lacks")]
    CustomerKeyRequired,
    /// SSE-C headers on an object that is not SSE-C (S3: 400 InvalidRequest, "The encryption
    /// parameters are not applicable to this object.").
    #[error("the request's customer key does not apply to this object")]
    CustomerKeyNotApplicable,
    /// The request's SSE-C key is not the object's (S3: 403 AccessDenied).
    #[error("the customer key does not match the object's")]
    CustomerKeyMismatch,
    /// SSE-KMS without a key id on a service with no default key.
    #[error("no KMS key given and no default key configured")]
    NoKmsKey,
    #[error(transparent)]
    Kms(#[from] KmsError),
}

/// How one object version is encrypted: what its metadata record keeps to reopen its key.
/// Serialises with serde's default (externally tagged) enum form, which JSON and MessagePack
/// records both read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Sse {
    /// SSE-S3: the object key sealed by the deployment's SSE-S3 KEK.
    S3 { sealed: SealedKey },
    /// SSE-KMS: the object key sealed by a data key of KMS key `key_id`.
    Kms {
        key_id: String,
        /// Base64 of the data key as sealed by the key service.
        sealed_data_key: String,
        sealed: SealedKey,
        /// The data key's encryption context, needed again to unseal it.
        context: EncryptionContext,
        /// The data key is the bucket's (S3 Bucket Keys), shared by many objects, rather than
        /// this object's own: S3 reports it in `x-amz-server-side-encryption-bucket-key-enabled`.
        bucket_key: bool,
    },
    /// SSE-C: the object key sealed by the client's key, of which only a salted
    /// fingerprint is kept.
    Customer {
        sealed: SealedKey,
        /// Base64 of the 32-byte fingerprint salt.
        salt: String,
        /// Base64 of [`CustomerKey::fingerprint`] under `salt`.
        fingerprint: String,
    },
}

impl Sse {
    pub fn kind(&self) -> SseKind {
        match self {
            Sse::S3 { .. } => SseKind::S3,
            Sse::Kms { .. } => SseKind::Kms,
            Sse::Customer { .. } => SseKind::Customer,
        }
    }

    /// A new SSE-S3 object key, and its record, under the deployment's SSE-S3 `kek`.
    pub fn seal_s3(kek: &[u8; 32], bucket: &str, object: &str) -> (ObjectKey, Sse) {
        let key = ObjectKey::generate();
        let sealed = seal(kek, &key, &context(bucket, object, SseKind::S3));
        (key, Sse::S3 { sealed })
    }

    /// A new SSE-KMS object key, and its record, under `data_key` (from
    /// [`KeyService::generate_data_key`] with `key_id` and `context`; with Bucket Keys, one
    /// data key the caller reuses for many objects of a bucket).
    pub fn seal_kms(
        data_key: &DataKey,
        key_id: &str,
        context: EncryptionContext,
        bucket_key: bool,
        bucket: &str,
        object: &str,
    ) -> (ObjectKey, Sse) {
        let key = ObjectKey::generate();
        let sealed = seal(
            &data_key.plaintext,
            &key,
            &self::context(bucket, object, SseKind::Kms),
        );
        let record = Sse::Kms {
            key_id: key_id.to_owned(),
            sealed_data_key: BASE64.encode(&data_key.sealed),
            sealed,
            context,
            bucket_key,
        };
        (key, record)
    }

    /// A new SSE-C object key, and its record, under the client's key.
    pub fn seal_customer(customer: &CustomerKey, bucket: &str, object: &str) -> (ObjectKey, Sse) {
        let key = ObjectKey::generate();
        let sealed = seal(
            customer.as_kek(),
            &key,
            &context(bucket, object, SseKind::Customer),
        );
        let salt = CustomerKey::new_salt();
        let record = Sse::Customer {
            sealed,
            salt: BASE64.encode(salt),
            fingerprint: BASE64.encode(customer.fingerprint(&salt)),
        };
        (key, record)
    }

    /// A new SSE-S3 object key, asking `kms` for the SSE-S3 KEK.
    pub async fn new_s3(
        kms: &dyn KeyService,
        bucket: &str,
        object: &str,
    ) -> Result<(ObjectKey, Sse), EncryptionError> {
        let kek = kms.sse_s3_kek().await?;
        Ok(Self::seal_s3(&kek, bucket, object))
    }

    /// A new SSE-KMS object key under a data key of its own, from `key_id` or else the
    /// service's default key; `context` as [`kms_context`] builds it.
    pub async fn new_kms(
        kms: &dyn KeyService,
        key_id: Option<&str>,
        context: EncryptionContext,
        bucket: &str,
        object: &str,
    ) -> Result<(ObjectKey, Sse), EncryptionError> {
        let key_id = match key_id {
            Some(key_id) => key_id.to_owned(),
            None => kms.default_key().ok_or(EncryptionError::NoKmsKey)?,
        };
        let data_key = kms.generate_data_key(&key_id, &context).await?;
        Ok(Self::seal_kms(
            &data_key, &key_id, context, false, bucket, object,
        ))
    }

    /// Reopens the object key of the version stored as `bucket`/`object` with this record.
    /// `customer` is the request's SSE-C key, required for (and only for) SSE-C objects.
    pub async fn open(
        &self,
        kms: &dyn KeyService,
        customer: Option<&CustomerKey>,
        bucket: &str,
        object: &str,
    ) -> Result<ObjectKey, EncryptionError> {
        let context = context(bucket, object, self.kind());
        match (self, customer) {
            (Sse::Customer { .. }, Some(customer)) => self.open_customer(customer, bucket, object),
            (Sse::Customer { .. }, None) => Err(EncryptionError::CustomerKeyRequired),
            (_, Some(_)) => Err(EncryptionError::CustomerKeyNotApplicable),
            (Sse::S3 { sealed } | Sse::Kms { sealed, .. }, None) => {
                unseal(&*self.key_encryption_key(kms).await?, sealed, &context)
            }
        }
    }

    /// The key that seals an SSE-S3 or SSE-KMS object key: the deployment's SSE-S3 KEK, or
    /// the version's data key as the key service unseals it.
    async fn key_encryption_key(
        &self,
        kms: &dyn KeyService,
    ) -> Result<Zeroizing<[u8; 32]>, EncryptionError> {
        match self {
            Sse::S3 { .. } => Ok(kms.sse_s3_kek().await?),
            Sse::Kms {
                key_id,
                sealed_data_key,
                context,
                ..
            } => {
                let sealed_data_key = BASE64
                    .decode(sealed_data_key)
                    .map_err(|_| EncryptionError::Malformed("sealed data key".into()))?;
                Ok(kms
                    .decrypt_data_key(key_id, &sealed_data_key, context)
                    .await?)
            }
            Sse::Customer { .. } => Err(EncryptionError::CustomerKeyRequired),
        }
    }

    /// Reopens an SSE-C object's key with the request's key, without a key service.
    /// A wrong key is [`EncryptionError::CustomerKeyMismatch`] (checked on the fingerprint
    /// first, so it is told apart from a damaged record, which is `Unseal`).
    pub fn open_customer(
        &self,
        customer: &CustomerKey,
        bucket: &str,
        object: &str,
    ) -> Result<ObjectKey, EncryptionError> {
        let Sse::Customer {
            sealed,
            salt,
            fingerprint,
        } = self
        else {
            return Err(EncryptionError::CustomerKeyNotApplicable);
        };
        let salt: [u8; 32] = BASE64
            .decode(salt)
            .ok()
            .and_then(|salt| salt.try_into().ok())
            .ok_or_else(|| EncryptionError::Malformed("SSE-C salt".into()))?;
        let fingerprint = BASE64
            .decode(fingerprint)
            .map_err(|_| EncryptionError::Malformed("SSE-C fingerprint".into()))?;
        if !customer.matches(&salt, &fingerprint) {
            return Err(EncryptionError::CustomerKeyMismatch);
        }
        unseal(
            customer.as_kek(),
            sealed,
            &context(bucket, object, SseKind::Customer),
        )
    }
}

/// A name an object key is sealed for: `(bucket, object)`.
pub type SealedFor<'a> = (&'a str, &'a str);

impl Sse {
    /// The same object key, sealed for the version's new name `to` (a rename): opened as
    /// sealed for `from`, then sealed again under the same key-encryption key. The data
    /// and everything else in the record stay as they are; an SSE-KMS data key keeps its
    /// encryption context, which its sealed form needs. SSE-C versions go through
    /// [`Sse::rebind_customer`].
    pub async fn rebind(
        &self,
        kms: &dyn KeyService,
        from: SealedFor<'_>,
        to: SealedFor<'_>,
    ) -> Result<Sse, EncryptionError> {
        let kek = self.key_encryption_key(kms).await?;
        let mut rebound = self.clone();
        if let Sse::S3 { sealed } | Sse::Kms { sealed, .. } = &mut rebound {
            let key = unseal(&kek, sealed, &context(from.0, from.1, self.kind()))?;
            *sealed = seal(&kek, &key, &context(to.0, to.1, self.kind()));
        }
        Ok(rebound)
    }

    /// [`Sse::rebind`] of an SSE-C version, with the client's key (its fingerprint is kept).
    pub fn rebind_customer(
        &self,
        customer: &CustomerKey,
        from: SealedFor<'_>,
        to: SealedFor<'_>,
    ) -> Result<Sse, EncryptionError> {
        let key = self.open_customer(customer, from.0, from.1)?;
        let mut rebound = self.clone();
        if let Sse::Customer { sealed, .. } = &mut rebound {
            *sealed = seal(
                customer.as_kek(),
                &key,
                &context(to.0, to.1, SseKind::Customer),
            );
        }
        Ok(rebound)
    }
}

fn context<'a>(bucket: &'a str, object: &'a str, kind: SseKind) -> SealContext<'a> {
    SealContext {
        bucket,
        object,
        kind,
    }
}

/// The encryption context of an SSE-KMS object's data key: the client's context (S3's
/// `x-amz-server-side-encryption-context`, decoded) plus, as S3 does, `aws:s3:arn` naming the
/// object — or the bucket alone for a Bucket Key — unless the client set it.
pub fn kms_context(
    bucket: &str,
    object: Option<&str>,
    mut requested: EncryptionContext,
) -> EncryptionContext {
    let arn = match object {
        Some(object) => format!("arn:aws:s3:::{bucket}/{object}"),
        None => format!("arn:aws:s3:::{bucket}"),
    };
    requested.entry("aws:s3:arn".to_owned()).or_insert(arn);
    requested
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
