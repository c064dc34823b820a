//! Bucket lifecycle rules and the engine that applies them. It acts through the object
//! layer like any other client, never below it.
//!
//! - `rules`: the rules model, parsed from S3's XML or the aws CLI's JSON and checked as S3
//!   checks them.
//! - `evaluate`: the pure evaluator — one version and a clock in, the action due out.
//! - `engine`: the background scanner that applies the rules through the object layer.
//! - `plan`: what the rules ask for now and next, without acting (status and dry runs).
//! - `pace`: how hard the scanner may work, so that clients keep the drives and the CPU.
//! - `walk`: a bucket key by key, each key with its versions: what `engine` and `plan` go over.

pub mod engine;
pub mod evaluate;
pub mod plan;
pub mod rules;
pub mod walk;

#[cfg(test)]
mod tests;

pub use crate::background::pace::{Pace, Pacer};
pub use engine::{LifecycleScanner, LifecycleStatus};
pub use evaluate::{
    abort_upload_rule, evaluate, expiration_of, upcoming, Action, Clock, VersionState,
};
pub use plan::{plan, Plan, Planned};
pub use rules::{LifecycleConfig, RuleError};
