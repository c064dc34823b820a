//! Power loss: a write acknowledged with 200 survives losing everything not yet fsynced, file
//! data and directory entries alike, and nothing ever reads back partial.
//!
//! `kill -9` keeps the page cache, so these tests run the object store in-process over nine
//! simulated drives (one 6+3 set, `strata::storage::sim`) that know what the drive contract
//! has made durable. For each operation they count its drive calls K once, then for every
//! N in 0..=K: fork the durable pre-state, cut the power after call N, run the operation
//! (acknowledged = it returned Ok), crash (dropping all volatile changes, then random
//! subsets of them), reopen a fresh store over the survivors and check every object.
//! Concurrent writers are swept too: their batches share group commits on each drive (the
//! simulated drives run the local drive's commit queue), and a cut keeps a group whole or
//! not at all.
//!
//! Run with `--nocapture` to see one summary line per scenario.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use sha2::{Digest, Sha256};
use strata::body::ByteStream;
use strata::erasure::ErasureSet;
use strata::object::{
    BucketName, CompleteOptions, CompletedPart, GetOptions, HealDepth, ListQuery, ObjectError,
    ObjectKey, ObjectStore, PutOptions, RenameOptions, UploadOptions, WriteCondition,
};
use strata::storage::sim::{CrashController, Flushed};
use strata::storage::{DataDir, Drive, OfflineDrive};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;
/// Small blocks, so that a few hundred KiB span several of them: objects below one block
/// (and below the inline limit) live in the metadata, larger ones in shard files.
const BLOCK_SIZE: usize = 64 * KIB;
const DRIVES: usize = 9;
const PARITY: usize = 3;
/// Random-subset crashes per crash point, besides the one that keeps only durable state.
const RANDOM_CRASHES: u64 = 5;
const BUCKET: &str = "power-loss";
const DEPLOYMENT_ID: &str = "power-loss-deployment";
/// The key each scenario writes or deletes.
const TARGET: &str = "target";

/// Sizes around the boundaries: empty, inline, one full block, several blocks.
const INLINE: usize = 1000;
const ONE_BLOCK: usize = BLOCK_SIZE;
const BLOCKS: usize = 3 * BLOCK_SIZE + 123;
/// The drives that lost an object before a heal.
const LOST_DRIVES: [usize; 2] = [0, 1];

fn open_store(sim: &CrashController) -> Arc<ObjectStore> {
    let set = ErasureSet::new(0, sim.drives(), PARITY, BLOCK_SIZE).expect("6+3 set");
    ObjectStore::new(vec![set], DEPLOYMENT_ID)
}

fn bucket() -> BucketName {
    BucketName::parse(BUCKET).unwrap()
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::parse(name).unwrap()
}

/// Deterministic bytes, distinct per seed (SplitMix64).
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A body as a client sends it: in 16 KiB pieces.
fn body(data: &[u8]) -> ByteStream {
    let pieces: Vec<std::io::Result<Bytes>> = data
        .chunks(16 * KIB)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    Box::pin(futures::stream::iter(pieces))
}

fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// What a key holds: nothing, or an object of this size and SHA-256.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    Absent,
    Object { size: usize, sha256: [u8; 32] },
}

impl Content {
    fn of(data: &[u8]) -> Self {
        Content::Object {
            size: data.len(),
            sha256: sha256(data),
        }
    }
}

/// The operation under test, on key [`TARGET`].
enum Operation {
    Put(Vec<u8>),
    CompleteMultipart {
        upload_id: String,
        parts: Vec<CompletedPart>,
    },
    Delete,
    /// Removes one version of the key for good.
    DeleteVersion(String),
    /// Heals an object that the drives [`LOST_DRIVES`] lost.
    Heal,
    /// Renames this key to the target.
    RenameFrom(String),
    /// Appends to the target at this offset (its size).
    Append(u64, Vec<u8>),
}

