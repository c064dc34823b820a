//! What the object layer computes over the bytes it stores: MD5 ETags (several lanes at once
//! for multipart), the checksums S3 clients send and ask for, and the hashing thread that
//! computes them beside an upload.

pub mod checksum;
pub(super) mod hashing;
pub(super) mod md5_lanes;
pub(super) mod parts;
