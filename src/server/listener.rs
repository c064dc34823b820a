//! Serving: the listening socket and every connection on it — plain TCP or TLS, HTTP/1.1 or
//! HTTP/2, connection caps in all and per client, the request-head and idle deadlines, the
//! least upload rate, and the graceful shutdown that lets requests in flight finish.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::config::ListenerConfig;
use crate::tls;

/// Accepts connections until SIGINT/SIGTERM, then stops accepting (the port is closed), lets
/// every open connection finish the requests it has in flight and closes it, and returns once
/// all are closed or `shutdown_grace` has passed.
pub(super) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    certificates: Option<Arc<tls::Certificates>>,
    limits: ListenerConfig,
    signal: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let tls = match &certificates {
        Some(certificates) => Some(TlsAcceptor::from(certificates.server_config()?)),
        None => None,
    };
    let grace = limits.shutdown_grace;
    let connections = Arc::new(Connections::new(
        limits.max_connections,
        limits.max_connections_per_client,
    ));
    let shared = Arc::new(Listening {
        router,
        tls,
        limits,
    });
    // Every connection task holds a receiver of `open`: `open_tx.closed()` is the drain.
    let (stop_tx, stop_rx) = watch::channel(false);
    let (open_tx, open_rx) = watch::channel(());
    let mut signal = pin!(signal);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut signal => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of file descriptors and the like: wait instead of spinning.
                tracing::error!("accepting connections: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        // Beyond the caps the connection closes at once, before it costs anything.
        let Some(admitted) = Connections::admit(&connections, peer.ip()) else {
            tracing::debug!(%peer, "too many connections; closing");
            continue;
        };
        let shared = shared.clone();
        let stop = stop_rx.clone();
        let open = open_rx.clone();
        tokio::spawn(async move {
            serve_connection(stream, peer, &shared, stop).await;
            drop((open, admitted));
        });
    }
    drop(listener);
    drop(open_rx);
    stop_tx.send_replace(true);
    let open = open_tx.receiver_count();
    if open > 0 {
        tracing::info!(
            "no longer accepting connections; waiting up to {}s for {open} open connection(s)",
            grace.as_secs()
        );
        if tokio::time::timeout(grace, open_tx.closed()).await.is_err() {
            tracing::warn!(
                "{} connection(s) still busy after {}s (STRATA_SHUTDOWN_GRACE_SECS); closing them",
                open_tx.receiver_count(),
                grace.as_secs()
            );
        }
    }
    Ok(())
}

/// Open connections, in all and per client address, under their caps.
struct Connections {
    max: usize,
    max_per_client: usize,
    open: std::sync::Mutex<(usize, std::collections::HashMap<std::net::IpAddr, usize>)>,
}

/// The client a connection counts against: its IPv4 address, or its IPv6 /64. A host is
/// given a whole /64, so counting each of its 2^64 addresses apart would cap nothing.
fn client_of(address: std::net::IpAddr) -> std::net::IpAddr {
    match address {
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.into(),
            None => std::net::Ipv6Addr::from(v6.to_bits() & !u128::from(u64::MAX)).into(),
        },
        v4 => v4,
    }
}

/// One open connection's place, given back when dropped.
struct Admitted {
    connections: Arc<Connections>,
    client: std::net::IpAddr,
}

impl Connections {
    fn new(max: usize, max_per_client: usize) -> Self {
        Self {
            max,
            max_per_client,
            open: Default::default(),
        }
    }

    /// A place for one more connection from `address`, if both caps allow it.
    fn admit(this: &Arc<Self>, address: std::net::IpAddr) -> Option<Admitted> {
        let client = client_of(address);
        let mut open = this.open.lock().expect("connections lock");
        let (total, per_client) = &mut *open;
        let of_client = per_client.entry(client).or_insert(0);
        if *total >= this.max || *of_client >= this.max_per_client {
            if *of_client == 0 {
                per_client.remove(&client);
            }
            return None;
        }
        *of_client += 1;
        *total += 1;
        Some(Admitted {
            connections: this.clone(),
            client,
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.connections.open.lock().expect("connections lock");
        let (total, per_client) = &mut *open;
        *total -= 1;
        if let Some(count) = per_client.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                per_client.remove(&self.client);
            }
        }
    }
}

/// What every connection task shares.
struct Listening {
    router: axum::Router,
    tls: Option<TlsAcceptor>,
    limits: ListenerConfig,
}

