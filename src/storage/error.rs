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
    /// The drive joined its set blank (an empty folder formatted into its place, or a
    /// metadata database made anew) and no heal pass has completed over it since: it cannot
    /// tell that a record is absent, nor list what its set holds, so it answers this instead.
    #[error("drive {0} has not been healed since it joined blank; it cannot vouch for absence")]
    Unhealed(String),
    /// A file was shorter than its recorded length (truncated shard).
    #[error("short read")]
    ShortRead,
    /// A batch's [`MetaOp::Expect`](super::MetaOp::Expect) did not hold: another writer
    /// changed the key since it was read. Nothing was applied.
    #[error("conflict: the record changed since it was read")]
    Conflict,
    /// The drive has no space left.
    #[error("drive is full")]
    Full,
    #[error("metadata database: {0}")]
    Database(String),
    #[error(transparent)]
    Io(std::io::Error),
}

impl DriveError {
    /// The same error, for a second caller (I/O errors do not clone: their kind and message
    /// are kept).
    pub fn copied(&self) -> DriveError {
        match self {
            DriveError::Offline(label) => DriveError::Offline(label.clone()),
            DriveError::NotFound => DriveError::NotFound,
            DriveError::Unhealed(label) => DriveError::Unhealed(label.clone()),
            DriveError::ShortRead => DriveError::ShortRead,
            DriveError::Conflict => DriveError::Conflict,
            DriveError::Full => DriveError::Full,
            DriveError::Database(message) => DriveError::Database(message.clone()),
            DriveError::Io(io) => DriveError::Io(std::io::Error::new(io.kind(), io.to_string())),
        }
    }
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