impl Operation {
    async fn run(&self, store: &ObjectStore) -> Result<(), ObjectError> {
        let (bucket, key) = (bucket(), key(TARGET));
        match self {
            Operation::Put(data) => store
                .put_object(&bucket, &key, body(data), PutOptions::default())
                .await
                .map(drop),
            Operation::CompleteMultipart { upload_id, parts } => {
                let options = CompleteOptions {
                    parts: parts.clone(),
                    ..CompleteOptions::default()
                };
                store
                    .complete_multipart_upload(&bucket, &key, upload_id, options)
                    .await
                    .map(drop)
            }
            Operation::Delete => {
                let deleted = store.delete_object(&bucket, &key, None).await.map(drop);
                store.tidied().await;
                deleted
            }
            Operation::DeleteVersion(id) => {
                store.delete_object(&bucket, &key, Some(id)).await.map(drop)
            }
            Operation::RenameFrom(source) => {
                let options = RenameOptions::default();
                let renamed = store
                    .rename_object(&bucket, &key, &self::key(source), &options)
                    .await;
                // The power is cut at the drive calls of its tidying-up too.
                store.tidied().await;
                renamed
            }
            Operation::Append(offset, data) => store
                .append_object(&bucket, &key, *offset, body(data), PutOptions::default())
                .await
                .map(drop),
            // A heal vouches for the drives it reports repaired: only a heal of both lost
            // drives counts as acknowledged.
            Operation::Heal => {
                let report = store.heal_object(&bucket, &key, HealDepth::Quick).await?;
                match report.records_repaired as usize {
                    n if n == LOST_DRIVES.len() => Ok(()),
                    n => Err(ObjectError::Internal(format!("healed {n} drives"))),
                }
            }
        }
    }
}

/// One operation on key [`TARGET`], from a durable pre-state.
struct Scenario {
    name: String,
    pre_state: CrashController,
    operation: Operation,
    before: Content,
    after: Content,
    /// Other objects, written before: they must read back whatever happens.
    bystanders: Vec<(String, Content)>,
    /// Versions of the target (id, content) that must read back by id whatever happens.
    versions: Vec<(String, Content)>,
    /// A version the operation removes: gone once acknowledged.
    removed_version: Option<String>,
    /// The key a rename moves to the target, and what it held: it holds that exactly while
    /// the target holds what it held before, and nothing once the target holds it.
    renamed_from: Option<(String, Content)>,
}

/// A pre-state builder: the bucket and two bystanders (inline and multi-block) on durable
/// drives, and a store to add more with.
struct PreState {
    sim: CrashController,
    store: Arc<ObjectStore>,
    bystanders: Vec<(String, Content)>,
}

impl PreState {
    async fn new() -> Self {
        let sim = CrashController::new(DRIVES);
        let store = open_store(&sim);
        store.create_bucket(&bucket()).await.unwrap();
        let mut pre = Self {
            sim,
            store,
            bystanders: Vec::new(),
        };
        for (name, size) in [("bystander/inline", INLINE), ("bystander/blocks", BLOCKS)] {
            let data = pre.put(name, size, 7).await;
            pre.bystanders.push((name.to_string(), Content::of(&data)));
        }
        pre
    }

    async fn put(&self, name: &str, size: usize, seed: u64) -> Vec<u8> {
        let data = payload(size, seed);
        self.store
            .put_object(&bucket(), &key(name), body(&data), PutOptions::default())
            .await
            .unwrap();
        data
    }

    /// Makes everything durable: the state `operation` starts from, on key `target`.
    fn scenario(
        self,
        name: String,
        operation: Operation,
        before: Content,
        after: Content,
    ) -> Scenario {
        self.sim.sync();
        Scenario {
            name,
            pre_state: self.sim,
            operation,
            before,
            after,
            bystanders: self.bystanders,
            versions: Vec::new(),
            removed_version: None,
            renamed_from: None,
        }
    }

    /// A pre-state whose bucket has versioning enabled and whose target has two versions:
    /// their ids and contents, oldest first.
    async fn versioned() -> (Self, Vec<(String, Content)>) {
        let pre = Self::new().await;
        pre.store
            .update_bucket_settings(&bucket(), |s| {
                s.versioning = Some(strata::object::Versioning::Enabled);
                Ok(())
            })
            .await
            .unwrap();
        let mut versions = Vec::new();
        for (size, seed) in [(BLOCKS, 700), (INLINE, 701)] {
            let data = payload(size, seed);
            let record = pre
                .store
                .put_object(&bucket(), &key(TARGET), body(&data), PutOptions::default())
                .await
                .unwrap();
            versions.push((record.version_id.unwrap(), Content::of(&data)));
        }
        (pre, versions)
    }
}

/// In a versioned bucket: a new version, a delete marker, or the removal of the older
/// version, over two versions that must survive (all but the removed one).
async fn versioned(what: &str) -> Scenario {
    let (pre, versions) = PreState::versioned().await;
    let current = versions[1].1;
    let (operation, after, removed) = match what {
        "put" => {
            let data = payload(ONE_BLOCK, 702);
            let after = Content::of(&data);
            (Operation::Put(data), after, None)
        }
        "delete marker" => (Operation::Delete, Content::Absent, None),
        _ => (
            Operation::DeleteVersion(versions[0].0.clone()),
            current,
            Some(versions[0].0.clone()),
        ),
    };
    let mut scenario = pre.scenario(format!("versioned {what}"), operation, current, after);
    scenario.versions = versions
        .into_iter()
        .filter(|(id, _)| Some(id) != removed.as_ref())
        .collect();
    scenario.removed_version = removed;
    scenario
}

