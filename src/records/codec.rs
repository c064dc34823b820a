//! How a record is stored: a format version byte, then the record as named MessagePack (new
//! fields with serde defaults read back from older copies).

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::RecordError;

/// The format byte every stored record starts with.
const RECORD_VERSION: u8 = 1;

pub fn encode<T: Serialize>(record: &T) -> Vec<u8> {
    let mut out = vec![RECORD_VERSION];
    out.extend(rmp_serde::to_vec_named(record).expect("records serialise"));
    out
}

pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, RecordError> {
    match bytes.split_first() {
        Some((&RECORD_VERSION, body)) => {
            rmp_serde::from_slice(body).map_err(|e| RecordError::Undecodable(e.to_string()))
        }
        _ => Err(RecordError::Undecodable("unknown record version".into())),
    }
}
