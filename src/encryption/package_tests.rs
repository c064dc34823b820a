use std::io;

use bytes::Bytes;
use futures::executor::block_on;
use futures::StreamExt;
use proptest::prelude::*;
use rand::{Rng, RngCore, SeedableRng};

use super::*;
use crate::body::ByteStream;
use crate::encryption::ObjectKey;

const P: usize = PACKAGE_SIZE;

fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut data = vec![0u8; len];
    rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut data);
    data
}

/// `data` cut into chunks of the given sizes, cycling through them (0 gives empty chunks).
fn chunked(data: &[u8], sizes: &[usize]) -> ByteStream {
    let mut chunks = Vec::new();
    let mut offset = 0;
    for size in sizes.iter().cycle() {
        if offset >= data.len() {
            break;
        }
        let end = (offset + size).min(data.len());
        chunks.push(Ok(Bytes::copy_from_slice(&data[offset..end])));
        offset = end;
    }
    Box::pin(futures::stream::iter(chunks))
}

fn whole(data: Vec<u8>) -> ByteStream {
    Box::pin(futures::stream::iter([Ok(Bytes::from(data))]))
}

/// Everything a stream yields, or its first error.
fn collect(stream: ByteStream) -> io::Result<Vec<u8>> {
    block_on(async {
        let mut stream = stream;
        let mut out = Vec::new();
        while let Some(chunk) = stream.next().await {
            out.extend_from_slice(&chunk?);
        }
        Ok(out)
    })
}

fn key() -> PackageKey {
    ObjectKey::generate().object_package_key()
}

fn encrypt(key: &PackageKey, plain: &[u8], sizes: &[usize]) -> Vec<u8> {
    collect(encrypt_stream(key, chunked(plain, sizes))).expect("encrypts")
}

fn decrypt_all(key: &PackageKey, sealed: Vec<u8>, total_plain: u64) -> io::Result<Vec<u8>> {
    let range = sealed_range(0, total_plain, total_plain);
    collect(decrypt_stream(
        key,
        &range,
        total_plain,
        whole(sealed),
        total_plain,
    ))
}

/// Reads `len` bytes from `offset` the way a GET would: only the range's sealed bytes.
fn decrypt_range(
    key: &PackageKey,
    sealed: &[u8],
    total: u64,
    offset: u64,
    len: u64,
    sizes: &[usize],
) -> io::Result<Vec<u8>> {
    let range = sealed_range(offset, len, total);
    let start = range.sealed_offset as usize;
    let end = start + range.sealed_len as usize;
    let take = len.min(total.saturating_sub(offset));
    collect(decrypt_stream(
        key,
        &range,
        total,
        chunked(&sealed[start..end], sizes),
        take,
    ))
}

fn assert_invalid_data(result: io::Result<Vec<u8>>, what: &str) {
    match result {
        Err(error) => assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{what}: {error}"),
        Ok(bytes) => panic!("{what}: decrypted {} bytes instead of failing", bytes.len()),
    }
}

const LENGTHS: [usize; 11] = [
    0,
    1,
    100,
    P - 1,
    P,
    P + 1,
    2 * P - 1,
    2 * P,
    2 * P + 1,
    3 * P + 12_345,
    10 * P,
];

#[test]
fn lengths_convert_both_ways() {
    assert_eq!(sealed_len(0), TAG_LEN as u64);
    assert_eq!(sealed_len(1), 1 + TAG_LEN as u64);
    assert_eq!(sealed_len(P as u64), SEALED_PACKAGE_SIZE as u64);
    assert_eq!(sealed_len(P as u64 + 1), SEALED_PACKAGE_SIZE as u64 + 17);
    for plain in (0..4 * P as u64 + 40)
        .step_by(7)
        .chain([u64::from(u32::MAX) * 3])
    {
        assert_eq!(plain_len(sealed_len(plain)), Some(plain), "{plain}");
    }
    for impossible in [
        0,
        1,
        15,
        SEALED_PACKAGE_SIZE as u64 + 1,
        SEALED_PACKAGE_SIZE as u64 + 16,
        2 * SEALED_PACKAGE_SIZE as u64 + 15,
    ] {
        assert_eq!(plain_len(impossible), None, "{impossible}");
    }
    // No panic at the extremes.
    let _ = sealed_len(u64::MAX);
    let _ = plain_len(u64::MAX);
    let _ = sealed_range(u64::MAX, u64::MAX, u64::MAX);
}

