//! Healing what a set's drives hold: objects (their records and shards) and uploads in
//! progress brought back to every drive, and what deleted keys left behind purged.

pub(super) mod objects;
mod orphans;
pub(super) mod purge;
pub(super) mod uploads;
