//! Distributed mode: which node serves which drive, and how the drives form erasure sets.

pub mod control;
pub mod drive_service;
pub mod etcd;
pub mod layout;
pub mod pools;
pub mod seal;
pub mod throttle;
