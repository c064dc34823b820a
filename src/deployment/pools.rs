//! The server pools of a deployment: which drive position belongs to which pool and set, what
//! each drive's format record must say, and the pool list every drive records.
//!
//! A start may give more pools than were recorded (the deployment grows), never fewer or
//! other ones: a pool's drives hold its keys, and a start without them would answer them
//! absent.

use std::ops::Range;
use std::path::Path;

use anyhow::bail;

use crate::storage::{Format, PoolEntry, PoolList};

/// The pools of a deployment as this start gives them, with their ids.
#[derive(Debug, Clone)]
pub struct Shape {
    pub deployment_id: String,
    pub data_shards: usize,
    pub parity_shards: usize,
    pub pools: Vec<PoolShape>,
}

/// One server pool: its id and where its drives are among the deployment's positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolShape {
    pub id: String,
    /// Its drive positions (whole sets, so its sets are `drives / set size`).
    pub drives: Range<usize>,
}

impl PoolShape {
    /// The pool's erasure sets, as indexes into the deployment's sets.
    pub fn sets(&self, set_size: usize) -> Range<usize> {
        self.drives.start / set_size..self.drives.end / set_size
    }
}

impl Shape {
    /// Pools of the given drive counts, in order. The first pool's id is the deployment's (as
    /// for deployments made before pools); `ids` gives the others' where known, and a pool
    /// without one is new and gets a random id.
    pub fn new(
        deployment_id: &str,
        data_shards: usize,
        parity_shards: usize,
        sizes: &[usize],
        mut known_id: impl FnMut(usize) -> Option<String>,
    ) -> Self {
        let mut start = 0;
        let pools = (sizes.iter().enumerate())
            .map(|(index, &size)| {
                let id = match index {
                    0 => deployment_id.to_string(),
                    _ => known_id(index).unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
                };
                let drives = start..start + size;
                start += size;
                PoolShape { id, drives }
            })
            .collect();
        Shape {
            deployment_id: deployment_id.to_string(),
            data_shards,
            parity_shards,
            pools,
        }
    }

    pub fn set_size(&self) -> usize {
        self.data_shards + self.parity_shards
    }

    /// The pool of a drive position.
    pub fn pool_of(&self, position: usize) -> usize {
        (self.pools.iter())
            .position(|pool| pool.drives.contains(&position))
            .expect("every position is in a pool")
    }

    /// The format record of the drive at `position`.
    pub fn format_for(&self, position: usize) -> Format {
        let set_size = self.set_size();
        let pool_index = self.pool_of(position);
        let pool = &self.pools[pool_index];
        let offset = position - pool.drives.start;
        Format {
            version: 1,
            deployment_id: self.deployment_id.clone(),
            set_index: offset / set_size,
            drive_index: offset % set_size,
            set_count: pool.drives.len() / set_size,
            data_shards: self.data_shards,
            parity_shards: self.parity_shards,
            pool_index,
            pool_id: (pool_index > 0).then(|| pool.id.clone()),
        }
    }

    /// The pool list this start records on every drive.
    pub fn list(&self, generation: u64) -> PoolList {
        PoolList {
            generation,
            pools: (self.pools.iter())
                .map(|pool| PoolEntry {
                    id: pool.id.clone(),
                    drives: pool.drives.len(),
                })
                .collect(),
        }
    }

    /// Checks that this start gives every pool `recorded` names, in order and with the
    /// same drives; it may add pools after them.
    pub fn check_extends(&self, recorded: &PoolList) -> anyhow::Result<()> {
        for (index, entry) in recorded.pools.iter().enumerate() {
            let Some(given) = self.pools.get(index) else {
                bail!(
                    "the deployment has {} server pools, but this start gives {}: pool {} ({}) \
                     holds data and must be given (a pool cannot be dropped)",
                    recorded.pools.len(),
                    self.pools.len(),
                    index + 1,
                    entry.id
                );
            };
            if given.id != entry.id || given.drives.len() != entry.drives {
                bail!(
                    "server pool {} was recorded as {} with {} drives, but this start gives {} \
                     drives there{}: pools must be given in their original order, unchanged \
                     (new pools go after them)",
                    index + 1,
                    entry.id,
                    entry.drives,
                    given.drives.len(),
                    match given.id == entry.id {
                        true => String::new(),
                        false => format!(" whose drives belong to pool {}", given.id),
                    }
                );
            }
        }
        Ok(())
    }
}