/// Errors of one incoming connection, not of the listener.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// The answer to plain HTTP sent to the HTTPS port (as Go's servers give it).
const PLAIN_HTTP_TO_HTTPS: &[u8] = b"HTTP/1.1 400 Bad Request\r\n\
    Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: 48\r\n\r\n\
    Client sent an HTTP request to an HTTPS server.\n";

/// Serves one connection: TLS handshake (if any), then HTTP/1.1 or HTTP/2 until the client
/// leaves, a limit closes it, or the server shuts down.
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Listening,
    mut stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let limits = &shared.limits;
    let opened = tokio::select! {
        opened = tokio::time::timeout(limits.header_read_timeout, open_stream(stream, shared)) => opened,
        _ = stop.changed() => return,
    };
    let (stream, http2) = match opened {
        Ok(Ok(Some(opened))) => opened,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => {
            tracing::debug!(%peer, "connection setup failed: {e}");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "no request or TLS handshake in time; closing the connection");
            return;
        }
    };
    let activity = Arc::new(Activity::new(!http2));
    let io = TokioIo::new(Tracked {
        inner: stream,
        activity: activity.clone(),
    });
    let handler = Handler {
        router: shared.router.clone(),
        activity: activity.clone(),
        peer,
        pace: (limits.min_upload_rate, limits.min_upload_rate_grace),
    };
    if http2 {
        let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        builder.max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX));
        let conn = builder.serve_connection(io, handler);
        drive(conn, &activity, limits, stop, peer).await;
    } else {
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .max_header_size(limits.max_header_bytes)
            .max_headers(limits.max_headers)
            // The request head deadline is `Activity`'s (hyper's would also cut idle
            // keep-alive connections at the same deadline).
            .header_read_timeout(None);
        let conn = builder.serve_connection(io, handler);
        drive(conn, &activity, limits, stop, peer).await;
    }
}

/// Any byte stream a connection is served over (TCP, TLS over TCP).
trait ByteStream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> ByteStream for T {}

/// Reads the first bytes (to tell TLS from plain HTTP and HTTP/2 from HTTP/1.1) and does the
/// TLS handshake. `None`: the client left, or spoke plain HTTP to the HTTPS port.
async fn open_stream(
    mut stream: TcpStream,
    shared: &Listening,
) -> std::io::Result<Option<(Box<dyn ByteStream>, bool)>> {
    match &shared.tls {
        Some(acceptor) => {
            let first = sniff(&mut stream, |b| !b.is_empty()).await?;
            if first.is_empty() {
                return Ok(None);
            }
            // A TLS connection starts with a handshake record (content type 22).
            if first[0] != 0x16 {
                let _ = stream.write_all(PLAIN_HTTP_TO_HTTPS).await;
                let _ = stream.shutdown().await;
                // Read what the client still sends so the close does not reset the answer away.
                let mut sink = [0u8; 4096];
                let drain =
                    async { while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {} };
                let _ = tokio::time::timeout(Duration::from_millis(500), drain).await;
                return Ok(None);
            }
            let tls = acceptor.accept(Prefixed::new(first, stream)).await?;
            let http2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            Ok(Some((Box::new(tls), http2)))
        }
        None => {
            // HTTP/2 with prior knowledge starts with "PRI * HTTP/2.0".
            let first = sniff(&mut stream, |b| b.len() >= 3 || !b"PRI".starts_with(b)).await?;
            if first.is_empty() {
                return Ok(None);
            }
            let http2 = first.starts_with(b"PRI");
            Ok(Some((Box::new(Prefixed::new(first, stream)), http2)))
        }
    }
}

/// Reads until `enough` says so or the client closes; returns what was read.
async fn sniff(stream: &mut TcpStream, enough: impl Fn(&[u8]) -> bool) -> std::io::Result<Vec<u8>> {
    let mut read = Vec::with_capacity(16);
    let mut chunk = [0u8; 16];
    while !enough(&read) {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        read.extend_from_slice(&chunk[..n]);
    }
    Ok(read)
}

