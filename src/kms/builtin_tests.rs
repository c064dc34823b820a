use std::sync::Arc;

use super::*;

fn master(name: &str) -> MasterKey {
    MasterKey::generate(name).expect("valid name")
}

/// A copy of a master key (the type is deliberately not `Clone`).
fn same(master: &MasterKey) -> MasterKey {
    MasterKey::parse(&master.encode()).expect("round trips")
}

fn context(pairs: &[(&str, &str)]) -> EncryptionContext {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn open(master: MasterKey, catalog: &Arc<MemoryCatalog>) -> BuiltinKms {
    BuiltinKms::open(master, catalog.clone())
        .await
        .expect("opens")
}

#[test]
fn master_keys_parse_and_reject_bad_input() {
    let good = format!("my-key:{}", BASE64.encode([1u8; 32]));
    let key = MasterKey::parse(&format!("  {good}\n")).expect("parses, trimmed");
    assert_eq!(key.name(), "my-key");
    assert_eq!(*key.key, [1u8; 32]);
    assert_eq!(*key.encode(), good);
    for bad in [
        String::new(),
        "no-colon".into(),
        format!(":{}", BASE64.encode([1u8; 32])),
        format!("bad name:{}", BASE64.encode([1u8; 32])),
        format!("k:{}", BASE64.encode([1u8; 31])),
        format!("k:{}", BASE64.encode([1u8; 33])),
        "k:not base64!".into(),
    ] {
        assert!(
            matches!(MasterKey::parse(&bad), Err(KmsError::Invalid(_))),
            "{bad:?}"
        );
    }
    assert!(!format!("{key:?}").contains(&BASE64.encode([1u8; 32])));
}

#[test]
fn master_key_reads_from_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kms.key");
    std::fs::write(&path, format!("file-key:{}\n", BASE64.encode([2u8; 32]))).expect("writes");
    let key = MasterKey::from_file(&path).expect("reads");
    assert_eq!((key.name(), *key.key), ("file-key", [2u8; 32]));
    assert!(MasterKey::from_file(&dir.path().join("missing")).is_err());
}

#[tokio::test]
async fn first_start_creates_the_default_and_sse_s3_keys() {
    let catalog = Arc::new(MemoryCatalog::new());
    let master = master("deployment-1");
    let kms = open(same(&master), &catalog).await;
    assert_eq!(kms.default_key().as_deref(), Some("deployment-1"));
    let listed = kms.list_keys().await.expect("lists");
    assert_eq!(listed.len(), 1, "the SSE-S3 key is not listed");
    assert_eq!(listed[0].name, "deployment-1");
    assert!(listed[0].enabled);
    let stored = catalog.bytes().expect("saved at first start");
    // The stored catalog holds no key material in the clear.
    let kek = kms.sse_s3_kek().await.expect("SSE-S3 KEK");
    assert!(!stored.windows(32).any(|w| w == kek.as_slice()));
    assert!(!String::from_utf8_lossy(&stored).contains(&BASE64.encode(kek.as_slice())));

    // Another server starting on an empty catalog derives the same built-in keys.
    let elsewhere = open(same(&master), &Arc::new(MemoryCatalog::new())).await;
    assert_eq!(*elsewhere.sse_s3_kek().await.expect("KEK"), *kek);
    let data_key = kms
        .generate_data_key("deployment-1", &context(&[]))
        .await
        .expect("default key works");
    let opened = elsewhere
        .decrypt_data_key("deployment-1", &data_key.sealed, &context(&[]))
        .await
        .expect("same default key");
    assert_eq!(*opened, *data_key.plaintext);
    // A second open of the same catalog does not rewrite it.
    let _again = open(same(&master), &catalog).await;
    assert_eq!(catalog.bytes(), Some(stored));
}