async fn put_new(size: usize) -> Scenario {
    let pre = PreState::new().await;
    let data = payload(size, 100);
    let after = Content::of(&data);
    let operation = Operation::Put(data);
    pre.scenario(
        format!("put new {size} B"),
        operation,
        Content::Absent,
        after,
    )
}

async fn overwrite(old_size: usize, new_size: usize) -> Scenario {
    let pre = PreState::new().await;
    let old = pre.put(TARGET, old_size, 200).await;
    let new = payload(new_size, 201);
    let after = Content::of(&new);
    let operation = Operation::Put(new);
    let name = format!("overwrite {old_size} B with {new_size} B");
    pre.scenario(name, operation, Content::of(&old), after)
}

/// Renames an object of `size` bytes onto the target, over one of `old_size` if given.
async fn rename(size: usize, old_size: Option<usize>) -> Scenario {
    let pre = PreState::new().await;
    let before = match old_size {
        Some(old) => Content::of(&pre.put(TARGET, old, 500).await),
        None => Content::Absent,
    };
    let moved = Content::of(&pre.put("target.tmp", size, 501).await);
    let operation = Operation::RenameFrom("target.tmp".into());
    let name = format!("rename {size} B over {old_size:?} B");
    let mut scenario = pre.scenario(name, operation, before, moved);
    scenario.renamed_from = Some(("target.tmp".into(), moved));
    scenario
}

/// Appends `size` bytes to an object of `old_size` bytes: the object is the old one or the
/// old one and the segment, never a torn mix.
async fn append(old_size: usize, size: usize) -> Scenario {
    let pre = PreState::new().await;
    let old = pre.put(TARGET, old_size, 600).await;
    let segment = payload(size, 601);
    let after = Content::of(&[old.as_slice(), &segment].concat());
    let operation = Operation::Append(old_size as u64, segment);
    let name = format!("append {size} B to {old_size} B");
    pre.scenario(name, operation, Content::of(&old), after)
}

async fn delete(size: usize) -> Scenario {
    let pre = PreState::new().await;
    let old = pre.put(TARGET, size, 300).await;
    let operation = Operation::Delete;
    let name = format!("delete {size} B");
    pre.scenario(name, operation, Content::of(&old), Content::Absent)
}

/// Completes an upload of `part_sizes`, over an object of `old_size` bytes if given.
async fn complete_multipart(old_size: Option<usize>, part_sizes: &[usize]) -> Scenario {
    let pre = PreState::new().await;
    let before = match old_size {
        Some(size) => Content::of(&pre.put(TARGET, size, 400).await),
        None => Content::Absent,
    };
    let (upload_id, _) = pre
        .store
        .create_multipart_upload(&bucket(), &key(TARGET), UploadOptions::default())
        .await
        .unwrap();
    let mut parts = Vec::new();
    let mut whole = Vec::new();
    for (i, &size) in part_sizes.iter().enumerate() {
        let number = i as u32 + 1;
        let data = payload(size, 500 + i as u64);
        let info = pre
            .store
            .upload_part(
                &bucket(),
                &key(TARGET),
                &upload_id,
                number,
                body(&data),
                PutOptions::default(),
            )
            .await
            .unwrap();
        parts.push(CompletedPart {
            number,
            etag: info.etag,
        });
        whole.extend_from_slice(&data);
    }
    let operation = Operation::CompleteMultipart { upload_id, parts };
    let name = match old_size {
        Some(size) => format!("complete multipart {part_sizes:?} B over {size} B"),
        None => format!("complete multipart {part_sizes:?} B"),
    };
    pre.scenario(name, operation, before, Content::of(&whole))
}

/// How drives 0 and 1 lost an object before it is healed.
#[derive(Debug)]
enum Loss {
    /// Its shard files are gone (bad sectors, or a crash before they were written).
    ShardFiles,
    /// Both drives were replaced by empty ones (bucket records already healed back).
    WholeDrives,
}

/// Heals an object of `size` bytes that drives 0 and 1 lost.
async fn heal(size: usize, loss: Loss) -> Scenario {
    let pre = PreState::new().await;
    let data = pre.put(TARGET, size, 600).await;
    let record = pre
        .store
        .head_object(&bucket(), &key(TARGET), None)
        .await
        .unwrap();
    let dir = DataDir {
        bucket_id: pre.store.bucket(&bucket()).await.unwrap().id,
        data_id: record.data_id,
    };
    for lost in LOST_DRIVES {
        match loss {
            Loss::ShardFiles => pre.sim.drive(lost).lose_data_dir(&dir),
            Loss::WholeDrives => pre.sim.drive(lost).wipe(),
        }
    }
    pre.store.heal_buckets().await.unwrap();
    let content = Content::of(&data);
    let operation = Operation::Heal;
    let name = format!("heal {size} B, {loss:?} lost on drives {LOST_DRIVES:?}");
    pre.scenario(name, operation, content, content)
}