/// A stream whose first bytes were already read: they are read again first.
struct Prefixed<S> {
    prefix: Vec<u8>,
    at: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    fn new(prefix: Vec<u8>, inner: S) -> Self {
        Prefixed {
            prefix,
            at: 0,
            inner,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.at < this.prefix.len() {
            let n = (this.prefix.len() - this.at).min(buf.remaining());
            buf.put_slice(&this.prefix[this.at..this.at + n]);
            this.at += n;
            if this.at == this.prefix.len() {
                this.prefix = Vec::new();
                this.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// What one connection is doing, for its deadlines: when bytes last moved, whether a request
/// head is on its way, how many requests are being handled and how many of those wait for
/// the client's body. Times are milliseconds since `origin`, plus one (0 = never).
struct Activity {
    origin: Instant,
    /// HTTP/1: bytes arriving while no request is handled start a request head.
    http1: bool,
    last_io: AtomicU64,
    head_since: AtomicU64,
    handling: AtomicUsize,
    body_waits: AtomicUsize,
}

/// Why a connection is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deadline {
    /// A request head (or the rest of it) did not arrive within the header timeout.
    Head,
    /// Nothing moved within the idle timeout, and no request is being handled.
    Idle,
    /// A request waits for the client's body, and nothing came within the idle timeout.
    Body,
}

impl Activity {
    fn new(http1: bool) -> Self {
        Activity {
            origin: Instant::now(),
            http1,
            last_io: AtomicU64::new(1),
            head_since: AtomicU64::new(0),
            handling: AtomicUsize::new(0),
            body_waits: AtomicUsize::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    fn on_read(&self) {
        let now = self.now();
        self.last_io.store(now, Ordering::Relaxed);
        if self.http1
            && self.handling.load(Ordering::Relaxed) == 0
            && self.body_waits.load(Ordering::Relaxed) == 0
        {
            let _ = self
                .head_since
                .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    fn on_write(&self) {
        self.last_io.store(self.now(), Ordering::Relaxed);
    }

    /// A request head was parsed and its handler runs until the guard drops.
    fn request_started(self: &Arc<Self>) -> HandlingGuard {
        self.handling.fetch_add(1, Ordering::Relaxed);
        self.head_since.store(0, Ordering::Relaxed);
        HandlingGuard(self.clone())
    }

    /// The deadline this connection has passed, if any.
    fn overdue(&self, limits: &ListenerConfig) -> Option<Deadline> {
        let now = self.now();
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let handling = self.handling.load(Ordering::Relaxed);
        let body_waits = self.body_waits.load(Ordering::Relaxed);
        let head_since = self.head_since.load(Ordering::Relaxed);
        if handling == 0
            && head_since != 0
            && now.saturating_sub(head_since) >= millis(limits.header_read_timeout)
        {
            return Some(Deadline::Head);
        }
        // While a handler works (and does not wait for the client) silence is the server's.
        if (handling == 0 || body_waits > 0)
            && now.saturating_sub(self.last_io.load(Ordering::Relaxed))
                >= millis(limits.idle_timeout)
        {
            return Some(if body_waits > 0 {
                Deadline::Body
            } else {
                Deadline::Idle
            });
        }
        None
    }
}

struct HandlingGuard(Arc<Activity>);

impl Drop for HandlingGuard {
    fn drop(&mut self) {
        self.0.handling.fetch_sub(1, Ordering::Relaxed);
        self.0.head_since.store(0, Ordering::Relaxed);
        self.0.on_write();
    }
}

/// The connection's byte stream, noting in `activity` when bytes move.
struct Tracked {
    inner: Box<dyn ByteStream>,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.on_read();
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.on_write();
        }
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.on_write();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// A request body that notes in `activity` while its reader waits for the client.
struct TrackedBody {
    inner: Incoming,
    activity: Arc<Activity>,
    waiting: bool,
    pace: UploadPace,
}

/// How fast a request body arrives: one that averages less than the minimum rate (from the
/// first time it is read, once a grace period has passed) is cut off, so that a client
/// cannot hold a request slot for ever by sending a byte now and then.
struct UploadPace {
    min_rate: u64,
    grace: Duration,
    since: Option<Instant>,
    received: u64,
}

impl UploadPace {
    /// Whether the body is still fast enough after `bytes` more arrived.
    fn keeps_up(&mut self, bytes: u64) -> bool {
        let since = *self.since.get_or_insert_with(Instant::now);
        self.received += bytes;
        let elapsed = since.elapsed();
        elapsed <= self.grace
            || self.received as f64 >= self.min_rate as f64 * elapsed.as_secs_f64()
    }
}

impl TrackedBody {
    fn set_waiting(&mut self, waiting: bool) {
        if waiting != self.waiting {
            self.waiting = waiting;
            if waiting {
                self.activity.body_waits.fetch_add(1, Ordering::Relaxed);
            } else {
                self.activity.body_waits.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

impl hyper::body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, axum::BoxError>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        this.set_waiting(polled.is_pending());
        let bytes = match &polled {
            Poll::Ready(Some(Ok(frame))) => frame.data_ref().map_or(0, |d| d.len() as u64),
            _ => return polled.map_err(Into::into),
        };
        if this.pace.min_rate > 0 && !this.pace.keeps_up(bytes) {
            let slow = crate::api::error::S3Error::from_code(
                crate::api::error::S3ErrorCode::RequestTimeout,
            );
            return Poll::Ready(Some(Err(Box::new(slow))));
        }
        polled.map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for TrackedBody {
    fn drop(&mut self) {
        self.set_waiting(false);
    }
}

/// The router as a hyper service of one connection.
#[derive(Clone)]
struct Handler {
    router: axum::Router,
    activity: Arc<Activity>,
    /// The client's address, for policies that name one (`aws:SourceIp`).
    peer: SocketAddr,
    /// The least rate of a request body, in bytes per second, and the grace before it counts.
    pace: (u64, Duration),
}

impl hyper::service::Service<Request<Incoming>> for Handler {
    type Response = axum::response::Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let guard = self.activity.request_started();
        let activity = self.activity.clone();
        let (min_rate, grace) = self.pace;
        let mut request = request.map(|inner| {
            axum::body::Body::new(TrackedBody {
                inner,
                activity,
                waiting: false,
                pace: UploadPace {
                    min_rate,
                    grace,
                    since: None,
                    received: 0,
                },
            })
        });
        request
            .extensions_mut()
            .insert(axum::extract::ConnectInfo(self.peer));
        let mut router = self.router.clone();
        let response = tower::Service::call(&mut router, request);
        Box::pin(async move {
            let response = response.await;
            drop(guard);
            response
        })
    }
}

type Connection = TokioIo<Tracked>;

/// A hyper connection that can be asked to finish its requests and close.
trait GracefulConnection: Future<Output = hyper::Result<()>> {
    fn begin_shutdown(self: Pin<&mut Self>);
}

impl GracefulConnection for hyper::server::conn::http1::Connection<Connection, Handler> {
    fn begin_shutdown(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl GracefulConnection
    for hyper::server::conn::http2::Connection<Connection, Handler, TokioExecutor>
{
    fn begin_shutdown(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// Runs `conn` to its end, applying the deadlines and the server's shutdown: idle connections
/// and shutting-down ones finish their requests and close; a late request head or a stalled
/// client is cut off at once.
async fn drive<C: GracefulConnection>(
    conn: C,
    activity: &Activity,
    limits: &ListenerConfig,
    mut stop: watch::Receiver<bool>,
    peer: SocketAddr,
) {
    let mut conn = pin!(conn);
    let tick = (limits.header_read_timeout.min(limits.idle_timeout) / 4)
        .clamp(Duration::from_millis(100), Duration::from_secs(1));
    let mut ticker = tokio::time::interval(tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut closing = false;
    let mut stopping = *stop.borrow_and_update();
    if stopping {
        closing = true;
        conn.as_mut().begin_shutdown();
    }
    loop {
        tokio::select! {
            ended = conn.as_mut() => {
                if let Err(e) = ended {
                    tracing::debug!(%peer, "connection ended: {e}");
                }
                return;
            }
            _ = stop.changed(), if !stopping => {
                stopping = true;
                if !closing {
                    closing = true;
                    conn.as_mut().begin_shutdown();
                }
            }
            _ = ticker.tick() => match activity.overdue(limits) {
                None => {}
                Some(Deadline::Idle) if !closing => {
                    closing = true;
                    conn.as_mut().begin_shutdown();
                }
                Some(deadline) => {
                    tracing::debug!(%peer, ?deadline, "closing a connection past its deadline");
                    return;
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    /// One host's /64 shares one per-client cap, however many of its addresses it uses; a
    /// neighbouring /64 and IPv4 clients have their own.
    #[test]
    fn ipv6_clients_are_capped_by_their_64() {
        let connections = Arc::new(Connections::new(100, 2));
        let first = Connections::admit(&connections, ip("2001:db8:1:2::1")).expect("first");
        let _second = Connections::admit(&connections, ip("2001:db8:1:2:ffff::9")).expect("second");
        assert!(Connections::admit(&connections, ip("2001:db8:1:2:abcd::1")).is_none());
        let _neighbour =
            Connections::admit(&connections, ip("2001:db8:1:3::1")).expect("other /64");
        let _v4 = Connections::admit(&connections, ip("192.0.2.1")).expect("an IPv4 client");
        // An IPv4 client reached over a dual-stack socket is the same client.
        let _mapped = Connections::admit(&connections, ip("::ffff:192.0.2.1")).expect("mapped");
        assert!(Connections::admit(&connections, ip("192.0.2.1")).is_none());
        drop(first);
        Connections::admit(&connections, ip("2001:db8:1:2::77")).expect("a place given back");
    }
}