#[tokio::test]
async fn create_list_status_disable_enable() {
    let catalog = Arc::new(MemoryCatalog::new());
    let kms = open(master("m"), &catalog).await;
    kms.create_key("alpha").await.expect("creates");
    kms.create_key("beta").await.expect("creates");
    assert_eq!(
        kms.create_key("alpha").await,
        Err(KmsError::KeyExists("alpha".into()))
    );
    for bad in ["", "has space", "@sse-s3", "a/b", &"x".repeat(65)] {
        assert!(
            matches!(kms.create_key(bad).await, Err(KmsError::Invalid(_))),
            "{bad:?}"
        );
    }
    let names: Vec<String> = kms
        .list_keys()
        .await
        .expect("lists")
        .into_iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(names, ["alpha", "beta", "m"]);
    let status = kms.key_status("alpha").await.expect("exists");
    assert!(status.enabled);
    assert!(status.created <= SystemTime::now());
    assert!(status.created > UNIX_EPOCH + Duration::from_secs(1_600_000_000));

    let ctx = context(&[("purpose", "test")]);
    let data_key = kms
        .generate_data_key("alpha", &ctx)
        .await
        .expect("generates");
    kms.disable_key("alpha").await.expect("disables");
    assert!(!kms.key_status("alpha").await.expect("exists").enabled);
    assert_eq!(
        kms.generate_data_key("alpha", &ctx).await.map(|_| ()),
        Err(KmsError::KeyDisabled("alpha".into()))
    );
    assert_eq!(
        kms.decrypt_data_key("alpha", &data_key.sealed, &ctx)
            .await
            .map(|_| ()),
        Err(KmsError::KeyDisabled("alpha".into()))
    );
    // The disabled state is persisted.
    let reopened = open(master_copy(&kms), &catalog).await;
    assert!(!reopened.key_status("alpha").await.expect("exists").enabled);
    kms.enable_key("alpha").await.expect("enables");
    let opened = kms
        .decrypt_data_key("alpha", &data_key.sealed, &ctx)
        .await
        .expect("enabled again");
    assert_eq!(*opened, *data_key.plaintext);
}

fn master_copy(kms: &BuiltinKms) -> MasterKey {
    same(&kms.master)
}

#[tokio::test]
async fn unknown_and_reserved_keys_do_not_exist() {
    let kms = open(master("m"), &Arc::new(MemoryCatalog::new())).await;
    let ctx = context(&[]);
    for name in ["nope", "@sse-s3", "", "../etc"] {
        let missing = Err(KmsError::NoSuchKey(name.into()));
        assert_eq!(kms.generate_data_key(name, &ctx).await.map(|_| ()), missing);
        assert_eq!(
            kms.decrypt_data_key(name, &[0; 81], &ctx).await.map(|_| ()),
            missing
        );
        assert_eq!(kms.key_status(name).await.map(|_| ()), missing);
        assert_eq!(kms.disable_key(name).await, missing);
        assert_eq!(kms.enable_key(name).await, missing);
    }
    assert_eq!(
        KmsError::NoSuchKey("x".into()).s3_code(),
        "KMS.NotFoundException"
    );
    assert_eq!(
        KmsError::KeyDisabled("x".into()).s3_code(),
        "KMS.DisabledException"
    );
}

