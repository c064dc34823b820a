//! One redb write transaction over a group of metadata batches, for the drive's
//! [`CommitQueue`](crate::storage::commit_queue::CommitQueue): each batch's conditions are
//! checked against the transaction as the batches before it left it, and a batch whose
//! conditions fail changes nothing while the others go on.

use redb::{Database, ReadableTable, WriteTransaction};

use super::{begin_write, db_err, dir_index, table, write_err};
use crate::storage::commit_queue::GroupOutcome;
use crate::storage::{note_replaced, DriveError, MetaOp, Replaced};

/// One transaction over a group of batches: each batch's outcome, or the group's error.
pub(super) fn commit_group(db: &Database, batches: Vec<Vec<MetaOp>>) -> GroupOutcome {
    let txn = begin_write(db).map_err(write_err)?;
    let mut outcomes = Vec::with_capacity(batches.len());
    for ops in batches {
        if !conditions_hold(&txn, &ops)? {
            outcomes.push(Err(DriveError::Conflict));
            continue;
        }
        outcomes.push(Ok(apply_changes(&txn, ops)?));
    }
    txn.commit().map_err(write_err)?;
    Ok(outcomes)
}

/// Whether every key a batch expects holds what it expects, in the transaction as it is.
fn conditions_hold(txn: &WriteTransaction, ops: &[MetaOp]) -> Result<bool, DriveError> {
    for op in ops {
        if let MetaOp::Expect {
            table: which,
            key,
            value,
        } = op
        {
            let t = txn.open_table(table(*which)).map_err(db_err)?;
            let held = t.get(key.as_slice()).map_err(db_err)?;
            if held.as_ref().map(|v| v.value()) != value.as_deref() {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Applies a batch's changes (its conditions hold) with the directory index's; answers what
/// they replaced.
fn apply_changes(txn: &WriteTransaction, ops: Vec<MetaOp>) -> Result<Replaced, DriveError> {
    let mut replaced = Replaced::new();
    for op in ops {
        match op {
            MetaOp::Expect { .. } => {}
            MetaOp::Put {
                table: which,
                key,
                value,
            } => {
                let mut t = txn.open_table(table(which)).map_err(db_err)?;
                let old = (t.insert(key.as_slice(), value.as_slice()))
                    .map_err(db_err)?
                    .map(|v| v.value().to_vec());
                let existed = old.is_some();
                note_replaced(&mut replaced, which, &key, || old);
                if let Some(index) = dir_index::index_table(which) {
                    let mut index = txn.open_table(index).map_err(db_err)?;
                    dir_index::on_insert(&mut index, &key, &value, existed)?;
                }
            }
            MetaOp::Delete { table: which, key } => {
                let mut t = txn.open_table(table(which)).map_err(db_err)?;
                let old = (t.remove(key.as_slice()))
                    .map_err(db_err)?
                    .map(|v| v.value().to_vec());
                let removed = old.is_some();
                note_replaced(&mut replaced, which, &key, || old);
                if let (true, Some(index)) = (removed, dir_index::index_table(which)) {
                    let mut index = txn.open_table(index).map_err(db_err)?;
                    dir_index::on_remove(&t, &mut index, &key)?;
                }
            }
            MetaOp::DeletePrefix {
                table: which,
                prefix,
            } => {
                let mut t = txn.open_table(table(which)).map_err(db_err)?;
                let keys: Vec<Vec<u8>> = t
                    .range::<&[u8]>(prefix.as_slice()..)
                    .map_err(db_err)?
                    .map_while(|entry| entry.ok().map(|(k, _)| k.value().to_vec()))
                    .take_while(|k| k.starts_with(&prefix))
                    .collect();
                let mut index = match dir_index::index_table(which) {
                    Some(index) => Some(txn.open_table(index).map_err(db_err)?),
                    None => None,
                };
                for key in keys {
                    t.remove(key.as_slice()).map_err(db_err)?;
                    if let Some(index) = &mut index {
                        dir_index::on_remove(&t, index, &key)?;
                    }
                }
            }
        }
    }
    Ok(replaced)
}

#[cfg(test)]
mod tests {
    use futures::future::join_all;

    use crate::storage::local::tests::format;
    use crate::storage::{Drive, DriveError, LocalDrive, MetaOp, MetaTable};

    fn put(key: &str, value: &str) -> MetaOp {
        MetaOp::Put {
            table: MetaTable::Objects,
            key: key.as_bytes().to_vec(),
            value: value.as_bytes().to_vec(),
        }
    }

    fn expect(key: &str, value: Option<&str>) -> MetaOp {
        MetaOp::Expect {
            table: MetaTable::Objects,
            key: key.as_bytes().to_vec(),
            value: value.map(|v| v.as_bytes().to_vec()),
        }
    }

    /// 64 writers at once: 32 create their own key, 16 race to replace one key from the
    /// same value, 16 expect what is not there. They share transactions, and each has its
    /// own outcome: exactly one of the racers wins, the impossible ones change nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn batches_share_transactions_and_keep_their_own_outcomes() {
        let root = tempfile::tempdir().unwrap();
        LocalDrive::write_format(root.path(), &format()).unwrap();
        let drive = LocalDrive::open(root.path()).unwrap();
        drive.meta_apply(vec![put("raced", "start")]).await.unwrap();
        let before = drive.commits.groups();

        let batches = (0..64).map(|i| match i % 4 {
            0 | 1 => vec![
                expect(&format!("own{i}"), None),
                put(&format!("own{i}"), "mine"),
            ],
            2 => vec![
                expect("raced", Some("start")),
                put("raced", &format!("winner{i}")),
            ],
            _ => vec![
                expect("raced", Some("never")),
                put(&format!("impossible{i}"), "x"),
            ],
        });
        let outcomes = join_all(batches.map(|ops| drive.meta_apply(ops))).await;

        for (i, outcome) in outcomes.iter().enumerate() {
            match i % 4 {
                0 | 1 => assert!(outcome.is_ok(), "writer {i}: {outcome:?}"),
                3 => assert!(matches!(outcome, Err(DriveError::Conflict)), "writer {i}"),
                _ => {}
            }
        }
        let winners: Vec<usize> = (outcomes.iter().enumerate())
            .filter(|(i, o)| i % 4 == 2 && o.is_ok())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(winners.len(), 1, "racers from the same value: one wins");
        let raced = drive.meta_get(MetaTable::Objects, b"raced".to_vec()).await;
        assert_eq!(
            raced.unwrap().unwrap(),
            format!("winner{}", winners[0]).as_bytes()
        );
        for i in (0..64).filter(|i| i % 4 == 3) {
            let key = format!("impossible{i}").into_bytes();
            assert!(drive
                .meta_get(MetaTable::Objects, key)
                .await
                .unwrap()
                .is_none());
        }
        for i in (0..64).filter(|i| i % 4 < 2) {
            let key = format!("own{i}").into_bytes();
            assert!(drive
                .meta_get(MetaTable::Objects, key)
                .await
                .unwrap()
                .is_some());
        }
        let groups = drive.commits.groups() - before;
        assert!(groups < 64, "64 batches in {groups} transactions");
    }
}
