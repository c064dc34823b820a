//! The package format: how an object's plaintext becomes the bytes that are erasure-coded.
//!
//! Plaintext is cut into packages of [`PACKAGE_SIZE`] bytes (the last one may be shorter), and
//! each package is sealed on its own with AES-256-GCM, so a range read decrypts and verifies
//! only the packages it touches. A sealed package is the ciphertext followed by its 16-byte
//! tag; sealed packages are simply concatenated, with no header.
//!
//! The 96-bit nonce of package `i` is `i` as 8 big-endian bytes, then one byte that is 1 on
//! the object's last package and 0 on every other, then 3 zero bytes. It never repeats under
//! one key because every object (and every part of a multipart upload) has its own
//! [`PackageKey`], derived from a fresh random object key. Binding the sequence number detects
//! reordered or dropped packages; the final flag detects truncation at a package boundary and
//! appended packages; the per-object key makes a package copied from another object fail.
//!
//! Empty plaintext yields exactly one final, empty package (16 bytes: the tag alone), so even
//! an empty object is authenticated and cannot be confused with a truncated one. When the
//! plaintext length is a multiple of [`PACKAGE_SIZE`], the last full package is the final one
//! (no empty package follows).

use std::io;

use bytes::{Buf, Bytes, BytesMut};
use futures::StreamExt;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use zeroize::Zeroizing;

use crate::body::ByteStream;

/// Plaintext bytes per package (the last package of an object may hold fewer).
pub const PACKAGE_SIZE: usize = 64 * 1024;
/// The AES-GCM tag that follows each package's ciphertext.
pub const TAG_LEN: usize = 16;
/// Bytes of one full sealed package.
pub const SEALED_PACKAGE_SIZE: usize = PACKAGE_SIZE + TAG_LEN;

const PACKAGE: u64 = PACKAGE_SIZE as u64;
const SEALED_PACKAGE: u64 = SEALED_PACKAGE_SIZE as u64;
const TAG: u64 = TAG_LEN as u64;

/// The AES-256-GCM key that seals the packages of one object or of one part.
///
/// Obtained from [`ObjectKey::object_package_key`](super::ObjectKey::object_package_key) or
/// [`ObjectKey::part_package_key`](super::ObjectKey::part_package_key); never stored.
#[derive(Clone)]
pub struct PackageKey(Zeroizing<[u8; 32]>);

impl PackageKey {
    pub(crate) fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(Zeroizing::new(bytes))
    }

    #[cfg(test)]
    pub(crate) fn bytes(&self) -> [u8; 32] {
        *self.0
    }

    /// ring's AES-256-GCM: several times faster than a portable implementation, which
    /// would make encryption the slowest stage of a PUT or GET.
    fn cipher(&self) -> LessSafeKey {
        let key = UnboundKey::new(&AES_256_GCM, &self.0[..]).expect("AES-256 takes 32 bytes");
        LessSafeKey::new(key)
    }
}

impl std::fmt::Debug for PackageKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PackageKey(<redacted>)")
    }
}

/// The nonce of package `sequence`; `last` marks the object's final package.
fn package_nonce(sequence: u64, last: bool) -> Nonce {
    let mut nonce = [0u8; 12];
    nonce[..8].copy_from_slice(&sequence.to_be_bytes());
    nonce[8] = u8::from(last);
    // Unique per key: each package key seals one stream, numbered from 0.
    Nonce::assume_unique_for_key(nonce)
}

/// Number of packages of `plain_len` bytes of plaintext (at least one: an empty plaintext
/// still has its final, empty package).
pub fn package_count(plain_len: u64) -> u64 {
    plain_len.div_ceil(PACKAGE).max(1)
}

/// Length of the sealed form of `plain_len` plaintext bytes: what is erasure-coded and stored.
pub fn sealed_len(plain_len: u64) -> u64 {
    plain_len.saturating_add(package_count(plain_len).saturating_mul(TAG))
}

/// Plaintext length of a sealed stream of `sealed_len` bytes, or `None` if no plaintext
/// seals to that length (so the stored size and the package format disagree).
pub fn plain_len(sealed_len: u64) -> Option<u64> {
    let full = sealed_len / SEALED_PACKAGE;
    let rest = sealed_len % SEALED_PACKAGE;
    match rest {
        // Only whole full packages: the last one was final.
        0 if full > 0 => Some(full * PACKAGE),
        // An empty final package exists only for an empty plaintext.
        r if r == TAG && full == 0 => Some(0),
        r if r > TAG => Some(full * PACKAGE + r - TAG),
        _ => None,
    }
}

/// Plaintext length of package `index` of an object of `total_plain` bytes.
fn package_plain_len(index: u64, total_plain: u64) -> u64 {
    total_plain
        .saturating_sub(index.saturating_mul(PACKAGE))
        .min(PACKAGE)
}

/// The sealed bytes a plaintext range needs, and how to cut the range out of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealedRange {
    /// Offset of the first needed package in the sealed stream.
    pub sealed_offset: u64,
    /// Length of the needed packages in the sealed stream (whole packages).
    pub sealed_len: u64,
    /// Sequence number of the first needed package.
    pub first_package: u64,
    /// Plaintext bytes to drop from the start of the first decrypted package.
    pub skip: usize,
}