#[tokio::test]
async fn data_keys_open_only_with_their_key_and_context() {
    let kms = open(master("m"), &Arc::new(MemoryCatalog::new())).await;
    kms.create_key("a").await.expect("creates");
    kms.create_key("b").await.expect("creates");
    let ctx = context(&[("aws:s3:arn", "arn:aws:s3:::bucket/object"), ("x", "1")]);
    let data_key = kms.generate_data_key("a", &ctx).await.expect("generates");
    assert_ne!(*data_key.plaintext, [0; 32]);
    let other = kms.generate_data_key("a", &ctx).await.expect("generates");
    assert_ne!(*other.plaintext, *data_key.plaintext);

    let tampered = Err(KmsError::Tampered);
    for wrong in [
        context(&[]),
        context(&[("aws:s3:arn", "arn:aws:s3:::bucket/object")]),
        context(&[("aws:s3:arn", "arn:aws:s3:::bucket/other"), ("x", "1")]),
        context(&[("aws:s3:arn", "arn:aws:s3:::bucket/object"), ("x", "2")]),
        context(&[("aws:s3:arn", "arn:aws:s3:::bucket/object"), ("x1", "")]),
        context(&[
            ("aws:s3:arn", "arn:aws:s3:::bucket/object"),
            ("x", "1"),
            ("y", ""),
        ]),
    ] {
        let result = kms.decrypt_data_key("a", &data_key.sealed, &wrong).await;
        assert_eq!(result.map(|_| ()), tampered, "{wrong:?}");
    }
    let result = kms.decrypt_data_key("b", &data_key.sealed, &ctx).await;
    assert_eq!(result.map(|_| ()), tampered, "another key");
    for i in 1..data_key.sealed.len() {
        let mut altered = data_key.sealed.clone();
        altered[i] ^= 0x40;
        let result = kms.decrypt_data_key("a", &altered, &ctx).await;
        assert_eq!(result.map(|_| ()), tampered, "byte {i}");
    }
    for malformed in [vec![], data_key.sealed[..80].to_vec(), {
        let mut v = data_key.sealed.clone();
        v[0] = 2;
        v
    }] {
        let result = kms.decrypt_data_key("a", &malformed, &ctx).await;
        assert!(matches!(result, Err(KmsError::Invalid(_))));
    }
    let opened = kms
        .decrypt_data_key("a", &data_key.sealed, &ctx)
        .await
        .expect("opens");
    assert_eq!(*opened, *data_key.plaintext);
}

#[tokio::test]
async fn catalog_reloads_from_bytes_on_another_server() {
    let first_catalog = Arc::new(MemoryCatalog::new());
    let master = master("m");
    let kms = open(same(&master), &first_catalog).await;
    kms.create_key("k").await.expect("creates");
    let ctx = context(&[("a", "b")]);
    let data_key = kms.generate_data_key("k", &ctx).await.expect("generates");
    let kek = kms.sse_s3_kek().await.expect("KEK");

    let bytes = first_catalog.bytes().expect("saved");
    let copy = Arc::new(MemoryCatalog::with_bytes(bytes.clone()));
    let restarted = open(same(&master), &copy).await;
    let opened = restarted
        .decrypt_data_key("k", &data_key.sealed, &ctx)
        .await
        .expect("opens after reload");
    assert_eq!(*opened, *data_key.plaintext);
    assert_eq!(*restarted.sse_s3_kek().await.expect("KEK"), *kek);

    // A key created by another server sharing the catalog is found on first use.
    let shared = open(same(&master), &first_catalog).await;
    shared.create_key("late").await.expect("creates");
    kms.generate_data_key("late", &ctx)
        .await
        .expect("found after a re-read");

    // The wrong master key does not open the catalog; neither does an altered one.
    let wrong = MasterKey::parse(&format!("m:{}", BASE64.encode([0u8; 32]))).expect("parses");
    let result = BuiltinKms::open(wrong, copy.clone()).await;
    assert!(matches!(result, Err(KmsError::Storage(_))));
    let result = BuiltinKms::open(master_named("other"), copy.clone()).await;
    assert!(
        matches!(result, Err(KmsError::Storage(ref m)) if m.contains("not configured")),
        "{result:?}"
    );
    let garbage = Arc::new(MemoryCatalog::with_bytes(b"{not json".to_vec()));
    let result = BuiltinKms::open(same(&master), garbage).await;
    assert!(matches!(result, Err(KmsError::Storage(_))));
}

fn master_named(name: &str) -> MasterKey {
    master(name)
}

