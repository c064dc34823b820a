//! The request-level concurrency limit: at most `STRATA_MAX_REQUESTS` S3 requests are served
//! at a time; one more is answered at once with S3's `SlowDown` (503) instead of waiting in a
//! queue, so clients back off and retry (every AWS SDK does) rather than time out. A request
//! counts from its first byte to the end of its response body: a GET's work is in its body.
//! Health probes and metrics scrapes are answered before the limit is looked at.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::http::HeaderMap;
use axum::response::Response;
use hyper::body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tracing::Span;

/// How many requests may be in flight at once.
#[derive(Clone, Debug)]
pub struct RequestLimit {
    permits: Arc<Semaphore>,
    max: usize,
}

/// One request's place under the limit, given back when dropped.
#[derive(Debug)]
pub struct Permit {
    _permit: OwnedSemaphorePermit,
}

impl RequestLimit {
    /// At most `max` requests in flight (at least one).
    pub fn new(max: usize) -> Self {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            permits: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// A place for one more request, or `None` when `max` are in flight: never waits.
    pub fn try_acquire(&self) -> Option<Permit> {
        self.permits
            .clone()
            .try_acquire_owned()
            .ok()
            .map(|permit| Permit { _permit: permit })
    }

    /// The configured maximum.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.max - self.permits.available_permits()
    }
}

/// Keeps a request in flight until its response body has been sent or dropped (a closed
/// connection): the permit stays held, and the request's span is entered while the body is
/// produced (a GET reads its shards then). The body's size hint, and so its `Content-Length`,
/// stays as it was.
pub fn until_sent(response: Response, permit: Option<Permit>, span: Span) -> Response {
    response.map(|body| {
        Body::new(InFlight {
            body,
            span,
            _permit: permit,
        })
    })
}

struct InFlight {
    body: Body,
    span: Span,
    _permit: Option<Permit>,
}

impl HttpBody for InFlight {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let _entered = this.span.enter();
        Pin::new(&mut this.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Whether a request announces a body: refused unread, it leaves the connection unusable for
/// the next request, so the answer closes it.
pub fn announces_body(headers: &HeaderMap) -> bool {
    headers.contains_key("transfer-encoding")
        || headers
            .get("content-length")
            .is_some_and(|v| v.as_bytes() != b"0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_are_refused_beyond_the_limit_and_come_back_with_the_body() {
        let limit = RequestLimit::new(2);
        let a = limit.try_acquire().expect("first");
        let b = limit.try_acquire().expect("second");
        assert!(limit.try_acquire().is_none());
        assert_eq!(limit.in_flight(), 2);
        drop(a);
        assert_eq!(limit.in_flight(), 1);
        let response = until_sent(Response::new(Body::from("hello")), Some(b), Span::none());
        assert_eq!(limit.in_flight(), 1, "held by the body");
        assert_eq!(
            response.body().size_hint().exact(),
            Some(5),
            "Content-Length still known"
        );
        drop(response);
        assert_eq!(limit.in_flight(), 0);
        assert_eq!(RequestLimit::new(0).max(), 1);
    }

    #[test]
    fn bodies_are_announced_by_length_or_chunking() {
        let mut headers = HeaderMap::new();
        assert!(!announces_body(&headers));
        headers.insert("content-length", "0".parse().unwrap());
        assert!(!announces_body(&headers));
        headers.insert("content-length", "12".parse().unwrap());
        assert!(announces_body(&headers));
        let mut chunked = HeaderMap::new();
        chunked.insert("transfer-encoding", "chunked".parse().unwrap());
        assert!(announces_body(&chunked));
    }
}