#[test]
fn encrypt_and_decrypt_round_trip_for_every_chunking() {
    let key = key();
    let chunkings: [&[usize]; 7] = [
        &[1],
        &[P],
        &[10 << 20],
        &[P - 1, P + 1],
        &[0, 3, 0, 70_000, 0],
        &[17, 4096, 100_000],
        &[2 * P],
    ];
    for len in LENGTHS {
        let plain = random_bytes(len, len as u64);
        for sizes in chunkings {
            // One-byte chunks over megabytes are slow in debug builds; shorter inputs cover them.
            if sizes == [1] && len > 3 * P {
                continue;
            }
            let sealed = encrypt(&key, &plain, sizes);
            assert_eq!(
                sealed.len() as u64,
                sealed_len(len as u64),
                "{len} {sizes:?}"
            );
            if len >= 16 {
                assert_ne!(&sealed[..16], &plain[..16], "ciphertext differs");
            }
            let opened = decrypt_all(&key, sealed.clone(), len as u64).expect("decrypts");
            assert!(opened == plain, "{len} {sizes:?}");
            // Decrypting from arbitrary sealed chunking too.
            let opened = decrypt_range(&key, &sealed, len as u64, 0, len as u64, sizes);
            assert!(opened.expect("decrypts") == plain, "{len} {sizes:?}");
        }
    }
}

#[test]
fn encryption_yields_one_package_at_a_time() {
    let key = key();
    for (len, sizes) in [(3 * P + 5, vec![1usize]), (5 * P, vec![10 << 20])] {
        let plain = random_bytes(len, 1);
        let packages: Vec<Bytes> = block_on(
            encrypt_stream(&key, chunked(&plain, &sizes))
                .map(|package| package.expect("encrypts"))
                .collect(),
        );
        assert_eq!(packages.len() as u64, package_count(len as u64));
        let (last, full) = packages.split_last().expect("one package at least");
        assert!(full.iter().all(|p| p.len() == SEALED_PACKAGE_SIZE));
        assert_eq!(last.len(), (len - full.len() * P) + TAG_LEN);
    }
}

#[test]
fn encryption_does_not_wait_for_the_end_of_its_input() {
    // An endless input: a buffering encryptor would never yield.
    let endless: ByteStream = Box::pin(futures::stream::repeat_with(|| {
        Ok(Bytes::from_static(&[5u8; 1000]))
    }));
    let packages: Vec<io::Result<Bytes>> =
        block_on(encrypt_stream(&key(), endless).take(3).collect());
    assert_eq!(packages.len(), 3);
    assert!(packages
        .iter()
        .all(|p| p.as_ref().map(Bytes::len).ok() == Some(SEALED_PACKAGE_SIZE)));
}

#[test]
fn upstream_errors_end_both_streams() {
    let failing: ByteStream = Box::pin(futures::stream::iter([
        Ok(Bytes::from(vec![1u8; P + 10])),
        Err(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "client went away",
        )),
        Ok(Bytes::from(vec![1u8; 10])),
    ]));
    let error = collect(encrypt_stream(&key(), failing)).expect_err("fails");
    assert_eq!(error.kind(), io::ErrorKind::ConnectionReset);

    let key = key();
    let sealed = encrypt(&key, &[9u8; 100], &[100]);
    let failing: ByteStream = Box::pin(futures::stream::iter([
        Ok(Bytes::copy_from_slice(&sealed[..50])),
        Err(io::Error::new(io::ErrorKind::TimedOut, "drive slow")),
    ]));
    let range = sealed_range(0, 100, 100);
    let error = collect(decrypt_stream(&key, &range, 100, failing, 100)).expect_err("fails");
    assert_eq!(error.kind(), io::ErrorKind::TimedOut);
}