#[tokio::test]
async fn rotation_reseals_the_catalog_and_retires_the_old_master() {
    let catalog = Arc::new(MemoryCatalog::new());
    let old = master("master-2024");
    let kms = open(same(&old), &catalog).await;
    kms.create_key("app").await.expect("creates");
    kms.disable_key("app").await.expect("disables");
    kms.create_key("logs").await.expect("creates");
    let ctx = context(&[("o", "1")]);
    let data_key = kms
        .generate_data_key("logs", &ctx)
        .await
        .expect("generates");
    let default_data_key = kms
        .generate_data_key("master-2024", &ctx)
        .await
        .expect("generates");
    let kek = kms.sse_s3_kek().await.expect("KEK");

    // The new master alone cannot open the catalog yet.
    let new = master("master-2025");
    assert!(BuiltinKms::open(same(&new), catalog.clone()).await.is_err());

    let rotating = BuiltinKms::open_with_previous(same(&new), vec![same(&old)], catalog.clone())
        .await
        .expect("opens with the previous master");
    assert_eq!(rotating.default_key().as_deref(), Some("master-2025"));
    // app, logs, the old default key and the SSE-S3 key; the new default key was sealed by
    // the new master when created at this start.
    assert_eq!(rotating.rotate().await.expect("rotates"), 4);
    assert_eq!(rotating.rotate().await.expect("idempotent"), 0);

    let rotated = BuiltinKms::open(same(&new), catalog.clone())
        .await
        .expect("the old master is no longer needed");
    let opened = rotated
        .decrypt_data_key("logs", &data_key.sealed, &ctx)
        .await
        .expect("data keys survive rotation");
    assert_eq!(*opened, *data_key.plaintext);
    let opened = rotated
        .decrypt_data_key("master-2024", &default_data_key.sealed, &ctx)
        .await
        .expect("the old default key survives rotation");
    assert_eq!(*opened, *default_data_key.plaintext);
    assert_eq!(*rotated.sse_s3_kek().await.expect("KEK"), *kek);
    assert!(!rotated.key_status("app").await.expect("exists").enabled);
    let names: Vec<String> = rotated
        .list_keys()
        .await
        .expect("lists")
        .into_iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(names, ["app", "logs", "master-2024", "master-2025"]);
    // And the old master alone opens it no more.
    assert!(BuiltinKms::open(same(&old), catalog.clone()).await.is_err());
}

/// The catalog as another server writes it between this server's read and its save: the
/// first read after `stale` is set returns the catalog as it was before that write.
struct RacingCatalog {
    shared: Arc<MemoryCatalog>,
    stale: std::sync::Mutex<Option<Option<Vec<u8>>>>,
}

#[async_trait]
impl KeyCatalog for RacingCatalog {
    async fn load(&self) -> Result<Option<Vec<u8>>, KmsError> {
        if let Some(stale) = self.stale.lock().unwrap().take() {
            return Ok(stale);
        }
        self.shared.load().await
    }

    async fn save_if(&self, expected: Option<&[u8]>, bytes: &[u8]) -> Result<bool, KmsError> {
        self.shared.save_if(expected, bytes).await
    }
}

#[tokio::test]
async fn keys_made_on_two_servers_at_once_are_both_kept() {
    let master = master("shared");
    let shared = Arc::new(MemoryCatalog::new());
    let first = open(same(&master), &shared).await;
    let racing = Arc::new(RacingCatalog {
        shared: shared.clone(),
        stale: Default::default(),
    });
    let second = BuiltinKms::open(same(&master), racing.clone())
        .await
        .expect("opens");

    // The second server read the catalog just before the first saved "alpha" into it.
    let before = shared.bytes();
    first.create_key("alpha").await.unwrap();
    *racing.stale.lock().unwrap() = Some(before);
    second.create_key("beta").await.unwrap();

    let reopened = open(master, &shared).await;
    let names: Vec<String> = (reopened.list_keys().await.unwrap().into_iter())
        .map(|key| key.name)
        .collect();
    assert!(
        names.contains(&"alpha".to_string()) && names.contains(&"beta".to_string()),
        "a key was lost: {names:?}"
    );
}