/// After a rename, however it was cut short: heal both names, write over the one that does
/// not hold the object and delete it again, heal and collect orphans after each step: the
/// object still reads whole under its name. (Until the rename is settled, both names'
/// records may refer to one data folder; neither may take it from the other.)
async fn renamed_object_outlives_the_other_name(
    store: &ObjectStore,
    scenario: &Scenario,
) -> Option<String> {
    let (source, moved) = scenario.renamed_from.as_ref()?;
    let holder = match read_key(store, source).await {
        Ok(content) if content == *moved => source.as_str(),
        _ => TARGET,
    };
    let other = if holder == TARGET {
        source.as_str()
    } else {
        TARGET
    };
    // With every drive back, a heal and an orphan collection each succeed.
    let settle = || async {
        for name in [holder, other] {
            let (bucket, key) = (bucket(), key(name));
            if let Err(e) = store.heal_object(&bucket, &key, HealDepth::Quick).await {
                return Err(format!("healing {name:?}: {e}"));
            }
        }
        let far_future = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
        let collected = store.collect_orphans(far_future).await;
        collected
            .map(drop)
            .map_err(|e| format!("collecting orphans: {e}"))
    };
    if let Err(problem) = settle().await {
        return Some(problem);
    }
    let newcomer = payload(BLOCKS, 700);
    let (bucket, other_key) = (bucket(), key(other));
    let written = store.put_object(&bucket, &other_key, body(&newcomer), PutOptions::default());
    if let Err(e) = written.await {
        return Some(format!("writing over {other:?} after the rename: {e}"));
    }
    if let Err(problem) = settle().await {
        return Some(problem);
    }
    if let Err(e) = store.delete_object(&bucket, &other_key, None).await {
        return Some(format!("deleting {other:?} after the rename: {e}"));
    }
    if let Err(problem) = settle().await {
        return Some(problem);
    }
    match read_key(store, holder).await {
        Ok(content) if content == *moved => None,
        got => Some(format!(
            "after {other:?} was written over and deleted, {holder:?} reads {got:?}"
        )),
    }
}

/// After an acknowledged heal the drives it healed serve the object: with three others
/// offline, it still reads back whole.
async fn healed_drives_serve(crashed: &CrashController, scenario: &Scenario) -> Option<String> {
    let drives = crashed
        .drives()
        .into_iter()
        .enumerate()
        .map(|(i, drive)| match i {
            0..6 => drive,
            _ => Arc::new(OfflineDrive::new(format!("offline{i}"))) as Arc<dyn Drive>,
        })
        .collect();
    let set = ErasureSet::new(0, drives, PARITY, BLOCK_SIZE).expect("6+3 set");
    let store = ObjectStore::new(vec![set], DEPLOYMENT_ID);
    match read_target(&store).await {
        Ok(content) if content == scenario.after => None,
        Ok(content) => Some(format!("with drives 6-8 offline, reads {content:?}")),
        Err(problem) => Some(format!("with drives 6-8 offline: {problem}")),
    }
}

fn list_all() -> ListQuery {
    ListQuery {
        max_keys: 1000,
        ..ListQuery::default()
    }
}

/// What a fresh store reads for a key: GET (whole body), HEAD and the listing must agree.
async fn read_back(
    store: &ObjectStore,
    name: &str,
    listed: &BTreeSet<String>,
) -> Result<Content, String> {
    let got = match store
        .get_object(&bucket(), &key(name), GetOptions::default())
        .await
    {
        Err(ObjectError::NoSuchKey | ObjectError::DeleteMarker { .. }) => Content::Absent,
        Err(e) => return Err(format!("GET failed: {e}")),
        Ok(result) => {
            let mut bytes = Vec::new();
            let mut body = result.body;
            while let Some(piece) = body.next().await {
                match piece {
                    Ok(piece) => bytes.extend_from_slice(&piece),
                    Err(e) => return Err(format!("GET cut short after {} B: {e}", bytes.len())),
                }
            }
            if bytes.len() as u64 != result.record.size {
                return Err(format!(
                    "GET returned {} B of a {} B object",
                    bytes.len(),
                    result.record.size
                ));
            }
            Content::of(&bytes)
        }
    };
    let head = match store.head_object(&bucket(), &key(name), None).await {
        Err(ObjectError::NoSuchKey | ObjectError::DeleteMarker { .. }) => Content::Absent,
        Err(e) => return Err(format!("HEAD failed: {e}")),
        Ok(record) => match got {
            Content::Object { size, .. } if size as u64 == record.size => got,
            _ => return Err(format!("HEAD says {} B, GET disagrees", record.size)),
        },
    };
    if head != got {
        return Err("HEAD and GET disagree".into());
    }
    if listed.contains(name) != (got != Content::Absent) {
        return Err(format!(
            "listed: {}, readable: {}",
            listed.contains(name),
            got != Content::Absent
        ));
    }
    Ok(got)
}

