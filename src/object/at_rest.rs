//! Encryption at rest in the object layer: the key service it asks for object keys, the
//! encryption a write asks for (or its bucket's default), and the sealed streams on either
//! side of the erasure sets. The sets, healing, scrubbing and tiers only ever see sealed
//! bytes; a version's `size` counts them.

use std::sync::Arc;

use super::record::{DefaultEncryption, SseAlgorithm, SINGLE_PUT_FILE};
use super::{BucketRecord, ObjectError, ObjectKey, ObjectRecord, ObjectStore};
use crate::body::ByteStream;
use crate::encryption::{
    decrypt_stream, kms_context, plain_len, sealed_range, CustomerKey, EncryptionError,
    ObjectKey as DataKey, PackageKey, SealedFor, SealedRange, Sse,
};
use crate::kms::{EncryptionContext, KeyService};

/// The encryption a write asks for.
#[derive(Clone)]
pub enum Encryption {
    /// SSE-S3 (`AES256`).
    S3,
    /// SSE-KMS with this key (the service's default when `None`).
    Kms {
        key_id: Option<String>,
        context: EncryptionContext,
        bucket_key: bool,
    },
    /// SSE-C with the client's key.
    Customer(Arc<CustomerKey>),
}

impl std::fmt::Debug for Encryption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Encryption::S3 => f.write_str("S3"),
            Encryption::Kms { key_id, .. } => write!(f, "Kms({key_id:?})"),
            Encryption::Customer(_) => f.write_str("Customer(..)"),
        }
    }
}

impl Encryption {
    /// What a bucket's default encryption gives an upload that asks for none.
    pub fn default_of(default: &DefaultEncryption) -> Self {
        match default.algorithm {
            SseAlgorithm::Aes256 => Encryption::S3,
            SseAlgorithm::AwsKms => Encryption::Kms {
                key_id: default.kms_key_id.clone(),
                context: EncryptionContext::new(),
                bucket_key: default.bucket_key_enabled,
            },
        }
    }
}

/// A version's object key, ready to seal its data, and the record that reopens it.
pub(crate) struct NewKey {
    pub key: DataKey,
    pub sse: Sse,
}

impl ObjectStore {
    /// Gives the store its key service; without one, SSE-S3 and SSE-KMS are refused.
    pub fn set_key_service(&self, kms: Arc<dyn KeyService>) {
        self.kms.store(Some(Arc::new(kms)));
    }

