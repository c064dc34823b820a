//! A drive of another node: the [`Drive`](super::Drive) trait over an internal,
//! authenticated RPC, so that an erasure set can span nodes without knowing it.
//!
//! This module owns the protocol (paths, msgpack shapes, the shard stream's frames, how every
//! [`DriveError`](super::DriveError) travels), its authentication, and the client side,
//! [`RemoteDrive`]. Serving drives to peers is the web stack's job and lives above the
//! layers (`crate::cluster::drive_service`), built from these same definitions.
//!
//! Metadata calls are one request each. A shard file's writes and its finish are one
//! streaming request, answered only after the serving node's fdatasync. Reads of a shard
//! file are ranged requests.

pub mod auth;
mod client;
pub mod frame;
mod liveness;
pub mod protocol;

pub use auth::{AuthError, ClusterAuth, NonceCache};
pub use client::RemoteDrive;
pub use liveness::{NodeLiveness, PING_EVERY};
