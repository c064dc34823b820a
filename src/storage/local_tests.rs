use super::*;

/// The format of a lone test drive.
pub(crate) fn format() -> Format {
    Format {
        version: 1,
        deployment_id: "d".into(),
        set_index: 0,
        drive_index: 0,
        set_count: 1,
        data_shards: 2,
        parity_shards: 1,
        pool_index: 0,
        pool_id: None,
    }
}

#[tokio::test]
async fn staged_files_commit_into_the_data_dir() {
    let root = tempfile::tempdir().unwrap();
    LocalDrive::write_format(root.path(), &format()).unwrap();
    let drive = LocalDrive::open(root.path()).unwrap();
    let staging = Uuid::new_v4();
    let mut w = drive.create_staged_file(staging, "part.1").await.unwrap();
    w.write(vec![Bytes::from_static(b"he"), Bytes::from_static(b"llo")])
        .await
        .unwrap();
    w.finish().await.unwrap();
    let dir = DataDir {
        bucket_id: "b".into(),
        data_id: Uuid::new_v4(),
    };
    drive.commit_staged(staging, &dir).await.unwrap();
    let r = drive.open_shard(&dir, "part.1").await.unwrap();
    assert_eq!(&r.read_at(1, 3).await.unwrap()[..], b"ell");
    assert!(matches!(r.read_at(3, 5).await, Err(DriveError::ShortRead)));
    assert!(!drive.staging_path(staging).exists());

    // A shard's worth: every byte where it was written.
    let large: Vec<u8> = (0..300 << 10).map(|i: u32| (i % 251) as u8).collect();
    let staging = Uuid::new_v4();
    let mut w = drive.create_staged_file(staging, "part.2").await.unwrap();
    w.write(vec![Bytes::from(large.clone())]).await.unwrap();
    w.finish().await.unwrap();
    drive.commit_staged(staging, &dir).await.unwrap();
    let r = drive.open_shard(&dir, "part.2").await.unwrap();
    assert!(r.read_at(0, large.len()).await.unwrap() == large[..]);
    let (at, len) = (100_003, 175_000);
    assert!(r.read_at(at as u64, len).await.unwrap() == large[at..at + len]);
    assert!(matches!(
        r.read_at(1, large.len()).await,
        Err(DriveError::ShortRead)
    ));
}

#[tokio::test]
async fn scans_stop_at_the_prefix_and_limit() {
    let root = tempfile::tempdir().unwrap();
    LocalDrive::write_format(root.path(), &format()).unwrap();
    let drive = LocalDrive::open(root.path()).unwrap();
    let put = |k: &str| MetaOp::Put {
        table: MetaTable::Objects,
        key: k.as_bytes().to_vec(),
        value: vec![1],
    };
    drive
        .meta_apply(vec![put("a/1"), put("a/2"), put("a/3"), put("b/1")])
        .await
        .unwrap();
    let keys = |v: Vec<(Vec<u8>, Vec<u8>)>| {
        v.into_iter()
            .map(|(k, _)| String::from_utf8(k).unwrap())
            .collect::<Vec<_>>()
    };
    let all = drive
        .meta_scan(MetaTable::Objects, Bound::Unbounded, b"a/".to_vec(), 10)
        .await
        .unwrap();
    assert_eq!(keys(all), ["a/1", "a/2", "a/3"]);
    let page = drive
        .meta_scan(
            MetaTable::Objects,
            Bound::Excluded(b"a/1".to_vec()),
            b"a/".to_vec(),
            1,
        )
        .await
        .unwrap();
    assert_eq!(keys(page), ["a/2"]);
    drive
        .meta_apply(vec![MetaOp::DeletePrefix {
            table: MetaTable::Objects,
            prefix: b"a/".to_vec(),
        }])
        .await
        .unwrap();
    let rest = drive
        .meta_scan(MetaTable::Objects, Bound::Unbounded, Vec::new(), 10)
        .await
        .unwrap();
    assert_eq!(keys(rest), ["b/1"]);
}

#[tokio::test]
async fn delimited_scans_return_one_key_per_common_prefix() {
    let root = tempfile::tempdir().unwrap();
    LocalDrive::write_format(root.path(), &format()).unwrap();
    let drive = LocalDrive::open(root.path()).unwrap();
    let keys = ["a/1", "a/2", "a/b/1", "a/c", "ab", "b/1", "b/2", "c"];
    let puts = keys.iter().map(|k| MetaOp::Put {
        table: MetaTable::Objects,
        key: k.as_bytes().to_vec(),
        value: vec![1],
    });
    drive.meta_apply(puts.collect()).await.unwrap();
    let scan = |start: Bound<&str>, prefix: &str, limit| {
        let found = drive.meta_scan_delimited(
            MetaTable::Objects,
            start.map(|k| k.as_bytes().to_vec()),
            prefix.as_bytes().to_vec(),
            b"/".to_vec(),
            limit,
        );
        async move {
            found
                .await
                .unwrap()
                .into_iter()
                .map(|(k, _)| String::from_utf8(k).unwrap())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        scan(Bound::Unbounded, "", 10).await,
        ["a/1", "ab", "b/1", "c"]
    );
    assert_eq!(
        scan(Bound::Unbounded, "a/", 10).await,
        ["a/1", "a/2", "a/b/1", "a/c"]
    );
    assert_eq!(scan(Bound::Included("a0"), "", 2).await, ["ab", "b/1"]);
    // Resuming inside a common prefix finds it again from there.
    assert_eq!(scan(Bound::Excluded("a/2"), "", 2).await, ["a/b/1", "ab"]);
}

#[tokio::test]
async fn a_batch_applies_only_while_its_expectations_hold() {
    let root = tempfile::tempdir().unwrap();
    LocalDrive::write_format(root.path(), &format()).unwrap();
    let drive = LocalDrive::open(root.path()).unwrap();
    let put = |value: &[u8]| MetaOp::Put {
        table: MetaTable::Objects,
        key: b"k".to_vec(),
        value: value.to_vec(),
    };
    let expect = |value: Option<&[u8]>| MetaOp::Expect {
        table: MetaTable::Objects,
        key: b"k".to_vec(),
        value: value.map(<[u8]>::to_vec),
    };
    drive
        .meta_apply(vec![expect(None), put(b"a")])
        .await
        .unwrap();
    // A second writer that also read "absent" is refused, and changes nothing.
    let late = drive.meta_apply(vec![expect(None), put(b"b")]).await;
    assert!(matches!(late, Err(DriveError::Conflict)));
    drive
        .meta_apply(vec![expect(Some(b"a")), put(b"c")])
        .await
        .unwrap();
    let stale = drive.meta_apply(vec![put(b"d"), expect(Some(b"a"))]).await;
    assert!(matches!(stale, Err(DriveError::Conflict)));
    let held = drive
        .meta_get(MetaTable::Objects, b"k".to_vec())
        .await
        .unwrap();
    assert_eq!(held.as_deref(), Some(&b"c"[..]));
}

#[tokio::test]
async fn a_removed_drive_folder_goes_offline() {
    let root = tempfile::tempdir().unwrap();
    LocalDrive::write_format(root.path(), &format()).unwrap();
    let drive = LocalDrive::open(root.path()).unwrap();
    fs::remove_dir_all(root.path()).unwrap();
    let got = drive.meta_get(MetaTable::Objects, b"k".to_vec()).await;
    assert!(matches!(got, Err(DriveError::Offline(_))));
}
