//! Body streams of exactly the announced size: a tier must store (and give back) the bytes
//! it was told about, never a prefix of them or more.

use std::io;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;

use crate::body::ByteStream;

/// Why an exact-size stream failed: its source's own error, or a wrong length. Kept beside the
/// stream because the consumer (an HTTP client, the object layer) may wrap or replace the
/// error it saw.
#[derive(Clone, Default)]
pub(crate) struct BodyFault(Arc<OnceLock<String>>);

impl BodyFault {
    fn set(&self, reason: String) {
        let _ = self.0.set(reason);
    }

    /// What went wrong with the body, if anything did.
    pub(crate) fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

/// Passes `body` through, failing with an error as soon as it yields more than `size` bytes or
/// ends before `size`; the failure is also recorded in the returned `BodyFault`.
pub(crate) fn exact_size(body: ByteStream, size: u64) -> (ByteStream, BodyFault) {
    let fault = BodyFault::default();
    let recorder = fault.clone();
    let stream = futures::stream::unfold(Some((body, 0u64)), move |state| {
        let fault = recorder.clone();
        async move {
            let (mut body, seen) = state?;
            match next_checked(&mut body, seen, size).await {
                Ok(None) => None,
                Ok(Some((chunk, seen))) if seen == size => Some((Ok(chunk), None)),
                Ok(Some((chunk, seen))) => Some((Ok(chunk), Some((body, seen)))),
                Err((kind, reason)) => {
                    fault.set(reason.clone());
                    Some((Err(io::Error::new(kind, reason)), None))
                }
            }
        }
    });
    (Box::pin(stream), fault)
}

/// The next chunk of `body` and the bytes seen with it, `None` at a correct end. The chunk
/// that completes `size` comes only once the source is known to end there: a consumer that
/// knows the length (an HTTP client sending `Content-Length`) stops reading at that point and
/// would never see the excess.
async fn next_checked(
    body: &mut ByteStream,
    seen: u64,
    size: u64,
) -> Result<Option<(Bytes, u64)>, (io::ErrorKind, String)> {
    let longer = || {
        (
            io::ErrorKind::InvalidData,
            format!("body is longer than the announced {size} bytes"),
        )
    };
    let chunk = match body.next().await {
        None if seen == size => return Ok(None),
        None => {
            return Err((
                io::ErrorKind::UnexpectedEof,
                format!("body ended after {seen} of the announced {size} bytes"),
            ))
        }
        Some(Err(e)) => return Err((e.kind(), format!("body: {e}"))),
        Some(Ok(chunk)) => chunk,
    };
    let seen = seen + chunk.len() as u64;
    if seen > size {
        return Err(longer());
    }
    if seen == size {
        loop {
            match body.next().await {
                None => break,
                Some(Ok(more)) if more.is_empty() => continue,
                Some(Ok(_)) => return Err(longer()),
                Some(Err(e)) => return Err((e.kind(), format!("body: {e}"))),
            }
        }
    }
    Ok(Some((chunk, seen)))
}

/// Passes `body` through, failing with `TimedOut` when no chunk arrives for `idle`: a stalled
/// peer must not hold a reader forever, while a slow but moving transfer is never cut.
pub(crate) fn idle_limited(body: ByteStream, idle: Duration) -> ByteStream {
    let stream = futures::stream::unfold(Some(body), move |body| async move {
        let mut body = body?;
        match tokio::time::timeout(idle, body.next()).await {
            Ok(Some(item)) => Some((item, Some(body))),
            Ok(None) => None,
            Err(_) => Some((
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no data for {idle:?}"),
                )),
                None,
            )),
        }
    });
    Box::pin(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body made of `bytes`, in chunks of `chunk` bytes.
    fn chunked(bytes: &[u8], chunk: usize) -> ByteStream {
        let chunks: Vec<io::Result<Bytes>> = bytes
            .chunks(chunk)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        Box::pin(futures::stream::iter(chunks))
    }

    async fn drain(mut body: ByteStream) -> Result<Vec<u8>, io::Error> {
        let mut out = Vec::new();
        while let Some(chunk) = body.next().await {
            out.extend_from_slice(&chunk?);
        }
        Ok(out)
    }

    #[tokio::test]
    async fn exact_bodies_pass_and_wrong_lengths_fail() {
        let data = vec![7u8; 1000];
        let (body, fault) = exact_size(chunked(&data, 300), 1000);
        assert_eq!(drain(body).await.unwrap(), data);
        assert!(fault.get().is_none());

        let (body, fault) = exact_size(chunked(&data, 300), 999);
        assert!(drain(body).await.is_err());
        assert!(fault.get().unwrap().contains("longer"));

        let (body, fault) = exact_size(chunked(&data, 300), 1001);
        assert!(drain(body).await.is_err());
        assert!(fault.get().unwrap().contains("1000 of the announced 1001"));

        // The excess shows in the chunk that completes the size, for readers that stop there.
        let (mut body, fault) = exact_size(chunked(&data, 500), 500);
        assert!(body.next().await.unwrap().is_err());
        assert!(fault.get().unwrap().contains("longer"));
        let (mut body, _) = exact_size(chunked(&data, 1000), 0);
        assert!(body.next().await.unwrap().is_err());

        let (body, fault) = exact_size(chunked(&[], 1), 0);
        assert!(drain(body).await.unwrap().is_empty());
        assert!(fault.get().is_none());
    }

    #[tokio::test]
    async fn source_errors_are_recorded() {
        let broken: ByteStream = Box::pin(futures::stream::iter([
            Ok(Bytes::from_static(b"abc")),
            Err(io::Error::other("disk gone")),
        ]));
        let (body, fault) = exact_size(broken, 10);
        assert!(drain(body).await.is_err());
        assert!(fault.get().unwrap().contains("disk gone"));
    }

    #[tokio::test]
    async fn stalled_bodies_time_out() {
        let stalled: ByteStream = Box::pin(
            futures::stream::iter([Ok(Bytes::from_static(b"abc"))])
                .chain(futures::stream::pending()),
        );
        let mut body = idle_limited(stalled, Duration::from_millis(50));
        assert_eq!(&body.next().await.unwrap().unwrap()[..], b"abc");
        let err = body.next().await.unwrap().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(body.next().await.is_none());
    }
}
