//! Versions of a key: which version the drives of its set agree on, every version of a key in
//! a versioned bucket with its delete markers, and their listing.

pub(super) mod agreed;
pub(super) mod list;
pub(super) mod versioning;