/// The objects of a reopened store that break the promise, described.
async fn violations(store: &ObjectStore, scenario: &Scenario, acknowledged: bool) -> Vec<String> {
    let mut expected = vec![(TARGET.to_string(), {
        let mut allowed = vec![scenario.after];
        if !acknowledged {
            allowed.push(scenario.before);
        }
        allowed
    })];
    for (name, content) in &scenario.bystanders {
        expected.push((name.clone(), vec![*content]));
    }
    if let Some((source, content)) = &scenario.renamed_from {
        expected.push((source.clone(), vec![Content::Absent, *content]));
    }
    let mut found = unexpected_objects(store, &expected).await;
    if let (Some((source, content)), true) = (&scenario.renamed_from, found.is_empty()) {
        // Exactly one of the two names holds the object: the old one or the new one.
        let (target, source_now) = (read_target(store).await, read_key(store, source).await);
        let old_name =
            (target.as_ref(), source_now.as_ref()) == (Ok(&scenario.before), Ok(content));
        let new_name =
            (target.as_ref(), source_now.as_ref()) == (Ok(&scenario.after), Ok(&Content::Absent));
        if !old_name && !new_name {
            found.push(format!(
                "renamed: the target reads {target:?} and the source {source:?} {source_now:?}"
            ));
        }
    }
    for (id, content) in &scenario.versions {
        match read_version(store, id).await {
            Ok(got) if got == *content => {}
            Ok(got) => found.push(format!("version {id}: reads {got:?}, wrote {content:?}")),
            Err(problem) => found.push(format!("version {id}: {problem}")),
        }
    }
    if let (Some(id), true) = (&scenario.removed_version, acknowledged) {
        match read_version(store, id).await {
            Err(problem) if problem.contains("no such version") => {}
            other => found.push(format!("removed version {id}: {other:?}")),
        }
    }
    found
}

/// One version of the target, read whole by its id.
async fn read_version(store: &ObjectStore, id: &str) -> Result<Content, String> {
    let options = GetOptions {
        version_id: Some(id.to_string()),
        ..GetOptions::default()
    };
    let result = store
        .get_object(&bucket(), &key(TARGET), options)
        .await
        .map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    let mut body = result.body;
    while let Some(piece) = body.next().await {
        bytes.extend_from_slice(&piece.map_err(|e| format!("cut short: {e}"))?);
    }
    Ok(Content::of(&bytes))
}

/// A stable seed per scenario, crash point and crash.
fn seed(name: &str, crash_point: u64, crash: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in name.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h ^ (crash_point << 16) ^ crash
}

/// Drive calls the scenario's operation makes when nothing goes wrong.
async fn count_calls(scenario: &Scenario) -> u64 {
    let dry_run = scenario.pre_state.fork();
    let store = open_store(&dry_run);
    dry_run.reset_calls();
    scenario
        .operation
        .run(&store)
        .await
        .unwrap_or_else(|e| panic!("{}: fails without a crash: {e}", scenario.name));
    dry_run.calls()
}

/// Runs the operation on a copy of the pre-state with the power cut after `crash_point`
/// calls; returns the drives, not yet crashed, and whether the operation was acknowledged.
async fn cut_short(scenario: &Scenario, crash_point: u64) -> (CrashController, bool) {
    let run = scenario.pre_state.fork();
    let store = open_store(&run);
    run.crash_after(crash_point);
    let acknowledged = scenario.operation.run(&store).await.is_ok();
    (run, acknowledged)
}

/// What a sweep of one scenario found.
#[derive(Default)]
struct Sweep {
    crash_points: u64,
    acknowledged: u64,
    crashes: u64,
    objects_checked: usize,
    problems: Vec<String>,
}

