//! Body streams shared by every layer that moves object bytes.

use std::pin::Pin;
use std::sync::OnceLock;

use bytes::Bytes;
use futures::Stream;

/// A stream of body bytes. Errors end the stream; a verifying wrapper reports a failed check
/// as an error on its last poll, so a consumer never commits a body that did not verify.
pub type ByteStream = Pin<Box<dyn Stream<Item = std::io::Result<Bytes>> + Send>>;

/// Trailing headers of an `aws-chunked` body (names lower-cased), filled by the decoder
/// before it yields the end of the stream.
#[derive(Debug, Default)]
pub struct TrailerSlot(OnceLock<Vec<(String, String)>>);

impl TrailerSlot {
    /// Stores the trailers; only the first call has an effect.
    pub fn set(&self, trailers: Vec<(String, String)>) {
        let _ = self.0.set(trailers);
    }

    /// The value of one trailer, once the body has been read to its end.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get()?
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}