/// The whole packages covering `plain_len` bytes of plaintext from `plain_offset`, in an
/// object of `total_plain` bytes.
///
/// The range is clamped to the object (a range past the end covers nothing), so a client's
/// range can never make it panic; the caller still validates ranges for its 416 answers.
/// An empty object's range is its one empty package, so reading it still authenticates it;
/// any other empty range covers no package.
pub fn sealed_range(plain_offset: u64, plain_len: u64, total_plain: u64) -> SealedRange {
    let offset = plain_offset.min(total_plain);
    let len = plain_len.min(total_plain - offset);
    let first_package = offset / PACKAGE;
    let sealed_offset = first_package.saturating_mul(SEALED_PACKAGE);
    if total_plain == 0 {
        return SealedRange {
            sealed_offset: 0,
            sealed_len: TAG,
            first_package: 0,
            skip: 0,
        };
    }
    if len == 0 {
        return SealedRange {
            sealed_offset: sealed_offset.min(sealed_len(total_plain)),
            sealed_len: 0,
            first_package,
            skip: 0,
        };
    }
    let last_package = (offset + len - 1) / PACKAGE;
    let sealed_end = if last_package + 1 == package_count(total_plain) {
        sealed_len(total_plain)
    } else {
        (last_package + 1) * SEALED_PACKAGE
    };
    SealedRange {
        sealed_offset,
        sealed_len: sealed_end - sealed_offset,
        first_package,
        // Less than PACKAGE_SIZE, so it fits in usize.
        skip: (offset - first_package * PACKAGE) as usize,
    }
}

