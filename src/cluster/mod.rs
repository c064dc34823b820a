//! Distributed mode: which node serves which drive, and how the drives form erasure sets.

pub mod layout;
