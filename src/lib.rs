//! Strata: an S3-compatible object store that keeps data erasure-coded over local drives.

pub mod admin;
pub mod api;
pub mod background;
pub mod body;
pub mod cluster;
pub mod config;
pub mod console;
pub mod deployment;
pub mod encryption;
pub mod erasure;
pub mod iam;
pub mod kms;
pub mod lifecycle;
pub mod object;
pub mod query;
pub mod records;
pub mod server;
pub mod signing;
pub mod storage;
pub mod tier;
pub mod tls;
pub mod untrusted_xml;