fn invalid_data(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Seals a plaintext stream into packages.
///
/// Memory is bounded: one package being filled, plus the input chunk being consumed (which
/// the upstream already holds). A full package is sealed only once a further plaintext byte
/// has been seen, so the last package gets the final flag without knowing the length in
/// advance. Each poll yields one sealed package; an upstream error is passed on and ends the
/// stream.
pub fn encrypt_stream(key: &PackageKey, plain: ByteStream) -> ByteStream {
    let encryptor = Encryptor {
        cipher: key.cipher(),
        plain,
        input: Bytes::new(),
        pending: BytesMut::with_capacity(SEALED_PACKAGE_SIZE),
        sequence: 0,
        done: false,
    };
    Box::pin(futures::stream::unfold(
        encryptor,
        |mut encryptor| async move {
            let item = encryptor.next_package().await?;
            Some((item, encryptor))
        },
    ))
}

struct Encryptor {
    cipher: LessSafeKey,
    plain: ByteStream,
    /// The rest of the current input chunk.
    input: Bytes,
    /// Plaintext of the package being filled; sealed in place.
    pending: BytesMut,
    sequence: u64,
    done: bool,
}

impl Encryptor {
    async fn next_package(&mut self) -> Option<io::Result<Bytes>> {
        if self.done {
            return None;
        }
        loop {
            let wanted = PACKAGE_SIZE - self.pending.len();
            let taken = self.input.split_to(wanted.min(self.input.len()));
            self.pending.extend_from_slice(&taken);
            // A full package followed by more plaintext cannot be the last one.
            if self.pending.len() == PACKAGE_SIZE && !self.input.is_empty() {
                return Some(self.seal(false));
            }
            match self.plain.next().await {
                Some(Ok(chunk)) => self.input = chunk,
                Some(Err(error)) => {
                    self.done = true;
                    return Some(Err(error));
                }
                None => {
                    self.done = true;
                    return Some(self.seal(true));
                }
            }
        }
    }

    fn seal(&mut self, last: bool) -> io::Result<Bytes> {
        let mut package = std::mem::replace(
            &mut self.pending,
            BytesMut::with_capacity(SEALED_PACKAGE_SIZE),
        );
        let nonce = package_nonce(self.sequence, last);
        let tag = self
            .cipher
            .seal_in_place_separate_tag(nonce, Aad::empty(), &mut package[..])
            .map_err(|_| io::Error::other("package encryption failed"))?;
        package.extend_from_slice(tag.as_ref());
        self.sequence = self.sequence.checked_add(1).ok_or_else(|| {
            self.done = true;
            io::Error::other("too many packages for one key")
        })?;
        Ok(package.freeze())
    }
}

/// Decrypts the packages of `range` (from [`sealed_range`]) read from `sealed`, which must
/// yield exactly the `range.sealed_len` bytes at `range.sealed_offset` of the object's sealed
/// stream, and yields the `take` plaintext bytes that follow `range.skip`.
///
/// A package that fails authentication (tampered, from another object or part, out of
/// order, wrongly marked final or not), a sealed stream that ends early or runs on, and a
/// range that does not fit `total_plain` all end the stream with an
/// [`io::ErrorKind::InvalidData`] error; no byte of a package is yielded before its tag has
/// been verified. A `take` larger than the range holds ends it with
/// [`io::ErrorKind::UnexpectedEof`] after the bytes that exist.
pub fn decrypt_stream(
    key: &PackageKey,
    range: &SealedRange,
    total_plain: u64,
    sealed: ByteStream,
    take: u64,
) -> ByteStream {
    let decryptor = Decryptor {
        cipher: key.cipher(),
        sealed,
        input: Bytes::new(),
        next_package: range.first_package,
        last_package: package_count(total_plain) - 1,
        remaining_sealed: range.sealed_len,
        skip: range.skip,
        remaining_take: take,
        total_plain,
        done: false,
    };
    let misplaced = range.sealed_offset != range.first_package.saturating_mul(SEALED_PACKAGE)
        || range.skip >= PACKAGE_SIZE
        || range.sealed_offset.saturating_add(range.sealed_len) > sealed_len(total_plain);
    if misplaced {
        let error = invalid_data(format!(
            "sealed range {range:?} does not fit an object of {total_plain} bytes"
        ));
        return Box::pin(futures::stream::iter([Err(error)]));
    }
    Box::pin(futures::stream::unfold(
        decryptor,
        |mut decryptor| async move {
            let item = decryptor.next_plaintext().await?;
            Some((item, decryptor))
        },
    ))
}

struct Decryptor {
    cipher: LessSafeKey,
    sealed: ByteStream,
    /// The rest of the current sealed chunk.
    input: Bytes,
    next_package: u64,
    /// Sequence number of the object's final package.
    last_package: u64,
    /// Sealed bytes of the range not yet consumed.
    remaining_sealed: u64,
    skip: usize,
    remaining_take: u64,
    total_plain: u64,
    done: bool,
}

impl Decryptor {
    async fn next_plaintext(&mut self) -> Option<io::Result<Bytes>> {
        if self.done {
            return None;
        }
        let result = self.advance().await;
        if !matches!(result, Some(Ok(_))) {
            self.done = true;
        }
        result
    }

    /// The next non-empty piece of requested plaintext, `None` at a verified end.
    async fn advance(&mut self) -> Option<io::Result<Bytes>> {
        while self.remaining_sealed > 0 {
            let mut plain = match self.open_next_package().await {
                Ok(plain) => plain,
                Err(error) => return Some(Err(error)),
            };
            let skipped = self.skip.min(plain.len());
            plain.advance(skipped);
            self.skip -= skipped;
            if plain.len() as u64 > self.remaining_take {
                // Less than a package, so it fits in usize.
                plain.truncate(self.remaining_take as usize);
            }
            self.remaining_take -= plain.len() as u64;
            if !plain.is_empty() {
                return Some(Ok(plain));
            }
        }
        if let Err(error) = self.expect_end().await {
            return Some(Err(error));
        }
        if self.remaining_take > 0 {
            return Some(Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the sealed range holds {} fewer plaintext bytes than requested",
                    self.remaining_take
                ),
            )));
        }
        None
    }

    /// Reads, authenticates and decrypts the next package of the range.
    async fn open_next_package(&mut self) -> io::Result<Bytes> {
        let sequence = self.next_package;
        if sequence > self.last_package {
            return Err(invalid_data(format!(
                "sealed range runs past the final package {}",
                self.last_package
            )));
        }
        let sealed_size = package_plain_len(sequence, self.total_plain) + TAG;
        if sealed_size > self.remaining_sealed {
            return Err(invalid_data(format!(
                "sealed range ends inside package {sequence}"
            )));
        }
        // At most one sealed package, so it fits in usize.
        let mut package = self.read_exact(sealed_size as usize).await?;
        let body_len = package.len() - TAG_LEN;
        let nonce = package_nonce(sequence, sequence == self.last_package);
        self.cipher
            .open_in_place(nonce, Aad::empty(), &mut package[..])
            .map_err(|_| invalid_data(format!("package {sequence} failed authentication")))?;
        package.truncate(body_len);
        self.remaining_sealed -= sealed_size;
        self.next_package += 1;
        Ok(package.freeze())
    }

    async fn read_exact(&mut self, len: usize) -> io::Result<BytesMut> {
        let mut package = BytesMut::with_capacity(len);
        while package.len() < len {
            if self.input.is_empty() {
                match self.sealed.next().await {
                    Some(Ok(chunk)) => self.input = chunk,
                    Some(Err(error)) => return Err(error),
                    None => {
                        return Err(invalid_data(format!(
                            "sealed stream truncated in package {}",
                            self.next_package
                        )))
                    }
                }
                continue;
            }
            let taken = self
                .input
                .split_to((len - package.len()).min(self.input.len()));
            package.extend_from_slice(&taken);
        }
        Ok(package)
    }

    /// Checks that the sealed stream holds nothing past the range.
    async fn expect_end(&mut self) -> io::Result<()> {
        loop {
            if !self.input.is_empty() {
                return Err(invalid_data(
                    "sealed stream runs past the end of the range".to_owned(),
                ));
            }
            match self.sealed.next().await {
                Some(Ok(chunk)) => self.input = chunk,
                Some(Err(error)) => return Err(error),
                None => return Ok(()),
            }
        }
    }
}

#[cfg(test)]
#[path = "package_tests.rs"]
mod tests;