/// Runs a scenario with the power cut after every drive call in turn, each followed by a
/// crash that keeps nothing volatile and by some that keep random subsets.
async fn crash_everywhere(scenario: &Scenario) -> Sweep {
    let before = violations(&open_store(&scenario.pre_state), scenario, false).await;
    assert!(
        before.is_empty(),
        "{}: pre-state: {before:?}",
        scenario.name
    );
    let calls = count_calls(scenario).await;
    let mut sweep = Sweep {
        crash_points: calls + 1,
        ..Sweep::default()
    };
    for crash_point in 0..=calls {
        let (run, acked) = cut_short(scenario, crash_point).await;
        sweep.acknowledged += acked as u64;
        let cut = run
            .cut_call()
            .unwrap_or_else(|| "none (ran to the end)".into());
        let random = (0..RANDOM_CRASHES)
            .map(|i| Flushed::RandomSubset(seed(&scenario.name, crash_point, i)));
        for flushed in std::iter::once(Flushed::Nothing).chain(random) {
            let crashed = run.fork();
            crashed.crash(flushed);
            let store = open_store(&crashed);
            sweep.crashes += 1;
            sweep.objects_checked += 1 + scenario.bystanders.len();
            let mut found = violations(&store, scenario, acked).await;
            if found.is_empty() {
                found.extend(renamed_object_outlives_the_other_name(&store, scenario).await);
            }
            if acked && matches!(scenario.operation, Operation::Heal) {
                found.extend(healed_drives_serve(&crashed, scenario).await);
            }
            for violation in found {
                sweep.problems.push(format!(
                    "{}: power cut after call {crash_point}/{calls} (during {cut}), \
                     acknowledged: {acked}, crash keeping {flushed:?}: {violation}",
                    scenario.name
                ));
            }
        }
    }
    sweep
}

fn print_summary(name: &str, sweep: &Sweep) {
    println!(
        "power loss: {name}: {} crash points ({} acknowledged), {} crashes, {} objects \
         checked, {} lost or damaged",
        sweep.crash_points,
        sweep.acknowledged,
        sweep.crashes,
        sweep.objects_checked,
        sweep.problems.len()
    );
}

fn assert_no_problems(name: &str, sweep: &Sweep) {
    assert!(
        sweep.problems.is_empty(),
        "{name}: {} violations:\n{}",
        sweep.problems.len(),
        sweep.problems.join("\n")
    );
}

/// Sweeps a scenario, prints its summary line and fails on any violation.
async fn sweep(scenario: Scenario) {
    let sweep = crash_everywhere(&scenario).await;
    print_summary(&scenario.name, &sweep);
    assert_no_problems(&scenario.name, &sweep);
}

#[tokio::test]
async fn put_of_a_new_key_survives_power_loss() {
    for size in [0, INLINE, ONE_BLOCK, BLOCKS] {
        sweep(put_new(size).await).await;
    }
}

#[tokio::test]
async fn overwrite_survives_power_loss() {
    for (old, new) in [
        (INLINE, INLINE + 1),
        (INLINE, BLOCKS),
        (BLOCKS, ONE_BLOCK),
        (BLOCKS, INLINE),
    ] {
        sweep(overwrite(old, new).await).await;
    }
}

#[tokio::test]
async fn multipart_completion_survives_power_loss() {
    // Every part but the last must be at least 5 MiB.
    sweep(complete_multipart(None, &[5 * MIB, 5 * MIB, INLINE]).await).await;
    sweep(complete_multipart(Some(BLOCKS), &[5 * MIB, 100 * KIB]).await).await;
}

#[tokio::test]
async fn rename_survives_power_loss_as_the_old_name_or_the_new_one() {
    for (size, old_size) in [(INLINE, None), (BLOCKS, None), (BLOCKS, Some(INLINE))] {
        sweep(rename(size, old_size).await).await;
    }
}

#[tokio::test]
async fn append_survives_power_loss_as_the_old_object_or_the_whole_new_one() {
    for (old_size, size) in [(INLINE, BLOCKS), (BLOCKS, INLINE), (BLOCKS, BLOCKS)] {
        sweep(append(old_size, size).await).await;
    }
}

#[tokio::test]
async fn delete_survives_power_loss() {
    for size in [INLINE, BLOCKS] {
        sweep(delete(size).await).await;
    }
}

#[tokio::test]
async fn versioned_writes_and_deletes_survive_power_loss() {
    for what in ["put", "delete marker", "remove a version"] {
        sweep(versioned(what).await).await;
    }
}

#[tokio::test]
async fn heal_survives_power_loss() {
    sweep(heal(BLOCKS, Loss::ShardFiles).await).await;
    sweep(heal(BLOCKS, Loss::WholeDrives).await).await;
    sweep(heal(INLINE, Loss::WholeDrives).await).await;
}

