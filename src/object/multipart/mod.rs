//! Multipart uploads: creating, uploading parts to, completing and aborting an upload, and
//! listing the uploads in progress.

pub(super) mod list;
pub(super) mod upload;