    /// Says a key service is configured but not open yet (its catalog could not be read):
    /// until it is, SSE-S3 and SSE-KMS are unavailable (503) rather than refused.
    pub fn expect_key_service(&self) {
        self.kms_expected
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn key_service(&self) -> Option<Arc<dyn KeyService>> {
        self.kms.load_full().map(|kms| Arc::clone(&*kms))
    }

    fn require_key_service(&self) -> Result<Arc<dyn KeyService>, ObjectError> {
        match self.key_service() {
            Some(kms) => Ok(kms),
            None if self.kms_expected.load(std::sync::atomic::Ordering::Relaxed) => {
                Err(ObjectError::KmsUnavailable)
            }
            None => Err(ObjectError::KmsNotConfigured),
        }
    }

    /// The encryption of a new version of `key`: what the request asked for, else the
    /// bucket's default, else none.
    pub(crate) async fn new_key(
        &self,
        bucket: &BucketRecord,
        key: &ObjectKey,
        asked: Option<&Encryption>,
    ) -> Result<Option<NewKey>, ObjectError> {
        let default = bucket
            .settings
            .encryption
            .as_ref()
            .map(Encryption::default_of);
        let Some(encryption) = asked.or(default.as_ref()) else {
            return Ok(None);
        };
        let (name, object) = (bucket.name.as_str(), key.as_str());
        let (key, sse) = match encryption {
            Encryption::Customer(customer) => Sse::seal_customer(customer, name, object),
            Encryption::S3 => {
                let kms = self.require_key_service()?;
                Sse::new_s3(kms.as_ref(), name, object).await?
            }
            Encryption::Kms {
                key_id,
                context,
                bucket_key,
            } => {
                let kms = self.require_key_service()?;
                let context = kms_context(name, Some(object), context.clone());
                let (key, mut sse) =
                    Sse::new_kms(kms.as_ref(), key_id.as_deref(), context, name, object).await?;
                if let Sse::Kms { bucket_key: b, .. } = &mut sse {
                    *b = *bucket_key;
                }
                (key, sse)
            }
        };
        Ok(Some(NewKey { key, sse }))
    }

    /// Reopens the object key of an encrypted version, with the request's SSE-C key for an
    /// SSE-C version; `Ok(None)` for a version stored in the clear (then a customer key is
    /// refused, as S3 refuses it).
    pub(crate) async fn open_key(
        &self,
        bucket: &str,
        key: &str,
        record: &ObjectRecord,
        customer: Option<&CustomerKey>,
    ) -> Result<Option<DataKey>, ObjectError> {
        self.open_sealed(bucket, key, record.sse.as_ref(), customer)
            .await
    }

    /// Reopens the object key `sse` seals (a version's, or an upload's for its parts).
    pub(crate) async fn open_sealed(
        &self,
        bucket: &str,
        key: &str,
        sse: Option<&Sse>,
        customer: Option<&CustomerKey>,
    ) -> Result<Option<DataKey>, ObjectError> {
        let Some(sse) = sse else {
            return match customer {
                Some(_) => Err(EncryptionError::CustomerKeyNotApplicable.into()),
                None => Ok(None),
            };
        };
        let opened = match sse {
            Sse::Customer { .. } => match customer {
                Some(customer) => sse.open_customer(customer, bucket, key)?,
                None => return Err(EncryptionError::CustomerKeyRequired.into()),
            },
            _ => {
                let kms = self.require_key_service()?;
                sse.open(kms.as_ref(), customer, bucket, key).await?
            }
        };
        Ok(Some(opened))
    }

    /// A version's encryption record with its object key sealed for the name `to` instead
    /// of `from` (a rename): the key is re-wrapped, the data never re-encrypted. The SSE-C
    /// key of an SSE-C version is required, and refused for any other, as on a read.
    pub(crate) async fn rebind_key(
        &self,
        sse: Option<&Sse>,
        customer: Option<&CustomerKey>,
        from: SealedFor<'_>,
        to: SealedFor<'_>,
    ) -> Result<Option<Sse>, ObjectError> {
        let rebound = match (sse, customer) {
            (None, None) => return Ok(None),
            (None, Some(_)) => return Err(EncryptionError::CustomerKeyNotApplicable.into()),
            (Some(sse @ Sse::Customer { .. }), Some(customer)) => {
                sse.rebind_customer(customer, from, to)?
            }
            (Some(Sse::Customer { .. }), None) => {
                return Err(EncryptionError::CustomerKeyRequired.into())
            }
            (Some(_), Some(_)) => return Err(EncryptionError::CustomerKeyNotApplicable.into()),
            (Some(sse), None) => {
                let kms = self.require_key_service()?;
                sse.rebind(kms.as_ref(), from, to).await?
            }
        };
        Ok(Some(rebound))
    }
}

/// Whether a request may see a version's metadata with the SSE-C key it gave (or none): a
/// HEAD needs the key of an SSE-C version, and no key for any other, as on S3.
pub fn check_customer_key(
    bucket: &str,
    key: &str,
    record: &ObjectRecord,
    customer: Option<&CustomerKey>,
) -> Result<(), ObjectError> {
    match (&record.sse, customer) {
        (Some(sse @ Sse::Customer { .. }), Some(customer)) => {
            sse.open_customer(customer, bucket, key)?;
            Ok(())
        }
        (Some(Sse::Customer { .. }), None) => Err(EncryptionError::CustomerKeyRequired.into()),
        (_, Some(_)) => Err(EncryptionError::CustomerKeyNotApplicable.into()),
        (_, None) => Ok(()),
    }
}

/// The ETag of data written under `sse` whose plaintext MD5 is `md5`: that MD5 in the clear
/// and for SSE-S3, as on S3; for SSE-KMS and SSE-C, a value that says nothing of the
/// plaintext.
pub(crate) fn etag_of(sse: Option<&Sse>, md5: &[u8; 16]) -> String {
    match sse {
        None | Some(Sse::S3 { .. }) => hex::encode(md5),
        Some(_) => hex::encode(rand::random::<[u8; 16]>()),
    }
}

/// A stretch of a version's stored bytes to read, and how to open it when it is sealed.
pub(crate) struct Piece {
    /// Stored bytes `start..end`, counted over the whole version.
    pub stored: (u64, u64),
    open: Option<Opening>,
}

struct Opening {
    key: PackageKey,
    range: SealedRange,
    plain_total: u64,
    take: u64,
}

impl Piece {
    /// Bytes stored in the clear: read as they are.
    pub fn clear(start: u64, end: u64) -> Self {
        Piece {
            stored: (start, end),
            open: None,
        }
    }

    /// What a client reads of the stored bytes of this piece.
    pub fn open(self, stored: ByteStream) -> ByteStream {
        match self.open {
            None => stored,
            Some(o) => decrypt_stream(&o.key, &o.range, o.plain_total, stored, o.take),
        }
    }
}

/// The pieces that hold plaintext bytes `start..end` of an encrypted version: a single PUT
/// is one package stream under the object's package key; each part of a multipart upload
/// (or segment of an append) is one of its own, under a key named by the part's file
/// (unique to each upload of it, so a part sent twice never reuses a key). An appended
/// object keeps its first PUT's data as its first part, still under the object's key.
pub(crate) fn pieces(record: &ObjectRecord, key: &DataKey, start: u64, end: u64) -> Vec<Piece> {
    if !record.is_multipart() {
        let plain_total = record.content_length();
        let range = sealed_range(start, end - start, plain_total);
        let stored = (range.sealed_offset, range.sealed_offset + range.sealed_len);
        let open = Opening {
            key: key.object_package_key(),
            range,
            plain_total,
            take: end - start,
        };
        return vec![Piece {
            stored,
            open: Some(open),
        }];
    }
    let mut pieces = Vec::new();
    let (mut plain_start, mut stored_start) = (0u64, 0u64);
    for part in &record.parts {
        let plain_total = plain_len(part.size).unwrap_or(0);
        let plain_end = plain_start + plain_total;
        if plain_total > 0 && plain_end > start && plain_start < end {
            let from = start.max(plain_start) - plain_start;
            let to = end.min(plain_end) - plain_start;
            let range = sealed_range(from, to - from, plain_total);
            let offset = stored_start + range.sealed_offset;
            pieces.push(Piece {
                stored: (offset, offset + range.sealed_len),
                open: Some(Opening {
                    key: match part.file.as_str() {
                        SINGLE_PUT_FILE => key.object_package_key(),
                        file => key.part_package_key(file),
                    },
                    range,
                    plain_total,
                    take: to - from,
                }),
            });
        }
        plain_start = plain_end;
        stored_start += part.size;
    }
    pieces
}

impl From<EncryptionError> for ObjectError {
    fn from(err: EncryptionError) -> Self {
        ObjectError::Encryption(err)
    }
}
