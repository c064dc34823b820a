//! The operator's view of a running server: health endpoints for load balancers, the admin
//! API (sets, drives, heal passes) and the `strata admin` command line that calls it.

pub mod api;
pub mod cli;
pub mod health;
pub mod pools;