/// Two overwrites of one key, each cut short by a power loss while it commits its
/// metadata: whatever the second leaves, the key reads back as the version seen before it
/// or as its own, never as an error.
///
/// Fails today: the first cut leaves the uncommitted version current on 4-5 drives; the
/// second overwrite makes each drive supersede its own current record, so those drives drop
/// the last committed version (and delete its inline chunks), and when that commit is cut
/// short too, no version is held by a read quorum.
#[tokio::test]
async fn overwrite_cut_short_twice_keeps_a_readable_version() {
    let mut problems = Vec::new();
    for (old, first, second) in [(INLINE, INLINE + 1, BLOCKS), (BLOCKS, ONE_BLOCK, INLINE)] {
        let first_overwrite = overwrite(old, first).await;
        let second_data = payload(second, 900);
        let mut total = Sweep::default();
        for crash_point in 0..=count_calls(&first_overwrite).await {
            let (run, acked) = cut_short(&first_overwrite, crash_point).await;
            let cut = run.cut_call().unwrap_or_default();
            if acked || !cut.ends_with("meta_apply") {
                continue;
            }
            run.crash(Flushed::Nothing);
            let seen = match read_target(&open_store(&run)).await {
                Ok(content) => content,
                Err(problem) => panic!("after the first cut ({cut}): {problem}"),
            };
            let then = Scenario {
                name: format!(
                    "overwrite {old} B with {first} B cut during {cut} (call {crash_point}), \
                     then overwrite with {second} B"
                ),
                pre_state: run,
                operation: Operation::Put(second_data.clone()),
                before: seen,
                after: Content::of(&second_data),
                bystanders: first_overwrite.bystanders.clone(),
                versions: Vec::new(),
                removed_version: None,
                renamed_from: None,
            };
            let sweep = crash_everywhere(&then).await;
            total.crash_points += sweep.crash_points;
            total.acknowledged += sweep.acknowledged;
            total.crashes += sweep.crashes;
            total.objects_checked += sweep.objects_checked;
            total.problems.extend(sweep.problems);
        }
        let name = format!("overwrite {old} B with {first} B, then {second} B, both cut short");
        print_summary(&name, &total);
        problems.extend(total.problems);
    }
    let all = Sweep {
        problems,
        ..Sweep::default()
    };
    assert_no_problems("overwrites cut short twice", &all);
}

/// What a fresh store over these drives reads for the target key.
async fn read_target(store: &ObjectStore) -> Result<Content, String> {
    read_key(store, TARGET).await
}

async fn read_key(store: &ObjectStore, name: &str) -> Result<Content, String> {
    let listed = match store.list_objects(&bucket(), &list_all()).await {
        Ok(page) => page.entries.iter().map(|e| e.name().to_string()).collect(),
        Err(e) => return Err(format!("listing failed: {e}")),
    };
    read_back(store, name, &listed).await
}

/// Writers at once in [`concurrent_writes_sharing_commits_survive_power_loss`]: new keys and
/// overwrites, inline and in shard files.
const CONCURRENT_WRITERS: usize = 8;
/// Two of them race to create this key with `If-None-Match: *`.
const RACED: &str = "raced";
/// Crash points tried in the concurrent sweep (spread over all its drive calls).
const CONCURRENT_CRASH_POINTS: u64 = 80;

/// One write of the concurrent sweep.
struct ConcurrentWrite {
    name: String,
    data: Vec<u8>,
    condition: Option<WriteCondition>,
}

impl ConcurrentWrite {
    async fn run(&self, store: &ObjectStore) -> bool {
        let options = PutOptions {
            condition: self.condition.clone(),
            ..PutOptions::default()
        };
        let (bucket, key) = (bucket(), key(&self.name));
        let written = store.put_object(&bucket, &key, body(&self.data), options);
        written.await.is_ok()
    }
}

/// Runs every write at once; which of them were acknowledged.
async fn run_together(store: &Arc<ObjectStore>, writes: &Arc<Vec<ConcurrentWrite>>) -> Vec<bool> {
    let tasks: Vec<_> = (0..writes.len())
        .map(|i| {
            let (store, writes) = (store.clone(), writes.clone());
            tokio::spawn(async move { writes[i].run(&store).await })
        })
        .collect();
    let mut acknowledged = Vec::new();
    for task in tasks {
        acknowledged.push(task.await.expect("writer"));
    }
    acknowledged
}

