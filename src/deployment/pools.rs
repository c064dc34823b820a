//! The server pools of a deployment: which drive position belongs to which pool and set, what
//! each drive's format record must say, and the pool list every drive records.
//!
//! A start gives the recorded pools in their order, and may add pools after them; it may
//! leave out a retired pool (one a decommission emptied), never another: a pool's drives
//! hold its keys, and a start without them would answer them absent. Each pool keeps its
//! place in the recorded list for good, so its drives' format records stay true when a pool
//! before it is dropped.

use std::ops::Range;
use std::path::Path;

use anyhow::bail;

use crate::config::PoolSpec;
use crate::object::PoolState;
use crate::storage::{Format, PoolEntry, PoolList, RecordedPoolState};

/// The pools of a deployment as this start gives them, with their ids.
#[derive(Debug, Clone)]
pub struct Shape {
    pub deployment_id: String,
    /// The pools given, in order.
    pub pools: Vec<PoolShape>,
    /// The pool list to record: every pool ever recorded (retired ones left out of this
    /// start included), then the new ones.
    pub list: PoolList,
}

/// One server pool given at this start: its id, its place in the recorded list, its state
/// and where its drives are among this start's positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolShape {
    pub id: String,
    /// Its place in the recorded pool list (what its drives' format records say).
    pub position: usize,
    pub state: PoolState,
    /// Its drive positions (whole sets).
    pub drives: Range<usize>,
    /// Its erasure sets, as indexes into the deployment's sets.
    pub sets: Range<usize>,
    pub data_shards: usize,
    pub parity_shards: usize,
}

impl PoolShape {
    pub fn set_size(&self) -> usize {
        self.data_shards + self.parity_shards
    }
}

impl Shape {
    /// Matches the pools given (their drive counts, in order) with the recorded ones.
    /// `formats` are the drives' format records by position (`None`: blank, missing or
    /// another node's). The first pool ever recorded has the deployment's id; a pool not
    /// recorded is new and gets a random one.
    pub fn plan(
        deployment_id: &str,
        specs: &[PoolSpec],
        formats: &[Option<Format>],
        recorded: &PoolList,
    ) -> anyhow::Result<Self> {
        let mut list = recorded.clone();
        let mut pools: Vec<PoolShape> = Vec::new();
        let mut next = 0;
        let (mut start, mut first_set) = (0, 0);
        for (index, spec) in specs.iter().enumerate() {
            let size = spec.drives;
            let drives = start..start + size;
            start += size;
            let sets = first_set..first_set + size / spec.set_size();
            first_set = sets.end;
            // What the pool's own drives say it is.
            let formatted = (formats[drives.clone()].iter().flatten())
                .map(|f| (f.pool_index, f.pool_id().to_string()))
                .next();
            // Retired pools not given are passed over.
            while let Some(entry) = recorded.pools.get(next) {
                let is_this = formatted.as_ref().is_some_and(|(_, id)| *id == entry.id);
                if entry.state != RecordedPoolState::Retired || is_this {
                    break;
                }
                next += 1;
            }
            // A recorded pool left out (not given anywhere) that is not retired.
            if let (Some(entry), Some((_, id))) = (recorded.pools.get(next), &formatted) {
                let given_elsewhere = formats.iter().flatten().any(|f| f.pool_id() == entry.id);
                let later = recorded.pools[next..].iter().any(|e| e.id == *id);
                if *id != entry.id && later && !given_elsewhere {
                    bail!(
                        "the deployment's server pool {} ({}, {}) holds data and must be given: \
                         a pool leaves a deployment only once a decommission has retired it (a \
                         pool cannot be dropped otherwise)",
                        next + 1,
                        entry.id,
                        entry.state.as_str()
                    );
                }
            }
            let (position, id) = match (recorded.pools.get(next), formatted) {
                (Some(entry), Some((_, id))) if id != entry.id => bail!(
                    "server pool {} as given holds the drives of pool {id}, but the pool \
                     recorded there is {} ({} drives): pools must be given in their original \
                     order, unchanged (new pools go after them)",
                    index + 1,
                    entry.id,
                    entry.drives
                ),
                (Some(entry), _) if entry.drives != size => bail!(
                    "server pool {} ({}) was recorded with {} drives, but this start gives {size} \
                     there: pools must be given in their original order, unchanged",
                    index + 1,
                    entry.id,
                    entry.drives
                ),
                (Some(entry), _) => (next, entry.id.clone()),
                // A new pool (or one whose record a crash kept from being written).
                (None, formatted) => {
                    let position = list.pools.len();
                    let id = match (position, formatted) {
                        (_, Some((_, id))) => id,
                        (0, None) => deployment_id.to_string(),
                        (_, None) => uuid::Uuid::new_v4().to_string(),
                    };
                    list.pools.push(PoolEntry {
                        id: id.clone(),
                        drives: size,
                        state: RecordedPoolState::Active,
                        free: None,
                    });
                    (position, id)
                }
            };
            next = position + 1;
            let state = taken(list.pools[position].state);
            pools.push(PoolShape {
                id,
                position,
                state,
                drives,
                sets,
                data_shards: spec.data_shards,
                parity_shards: spec.parity_shards,
            });
        }
        if let Some((index, missing)) = (recorded.pools.iter().enumerate())
            .skip(next)
            .find(|(_, entry)| entry.state != RecordedPoolState::Retired)
        {
            bail!(
                "the deployment's server pool {} ({}, {}) holds data and must be given: a pool \
                 leaves a deployment only once a decommission has retired it (a pool cannot be \
                 dropped otherwise)",
                index + 1,
                missing.id,
                missing.state.as_str()
            );
        }
        if list.pools != recorded.pools {
            list.generation += 1;
        }
        Ok(Shape {
            deployment_id: deployment_id.to_string(),
            pools,
            list,
        })
    }

