//! A network between cluster nodes that a test can cut. Each node sends everything it sends
//! to the other nodes and to etcd through its own forwarding proxy (`HTTP_PROXY`, which the
//! node's HTTP clients follow, as Go's and most others do), so the proxy knows whose traffic it
//! carries and where it goes: a link from one node to another can be cut in one direction.
//! A cut link refuses nothing: requests on it, and answers still streaming, hang, as packets
//! to a host across a partition vanish, and the nodes must find out by their own timeouts.
//! An isolated node reaches nothing (etcd included) and nothing reaches it.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};
use http_body_util::{combinators::BoxBody, BodyExt, BodyStream, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use tokio::sync::watch;

/// Headers that belong to one hop, not forwarded.
const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "upgrade",
];

/// The proxies, one per node, and which nodes are cut off.
pub struct Network {
    state: Arc<State>,
    proxy_ports: Vec<u16>,
    /// Dropped with the network: the proxies' thread (apart from the test's runtime, which
    /// may be blocked in a sync wait) then ends.
    _stop: tokio::sync::oneshot::Sender<()>,
}

struct State {
    /// Each node's addresses (`host:port`), as others reach it.
    addresses: Vec<Vec<String>>,
    /// Nodes that reach nothing, and that nothing reaches.
    isolated: Mutex<HashSet<usize>>,
    /// Nodes that reach the other nodes but nothing else (etcd).
    only_nodes: Mutex<HashSet<usize>>,
    /// Bumped at each change, for requests waiting on a link.
    changes: watch::Sender<u64>,
    client: reqwest::Client,
}

impl State {
    fn is_cut(&self, from: usize, to: &str) -> bool {
        let isolated = self.isolated.lock().unwrap();
        let owner = (self.addresses.iter()).position(|of| of.iter().any(|a| a == to));
        let beyond_nodes = owner.is_none() && self.only_nodes.lock().unwrap().contains(&from);
        isolated.contains(&from)
            || owner.is_some_and(|owner| isolated.contains(&owner))
            || beyond_nodes
    }

    /// Returns once the link carries traffic.
    async fn open(&self, from: usize, to: &str) {
        let mut changes = self.changes.subscribe();
        while self.is_cut(from, to) {
            let _ = changes.changed().await;
        }
    }

    /// Returns once the link is cut.
    async fn until_cut(&self, from: usize, to: &str) {
        let mut changes = self.changes.subscribe();
        while !self.is_cut(from, to) {
            let _ = changes.changed().await;
        }
    }

    /// `work`, unless the link is cut first: then nothing ever comes.
    async fn unless_cut<T>(
        &self,
        from: usize,
        to: &str,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        tokio::select! {
            done = work => done,
            () = self.until_cut(from, to) => std::future::pending().await,
        }
    }
}

impl Network {
    /// A proxy for each node, every link open; `addresses[i]`: where others reach node `i`.
    pub fn start(addresses: Vec<Vec<String>>) -> Network {
        let nodes = addresses.len();
        let state = Arc::new(State {
            addresses,
            isolated: Mutex::new(HashSet::new()),
            only_nodes: Mutex::new(HashSet::new()),
            changes: watch::channel(0).0,
            client: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("forwarding client"),
        });
        let (ports_tx, ports) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = state.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("proxy runtime");
            runtime.block_on(async move {
                for node in 0..nodes {
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                        .await
                        .expect("bind a proxy");
                    let port = listener.local_addr().expect("address").port();
                    tokio::spawn(serve(listener, node, serving.clone()));
                    ports_tx.send(port).expect("ports");
                }
                let _ = stopped.await;
            });
        });
        let proxy_ports = (0..nodes).map(|_| ports.recv().expect("a proxy")).collect();
        Network {
            state,
            proxy_ports,
            _stop: stop,
        }
    }

    /// The environment that sends node `node`'s outgoing HTTP through its proxy.
    pub fn env_for(&self, node: usize) -> Vec<(String, String)> {
        let proxy = format!("http://127.0.0.1:{}", self.proxy_ports[node]);
        vec![
            ("HTTP_PROXY".into(), proxy.clone()),
            ("http_proxy".into(), proxy),
            ("NO_PROXY".into(), String::new()),
            ("no_proxy".into(), String::new()),
        ]
    }

    /// Cuts node `node` off from the other nodes and from etcd, both ways.
    pub fn isolate(&self, node: usize) {
        self.state.isolated.lock().unwrap().insert(node);
        self.state.changes.send_modify(|n| *n += 1);
    }

    /// Cuts node `node` off from etcd (everything that is not a node), the other nodes
    /// still in reach.
    pub fn cut_from_etcd(&self, node: usize) {
        self.state.only_nodes.lock().unwrap().insert(node);
        self.state.changes.send_modify(|n| *n += 1);
    }

    /// Opens every link.
    pub fn heal(&self) {
        self.state.isolated.lock().unwrap().clear();
        self.state.only_nodes.lock().unwrap().clear();
        self.state.changes.send_modify(|n| *n += 1);
    }
}

async fn serve(listener: tokio::net::TcpListener, node: usize, state: Arc<State>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let state = state.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(forward(request, node, &state).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

type Body = BoxBody<Bytes, std::io::Error>;

/// Forwards one request of node `from` to where its absolute URI points, while the link is
/// open.
async fn forward(request: Request<Incoming>, from: usize, state: &Arc<State>) -> Response<Body> {
    let to = (request.uri().authority())
        .map(|a| a.to_string())
        .unwrap_or_default();
    state.open(from, &to).await;
    let (parts, body) = request.into_parts();
    let body = BodyStream::new(body)
        .try_filter_map(|frame| async move { Ok(frame.into_data().ok()) })
        .map_err(std::io::Error::other);
    let mut forwarded = state
        .client
        .request(parts.method, parts.uri.to_string())
        .body(reqwest::Body::wrap_stream(body));
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            forwarded = forwarded.header(name, value);
        }
    }
    let answer = state.unless_cut(from, &to, forwarded.send()).await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) => {
            let mut failed = Response::new(full(format!("proxy: {e}")));
            *failed.status_mut() = http::StatusCode::BAD_GATEWAY;
            return failed;
        }
    };
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            response = response.header(name, value);
        }
    }
    let chunks = gated(answer.bytes_stream(), state.clone(), from, to);
    let body = StreamBody::new(chunks.map_ok(Frame::data).map_err(std::io::Error::other));
    response.body(BodyExt::boxed(body)).expect("response")
}

/// `chunks`, each passed on only while the link from `from` to `to` is open.
fn gated(
    chunks: impl Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
    state: Arc<State>,
    from: usize,
    to: String,
) -> impl Stream<Item = reqwest::Result<Bytes>> + Send + 'static {
    futures::stream::unfold(Box::pin(chunks), move |mut chunks| {
        let state = state.clone();
        let to = to.clone();
        async move {
            let next = state.unless_cut(from, &to, chunks.next()).await?;
            Some((next, chunks))
        }
    })
}

fn full(text: String) -> Body {
    http_body_util::Full::new(Bytes::from(text))
        .map_err(|never| match never {})
        .boxed()
}