/// Power loss while concurrent writes share group commits on every drive: each group is one
/// transaction, and a cut during it keeps all of its batches or none. Every acknowledged
/// write reads back whole, every other key reads back as before or as written, the raced
/// key as at most one of its writers (the acknowledged one, if any), and bystanders as
/// they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_sharing_commits_survive_power_loss() {
    let pre = PreState::new().await;
    let mut before = Vec::new();
    let mut writes = Vec::new();
    for i in 0..CONCURRENT_WRITERS {
        let name = format!("batch/{i}");
        let size = if i % 4 < 2 { INLINE + i } else { BLOCKS + i };
        let old = match i % 2 {
            0 => Content::of(&pre.put(&name, INLINE, 400 + i as u64).await),
            _ => Content::Absent,
        };
        before.push((name.clone(), old));
        let data = payload(size, 500 + i as u64);
        writes.push(ConcurrentWrite {
            name,
            data,
            condition: None,
        });
    }
    for seed in [600, 601] {
        writes.push(ConcurrentWrite {
            name: RACED.to_string(),
            data: payload(INLINE, seed),
            condition: Some(WriteCondition::IfNoneMatch),
        });
    }
    let writes = Arc::new(writes);
    pre.sim.sync();
    // Commits that take as long as an fsync, so that concurrent batches queue up.
    pre.sim
        .set_commit_latency(std::time::Duration::from_millis(2));

    let dry_run = pre.sim.fork();
    let store = open_store(&dry_run);
    dry_run.reset_calls();
    let acked = run_together(&store, &writes).await;
    assert_eq!(
        acked.iter().filter(|a| **a).count(),
        writes.len() - 1,
        "without a crash every write but one racer is acknowledged"
    );
    let calls = dry_run.calls();
    let (batches, groups) = dry_run.batches_and_groups();
    assert!(
        groups < batches,
        "the writers' commits must share transactions: {batches} batches in {groups}"
    );

    let step = (calls / CONCURRENT_CRASH_POINTS).max(1);
    let mut sweep = Sweep::default();
    for crash_point in (0..=calls).step_by(step as usize) {
        let run = pre.sim.fork();
        let store = open_store(&run);
        run.crash_after(crash_point);
        let acked = run_together(&store, &writes).await;
        sweep.crash_points += 1;
        sweep.acknowledged += acked.iter().filter(|a| **a).count() as u64;
        let flushes = [Flushed::Nothing]
            .into_iter()
            .chain((0..2).map(|i| Flushed::RandomSubset(seed("concurrent", crash_point, i))));
        for flushed in flushes {
            let crashed = run.fork();
            crashed.crash(flushed);
            let store = open_store(&crashed);
            sweep.crashes += 1;
            let found = concurrent_violations(&store, &before, &writes, &acked, &pre).await;
            sweep.objects_checked += before.len() + 1 + pre.bystanders.len();
            for violation in found {
                sweep.problems.push(format!(
                    "power cut after call {crash_point}/{calls}, crash keeping {flushed:?}: \
                     {violation}"
                ));
            }
        }
    }
    let name = format!(
        "{} concurrent writes ({batches} batches in {groups} group commits)",
        writes.len()
    );
    print_summary(&name, &sweep);
    assert_no_problems(&name, &sweep);
}

/// What a reopened store breaks of the concurrent sweep's promises.
async fn concurrent_violations(
    store: &ObjectStore,
    before: &[(String, Content)],
    writes: &[ConcurrentWrite],
    acked: &[bool],
    pre: &PreState,
) -> Vec<String> {
    let mut expected: Vec<(String, Vec<Content>)> = Vec::new();
    for (i, (name, old)) in before.iter().enumerate() {
        let new = Content::of(&writes[i].data);
        let allowed = if acked[i] { vec![new] } else { vec![*old, new] };
        expected.push((name.clone(), allowed));
    }
    let racers: Vec<usize> = (before.len()..writes.len()).collect();
    let raced = match racers.iter().find(|i| acked[**i]) {
        Some(winner) => vec![Content::of(&writes[*winner].data)],
        None => std::iter::once(Content::Absent)
            .chain(racers.iter().map(|i| Content::of(&writes[*i].data)))
            .collect(),
    };
    expected.push((RACED.to_string(), raced));
    for (name, content) in &pre.bystanders {
        expected.push((name.clone(), vec![*content]));
    }
    unexpected_objects(store, &expected).await
}

/// Every object of the bucket, each against the contents it may hold (listed, it must be
/// among them; absent from them, it must not be listed): what breaks that, described.
async fn unexpected_objects(
    store: &ObjectStore,
    expected: &[(String, Vec<Content>)],
) -> Vec<String> {
    let listed: BTreeSet<String> = match store.list_objects(&bucket(), &list_all()).await {
        Ok(page) => page.entries.iter().map(|e| e.name().to_string()).collect(),
        Err(e) => return vec![format!("listing failed: {e}")],
    };
    let mut found = Vec::new();
    for (name, allowed) in expected {
        match read_back(store, name, &listed).await {
            Ok(content) if allowed.contains(&content) => {}
            Ok(content) => found.push(format!("{name}: reads {content:?}, allowed {allowed:?}")),
            Err(problem) => found.push(format!("{name}: {problem}")),
        }
    }
    for extra in listed
        .iter()
        .filter(|l| !expected.iter().any(|(n, _)| n == *l))
    {
        found.push(format!("{extra}: listed but never written"));
    }
    found
}