#[test]
fn ranges_cover_only_the_packages_they_touch() {
    let total = 3 * P as u64 + 100;
    let sealed_package = SEALED_PACKAGE_SIZE as u64;
    let range = sealed_range(P as u64 + 5, 10, total);
    assert_eq!(
        range,
        SealedRange {
            sealed_offset: sealed_package,
            sealed_len: sealed_package,
            first_package: 1,
            skip: 5,
        }
    );
    // Ending in the short final package.
    let range = sealed_range(2 * P as u64 - 1, 2 + P as u64, total);
    assert_eq!(range.first_package, 1);
    assert_eq!(range.sealed_offset + range.sealed_len, sealed_len(total));
    // An empty object's range is its empty package.
    assert_eq!(sealed_range(0, 0, 0).sealed_len, TAG_LEN as u64);
    // Past the end: clamped, covers nothing.
    assert_eq!(sealed_range(total + 10, 5, total).sealed_len, 0);
}

#[test]
fn an_empty_object_is_authenticated() {
    let key = key();
    let sealed = encrypt(&key, &[], &[1]);
    assert_eq!(sealed.len(), TAG_LEN);
    assert_eq!(decrypt_all(&key, sealed.clone(), 0).expect("decrypts"), b"");
    assert_invalid_data(decrypt_all(&key, Vec::new(), 0), "truncated empty object");
    assert_invalid_data(decrypt_all(&self::key(), sealed.clone(), 0), "other key");
    let mut tampered = sealed;
    tampered[3] ^= 0x80;
    assert_invalid_data(decrypt_all(&key, tampered, 0), "tampered tag");
}

#[test]
fn every_flipped_byte_class_is_detected() {
    let key = key();
    let len = 2 * P + 1000;
    let plain = random_bytes(len, 7);
    let sealed = encrypt(&key, &plain, &[P]);
    let sp = SEALED_PACKAGE_SIZE;
    // First, middle and last byte of each package's body and tag.
    let mut positions = Vec::new();
    for start in [0, sp, 2 * sp] {
        let end = (start + sp).min(sealed.len());
        let tag = end - TAG_LEN;
        positions.extend([start, (start + tag) / 2, tag - 1, tag, tag + 7, end - 1]);
    }
    for position in positions {
        let mut tampered = sealed.clone();
        tampered[position] ^= 0x01;
        assert_invalid_data(
            decrypt_all(&key, tampered.clone(), len as u64),
            &format!("byte {position}"),
        );
        // A range read touching only that package fails too.
        let package = (position / sp) as u64;
        assert_invalid_data(
            decrypt_range(&key, &tampered, len as u64, package * P as u64, 1, &[4096]),
            &format!("range over byte {position}"),
        );
    }
}

#[test]
fn reordered_dropped_and_extra_packages_are_detected() {
    let key = key();
    let len = 3 * P + 500;
    let total = len as u64;
    let plain = random_bytes(len, 8);
    let sealed = encrypt(&key, &plain, &[P]);
    let sp = SEALED_PACKAGE_SIZE;

    let mut swapped = sealed.clone();
    swapped[..2 * sp].rotate_left(sp);
    assert_invalid_data(decrypt_all(&key, swapped, total), "swapped packages");

    let mut duplicated = sealed.clone();
    duplicated.copy_within(..sp, sp);
    assert_invalid_data(decrypt_all(&key, duplicated, total), "duplicated package");

    // The final package dropped: with the stored size, the stream is short; with a size
    // edited to match, the new last package was not sealed as final.
    let dropped = sealed[..3 * sp].to_vec();
    assert_invalid_data(decrypt_all(&key, dropped.clone(), total), "dropped final");
    let edited = plain_len(dropped.len() as u64).expect("three full packages");
    assert_invalid_data(
        decrypt_all(&key, dropped, edited),
        "dropped final, size edited",
    );

    // A truncated final package.
    let cut = sealed[..sealed.len() - 1].to_vec();
    assert_invalid_data(decrypt_all(&key, cut, total), "truncated final package");

    // An extra package appended, sealed by the same key as a later sequence number: with
    // the stored size the stream runs on; with the size edited the old final package is
    // final no more.
    let mut extra = sealed.clone();
    extra.extend_from_slice(&encrypt(&key, &[1u8; 100], &[100]));
    assert_invalid_data(decrypt_all(&key, extra.clone(), total), "extra package");
    let edited = plain_len(extra.len() as u64).expect("a valid length");
    assert_invalid_data(
        decrypt_all(&key, extra, edited),
        "extra package, size edited",
    );

    // A package from another object (another key), at the same position.
    let other_key = self::key();
    let other = encrypt(&other_key, &plain, &[P]);
    let mut spliced = sealed.clone();
    spliced[sp..2 * sp].copy_from_slice(&other[sp..2 * sp]);
    assert_invalid_data(
        decrypt_all(&key, spliced, total),
        "package from another object",
    );

    // Another part of the same upload: same object key, another part key.
    let object = ObjectKey::generate();
    let (part1, part2) = (
        object.part_package_key("part.1"),
        object.part_package_key("part.2"),
    );
    let sealed1 = encrypt(&part1, &plain, &[P]);
    assert_invalid_data(
        decrypt_all(&part2, sealed1, total),
        "part 1 opened as part 2",
    );
}