    /// The erasure set of a drive position.
    pub fn set_of(&self, position: usize) -> usize {
        let pool = self.pool_of(position);
        pool.sets.start + (position - pool.drives.start) / pool.set_size()
    }

    /// The drive positions of erasure set `set`.
    pub fn set_drives(&self, set: usize) -> Range<usize> {
        let pool = (self.pools.iter())
            .find(|pool| pool.sets.contains(&set))
            .expect("every set is in a pool");
        let start = pool.drives.start + (set - pool.sets.start) * pool.set_size();
        start..start + pool.set_size()
    }

    /// The given pool of a drive position.
    pub fn pool_of(&self, position: usize) -> &PoolShape {
        (self.pools.iter())
            .find(|pool| pool.drives.contains(&position))
            .expect("every position is in a pool")
    }

    /// Whether the pool of a drive position was recorded before this start.
    pub fn is_recorded(&self, position: usize, recorded: &PoolList) -> bool {
        self.pool_of(position).position < recorded.pools.len()
    }

    /// The format record of the drive at `position`.
    pub fn format_for(&self, position: usize) -> Format {
        let pool = self.pool_of(position);
        let set_size = pool.set_size();
        let offset = position - pool.drives.start;
        Format {
            version: 1,
            deployment_id: self.deployment_id.clone(),
            set_index: offset / set_size,
            drive_index: offset % set_size,
            set_count: pool.drives.len() / set_size,
            data_shards: pool.data_shards,
            parity_shards: pool.parity_shards,
            pool_index: pool.position,
            pool_id: (pool.id != self.deployment_id).then(|| pool.id.clone()),
        }
    }
}

/// A recorded state as the object layer takes it.
pub fn taken(state: RecordedPoolState) -> PoolState {
    match state {
        RecordedPoolState::Joining => PoolState::Joining,
        RecordedPoolState::Active => PoolState::Active,
        RecordedPoolState::Decommissioning => PoolState::Decommissioning,
        RecordedPoolState::Retired => PoolState::Retired,
    }
}

