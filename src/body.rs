//! Body streams shared by every layer that moves object bytes.

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::{Stream, StreamExt};

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

/// The streams one after another, the next one's first chunk read while the one before is
/// still being consumed. An object made of many short parts (appended segments, small
/// multipart parts) would otherwise wait a whole round of drive reads between parts, since
/// each part's reader reads ahead only within its own part.
pub fn chain_reading_ahead(streams: Vec<ByteStream>) -> ByteStream {
    let mut rest = streams.into_iter();
    let current = rest.next();
    let next = rest.next().map(Next::reading);
    Box::pin(ReadAhead {
        current,
        head: None,
        next,
        rest,
    })
}

struct ReadAhead {
    current: Option<ByteStream>,
    /// The current stream's first chunk, read ahead and not yet yielded.
    head: Option<std::io::Result<Bytes>>,
    next: Option<Next>,
    rest: std::vec::IntoIter<ByteStream>,
}

/// A stream's first chunk, and the stream past it.
type Head = (Option<std::io::Result<Bytes>>, ByteStream);

/// The stream after the current one.
enum Next {
    Reading(Pin<Box<dyn Future<Output = Head> + Send>>),
    Read(Head),
}

impl Next {
    fn reading(mut stream: ByteStream) -> Next {
        Next::Reading(Box::pin(async move {
            let first = stream.next().await;
            (first, stream)
        }))
    }
}

impl Stream for ReadAhead {
    type Item = std::io::Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(chunk) = this.head.take() {
                return Poll::Ready(Some(chunk));
            }
            let Some(current) = this.current.as_mut() else {
                return Poll::Ready(None);
            };
            // Each poll drives the next stream's read along with the current one.
            if let Some(Next::Reading(read)) = &mut this.next {
                if let Poll::Ready(head) = read.as_mut().poll(cx) {
                    this.next = Some(Next::Read(head));
                }
            }
            match current.as_mut().poll_next(cx) {
                Poll::Ready(None) => {}
                other => return other,
            }
            // The current stream is done: the next one takes its place once its head is in.
            match this.next.take() {
                None => {
                    this.current = None;
                    return Poll::Ready(None);
                }
                Some(Next::Read((first, stream))) => {
                    this.head = first;
                    this.current = Some(stream);
                    this.next = this.rest.next().map(Next::reading);
                }
                Some(reading) => {
                    this.next = Some(reading);
                    return Poll::Pending;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    fn chunks(of: &[&'static str]) -> ByteStream {
        let items: Vec<std::io::Result<Bytes>> = of
            .iter()
            .map(|c| Ok(Bytes::from_static(c.as_bytes())))
            .collect();
        Box::pin(futures::stream::iter(items))
    }

    #[tokio::test]
    async fn chained_streams_yield_every_chunk_in_order() {
        let streams = vec![
            chunks(&["a", "b"]),
            chunks(&[]),
            chunks(&["c"]),
            chunks(&["d", "e", "f"]),
        ];
        let all: Vec<Bytes> = chain_reading_ahead(streams)
            .map(|c| c.unwrap())
            .collect()
            .await;
        assert_eq!(all.concat(), b"abcdef");
        assert!(chain_reading_ahead(Vec::new()).next().await.is_none());
    }

    #[tokio::test]
    async fn the_next_stream_is_read_while_the_current_one_is_consumed() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let started = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = started.clone();
        let second: ByteStream = Box::pin(futures::stream::once(async move {
            seen.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = tx.send(());
            Ok(Bytes::from_static(b"2"))
        }));
        // The first stream yields its second chunk only once the second stream has begun.
        let first: ByteStream = Box::pin(
            futures::stream::once(async { Ok(Bytes::from_static(b"1")) }).chain(
                futures::stream::once(async move {
                    rx.await.expect("the second stream began");
                    Ok(Bytes::from_static(b"1"))
                }),
            ),
        );
        let mut chained = chain_reading_ahead(vec![first, second]);
        assert_eq!(chained.next().await.unwrap().unwrap(), "1");
        let waited = tokio::time::timeout(std::time::Duration::from_secs(5), chained.next());
        let second_chunk = waited.await.expect("the second stream was read ahead");
        assert_eq!(second_chunk.unwrap().unwrap(), "1");
        assert!(started.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(chained.next().await.unwrap().unwrap(), "2");
        assert!(chained.next().await.is_none());
    }
}