#[test]
fn inconsistent_ranges_and_short_takes_fail_cleanly() {
    let key = key();
    let total = 2 * P as u64;
    let sealed = encrypt(&key, &random_bytes(2 * P, 3), &[P]);
    let bad_ranges = [
        SealedRange {
            sealed_offset: 5,
            sealed_len: 10,
            first_package: 0,
            skip: 0,
        },
        SealedRange {
            sealed_offset: 0,
            sealed_len: sealed.len() as u64 + 1,
            first_package: 0,
            skip: 0,
        },
        SealedRange {
            sealed_offset: 0,
            sealed_len: 100,
            first_package: 0,
            skip: 0,
        },
        SealedRange {
            sealed_offset: 0,
            sealed_len: sealed.len() as u64,
            first_package: 0,
            skip: P,
        },
    ];
    for range in bad_ranges {
        let start = (range.sealed_offset as usize).min(sealed.len());
        let end = (start + range.sealed_len as usize).min(sealed.len());
        let stream = whole(sealed[start..end].to_vec());
        assert_invalid_data(
            collect(decrypt_stream(&key, &range, total, stream, 10)),
            &format!("{range:?}"),
        );
    }
    let range = sealed_range(P as u64, 10, total);
    let start = range.sealed_offset as usize;
    let stream = whole(sealed[start..start + range.sealed_len as usize].to_vec());
    let error = collect(decrypt_stream(&key, &range, total, stream, P as u64 + 1))
        .expect_err("asks for more than the range holds");
    assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any range of any object, read with any chunking, is exactly the plaintext slice.
    #[test]
    fn every_range_decrypts_to_its_slice(
        len in 0usize..300 * 1024,
        start_fraction in 0.0f64..=1.0,
        len_fraction in 0.0f64..=1.0,
        encrypt_chunk in 1usize..200_000,
        decrypt_chunk in 1usize..200_000,
        seed in any::<u64>(),
    ) {
        let key = key();
        let plain = random_bytes(len, seed);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let sizes = [encrypt_chunk, rng.random_range(1..5000), 0];
        let sealed = encrypt(&key, &plain, &sizes);
        prop_assert_eq!(sealed.len() as u64, sealed_len(len as u64));
        let offset = (len as f64 * start_fraction) as usize;
        let range_len = ((len - offset) as f64 * len_fraction) as usize;
        let range_len = range_len.max(usize::from(offset < len));
        let opened = decrypt_range(
            &key,
            &sealed,
            len as u64,
            offset as u64,
            range_len as u64,
            &[decrypt_chunk, 1, rng.random_range(1..SEALED_PACKAGE_SIZE * 2)],
        );
        let opened = opened.map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(opened == plain[offset..offset + range_len], "{} {}+{}", len, offset, range_len);
        // The range reads whole packages only, and no more of them than it needs.
        let range = sealed_range(offset as u64, range_len as u64, len as u64);
        let packages = range.sealed_len.div_ceil(SEALED_PACKAGE_SIZE as u64);
        let touched = if len == 0 { 1 } else if range_len == 0 { 0 } else {
            ((offset + range_len - 1) / P - offset / P + 1) as u64
        };
        prop_assert_eq!(packages, touched);
    }
}