/// A state as the pool list records it.
pub fn recorded(state: PoolState) -> RecordedPoolState {
    match state {
        PoolState::Joining => RecordedPoolState::Joining,
        PoolState::Active => RecordedPoolState::Active,
        PoolState::Decommissioning => RecordedPoolState::Decommissioning,
        PoolState::Retired => RecordedPoolState::Retired,
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

    fn format(pool_index: usize, id: &str) -> Option<Format> {
        let shape = Shape::plan(
            "dep",
            &specs(&[3]),
            &[None, None, None],
            &PoolList::default(),
        )
        .unwrap();
        let mut format = shape.format_for(0);
        format.pool_index = pool_index;
        format.pool_id = (id != "dep").then(|| id.to_string());
        Some(format)
    }

    fn recorded_list(pools: &[(&str, usize, RecordedPoolState)]) -> PoolList {
        PoolList {
            generation: 4,
            pools: (pools.iter())
                .map(|&(id, drives, state)| PoolEntry {
                    id: id.into(),
                    drives,
                    state,
                    free: None,
                })
                .collect(),
        }
    }

    /// Formats for `sizes` pools given, each pool's first drive formatted as `ids` says
    /// (`None`: blank).
    fn formats(sizes: &[usize], ids: &[Option<(usize, &str)>]) -> Vec<Option<Format>> {
        let mut out = Vec::new();
        for (size, id) in sizes.iter().zip(ids) {
            out.push(id.and_then(|(index, id)| format(index, id)));
            out.extend((1..*size).map(|_| None));
        }
        out
    }

    /// Pools of `drives` each, at 2+1.
    fn specs(drives: &[usize]) -> Vec<PoolSpec> {
        (drives.iter())
            .map(|&drives| PoolSpec {
                drives,
                data_shards: 2,
                parity_shards: 1,
            })
            .collect()
    }

    const ACTIVE: RecordedPoolState = RecordedPoolState::Active;
    const RETIRED: RecordedPoolState = RecordedPoolState::Retired;

    #[test]
    fn positions_map_to_their_pool_set_and_drive() {
        let list = recorded_list(&[("dep", 3, ACTIVE), ("second", 6, ACTIVE)]);
        let given = formats(&[3, 6], &[Some((0, "dep")), Some((1, "second"))]);
        let shape = Shape::plan("dep", &specs(&[3, 6]), &given, &list).unwrap();
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
        assert_eq!(shape.pools[1].sets, 1..3);
        assert_eq!((shape.set_of(7), shape.set_drives(2)), (2, 6..9));
        assert_eq!(shape.list, list, "nothing new to record");
    }

    #[test]
    fn a_start_may_add_pools_but_not_drop_or_change_one() {
        let list = recorded_list(&[("dep", 3, ACTIVE), ("second", 3, ACTIVE)]);
        let both = formats(&[3, 3], &[Some((0, "dep")), Some((1, "second"))]);
        assert!(Shape::plan("dep", &specs(&[3, 3]), &both, &list).is_ok());
        let grown = formats(&[3, 3, 6], &[Some((0, "dep")), Some((1, "second")), None]);
        let shape = Shape::plan("dep", &specs(&[3, 3, 6]), &grown, &list).unwrap();
        assert_eq!((shape.list.generation, shape.list.pools.len()), (5, 3));
        assert_eq!(shape.pools[2].position, 2);

        let first = formats(&[3], &[Some((0, "dep"))]);
        let dropped = Shape::plan("dep", &specs(&[3]), &first, &list).unwrap_err();
        assert!(
            dropped.to_string().contains("cannot be dropped"),
            "{dropped}"
        );
        let resized = formats(&[3, 6], &[Some((0, "dep")), Some((1, "second"))]);
        let resized = Shape::plan("dep", &specs(&[3, 6]), &resized, &list).unwrap_err();
        assert!(resized.to_string().contains("with 3 drives"), "{resized}");
        let swapped = formats(&[3, 3], &[Some((1, "second")), Some((0, "dep"))]);
        let swapped = Shape::plan("dep", &specs(&[3, 3]), &swapped, &list).unwrap_err();
        assert!(swapped.to_string().contains("original order"), "{swapped}");
    }

    #[test]
    fn a_retired_pool_may_be_left_out_and_keeps_its_place() {
        let list = recorded_list(&[("dep", 3, RETIRED), ("second", 3, ACTIVE)]);
        let without = formats(&[3], &[Some((1, "second"))]);
        let shape = Shape::plan("dep", &specs(&[3]), &without, &list).unwrap();
        assert_eq!(
            (shape.pools[0].id.as_str(), shape.pools[0].position),
            ("second", 1)
        );
        assert_eq!(
            shape.format_for(1).pool_index,
            1,
            "its drives' records stay true"
        );
        assert_eq!(shape.list, list, "the retired pool stays recorded");
        let with = formats(&[3, 3], &[Some((0, "dep")), Some((1, "second"))]);
        let shape = Shape::plan("dep", &specs(&[3, 3]), &with, &list).unwrap();
        assert_eq!(shape.pools[0].state, PoolState::Retired);
        let draining = recorded_list(&[
            ("dep", 3, RecordedPoolState::Decommissioning),
            ("second", 3, ACTIVE),
        ]);
        let early = Shape::plan("dep", &specs(&[3]), &without, &draining).unwrap_err();
        assert!(early.to_string().contains("decommissioning"), "{early}");
    }

    #[test]
    fn a_drive_formatted_for_another_pool_or_place_is_named() {
        let list = recorded_list(&[("dep", 3, ACTIVE), ("second", 3, ACTIVE)]);
        let given = formats(&[3, 3], &[Some((0, "dep")), Some((1, "second"))]);
        let shape = Shape::plan("dep", &specs(&[3, 3]), &given, &list).unwrap();
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