/// Checks a drive's format record against what its position expects.
pub fn check_format(path: &Path, found: &Format, expected: &Format) -> anyhow::Result<()> {
    if found.deployment_id != expected.deployment_id {
        bail!(
            "drive {} belongs to another deployment ({}, expected {}); \
             remove it from the command line or replace it with an empty folder",
            path.display(),
            found.deployment_id,
            expected.deployment_id
        );
    }
    if found.pool_index != expected.pool_index {
        bail!(
            "drive {} was formatted for server pool {}, but this start gives it in pool {}; \
             pools must be given in their original order",
            path.display(),
            found.pool_index + 1,
            expected.pool_index + 1
        );
    }
    if found.pool_id() != expected.pool_id() {
        bail!(
            "drive {} belongs to server pool {}, but the drives given with it in pool {} \
             belong to pool {}",
            path.display(),
            found.pool_id(),
            expected.pool_index + 1,
            expected.pool_id()
        );
    }
    let geometry = |f: &Format| (f.data_shards, f.parity_shards, f.set_count);
    if geometry(found) != geometry(expected) {
        bail!(
            "drive {} was formatted for {} set(s) of {}+{}, but this start asks for {} \
             set(s) of {}+{}",
            path.display(),
            found.set_count,
            found.data_shards,
            found.parity_shards,
            expected.set_count,
            expected.data_shards,
            expected.parity_shards
        );
    }
    if (found.set_index, found.drive_index) != (expected.set_index, expected.drive_index) {
        bail!(
            "drive {} is given as drive {} of set {}, but it was formatted as drive {} of set {}; \
             drives must be given in their original order",
            path.display(),
            expected.drive_index + 1,
            expected.set_index + 1,
            found.drive_index + 1,
            found.set_index + 1
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(sizes: &[usize], ids: &[&str]) -> Shape {
        Shape::new("dep", 2, 1, sizes, |pool| {
            ids.get(pool).map(|id| id.to_string())
        })
    }

    #[test]
    fn positions_map_to_their_pool_set_and_drive() {
        let shape = shape(&[3, 6], &["dep", "second"]);
        let first = shape.format_for(2);
        assert_eq!(
            (
                first.pool_index,
                first.set_index,
                first.drive_index,
                first.set_count
            ),
            (0, 0, 2, 1)
        );
        assert_eq!(
            first.pool_id, None,
            "the first pool's id is the deployment's"
        );
        let later = shape.format_for(7);
        assert_eq!(
            (
                later.pool_index,
                later.set_index,
                later.drive_index,
                later.set_count
            ),
            (1, 1, 1, 2)
        );
        assert_eq!(later.pool_id(), "second");
        assert_eq!(shape.pools[1].sets(3), 1..3);
    }

    #[test]
    fn a_start_may_add_pools_but_not_drop_or_change_one() {
        let recorded = shape(&[3, 3], &["dep", "second"]).list(4);
        assert!(shape(&[3, 3], &["dep", "second"])
            .check_extends(&recorded)
            .is_ok());
        assert!(shape(&[3, 3, 6], &["dep", "second"])
            .check_extends(&recorded)
            .is_ok());
        let dropped = shape(&[3], &["dep"]).check_extends(&recorded).unwrap_err();
        assert!(
            dropped.to_string().contains("cannot be dropped"),
            "{dropped}"
        );
        let resized = shape(&[3, 6], &["dep", "second"])
            .check_extends(&recorded)
            .unwrap_err();
        assert!(resized.to_string().contains("with 3 drives"), "{resized}");
        let other = shape(&[3, 3], &["dep", "third"])
            .check_extends(&recorded)
            .unwrap_err();
        assert!(
            other.to_string().contains("belong to pool third"),
            "{other}"
        );
    }

    #[test]
    fn a_drive_formatted_for_another_pool_or_place_is_named() {
        let shape = shape(&[3, 3], &["dep", "second"]);
        let path = Path::new("/d");
        let in_second = shape.format_for(4);
        assert!(check_format(path, &in_second, &shape.format_for(4)).is_ok());
        let moved = check_format(path, &in_second, &shape.format_for(1)).unwrap_err();
        assert!(moved.to_string().contains("server pool 2"), "{moved}");
        let swapped = check_format(path, &in_second, &shape.format_for(5)).unwrap_err();
        assert!(swapped.to_string().contains("original order"), "{swapped}");
        let mut foreign = in_second.clone();
        foreign.pool_id = Some("elsewhere".into());
        let foreign = check_format(path, &foreign, &shape.format_for(4)).unwrap_err();
        assert!(
            foreign
                .to_string()
                .contains("belongs to server pool elsewhere"),
            "{foreign}"
        );
    }
}
