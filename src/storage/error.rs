use thiserror::Error;

/// What can go wrong on one drive.
#[derive(Debug, Error)]
pub enum DriveError {
    /// The drive is gone: folder removed, format record missing, or marked offline.
    #[error("drive {0} is offline")]
    Offline(String),
    /// A file or record that should exist does not.
    #[error("not found")]
    NotFound,
    /// A file was shorter than its recorded length (truncated shard).
    #[error("short read")]
    ShortRead,
    /// The drive has no space left.
    #[error("drive is full")]
    Full,
    #[error("metadata database: {0}")]
    Database(String),
    #[error(transparent)]
    Io(std::io::Error),
}

impl From<std::io::Error> for DriveError {
    fn from(err: std::io::Error) -> Self {
        match err.kind() {
            std::io::ErrorKind::NotFound => DriveError::NotFound,
            std::io::ErrorKind::StorageFull => DriveError::Full,
            std::io::ErrorKind::UnexpectedEof => DriveError::ShortRead,
            _ => DriveError::Io(err),
        }
    }
}
