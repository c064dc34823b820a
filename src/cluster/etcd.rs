//! A small etcd v3 client over etcd's JSON gateway (`POST /v3/kv/range` and friends, served
//! on the client port by every etcd since 3.4): the few calls the control plane makes —
//! reads, puts, a create-if-absent transaction, leases and a watch — without a gRPC stack
//! or a protobuf compiler at build time.
//!
//! Keys and values travel base64-encoded and 64-bit numbers as strings, as the gateway's
//! JSON mapping of the protobuf messages has it. Each call goes to the endpoint that last
//! answered and moves on to the next one when an endpoint cannot be reached.
//!
//! etcd decides who may do what on the whole deployment, so the client can prove itself the
//! ways etcd checks ([`EtcdAccess`]): TLS to members whose certificates a given CA signs, a
//! client certificate, and etcd's own users (a token from `auth/authenticate`, taken again
//! when etcd lets it expire). `HTTP_PROXY`/`HTTPS_PROXY` are followed as by most clients
//! (over https a proxy only relays the TLS it cannot read).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};
use zeroize::Zeroizing;

/// How long one unary call may take before the next endpoint is tried.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    /// No endpoint answered.
    #[error("etcd unreachable: {0}")]
    Unreachable(String),
    /// An endpoint answered with an error (a lease that expired, a bad request).
    #[error("etcd refused the call: {0}")]
    Refused(String),
    /// etcd did not take our token (expired, or revoked with its user).
    #[error("etcd refused our credentials: {0}")]
    Unauthenticated(String),
}

/// How a node reaches etcd and proves itself to it.
#[derive(Clone, Default)]
pub struct EtcdAccess {
    /// The members' client URLs, `http://host:port` or `https://host:port`.
    pub endpoints: Vec<String>,
    /// PEM certificates of the CA that signs the members' certificates: the only roots
    /// trusted when given; otherwise the system's.
    pub ca_pem: Option<Vec<u8>>,
    /// A PEM client certificate chain and its private key, for members that check client
    /// certificates (`--client-cert-auth`).
    pub identity_pem: Option<Zeroizing<Vec<u8>>>,
    /// An etcd user and its password, for an etcd with authentication enabled.
    pub user: Option<(String, Zeroizing<String>)>,
}

impl EtcdAccess {
    /// Members reached only by plain `http://`, `host:port` included, beyond this machine:
    /// whoever is on that network reads the control plane and can rewrite it.
    pub fn plaintext_beyond_loopback(&self) -> Vec<&str> {
        (self.endpoints.iter())
            .filter(|e| match reqwest::Url::parse(e) {
                Ok(url) if url.scheme() == "https" => false,
                Ok(url) => !url.host_str().is_some_and(is_loopback),
                Err(_) => true,
            })
            .map(String::as_str)
            .collect()
    }
}

impl std::fmt::Debug for EtcdAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdAccess")
            .field("endpoints", &self.endpoints)
            .field("ca", &self.ca_pem.is_some())
            .field("client_certificate", &self.identity_pem.is_some())
            .field("user", &self.user.as_ref().map(|(name, _)| name))
            .finish()
    }
}

/// A lease: keys put with it go when it expires or is revoked.
pub type LeaseId = i64;

/// One key as etcd holds it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct KeyValue {
    #[serde(deserialize_with = "base64_string")]
    pub key: String,
    #[serde(default, deserialize_with = "base64_bytes")]
    pub value: Vec<u8>,
    #[serde(default, deserialize_with = "number")]
    pub create_revision: i64,
    #[serde(default, deserialize_with = "number")]
    pub mod_revision: i64,
    #[serde(default, deserialize_with = "number")]
    pub lease: i64,
}

/// What a watch reports of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    Put(KeyValue),
    Deleted(String),
}

#[derive(Clone)]
pub struct Etcd {
    endpoints: Arc<Vec<String>>,
    /// The endpoint that answered last.
    current: Arc<AtomicUsize>,
    http: reqwest::Client,
    user: Option<Arc<(String, Zeroizing<String>)>>,
    /// The token etcd gave `user`, until it refuses it.
    token: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for Etcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Etcd")
            .field("endpoints", &self.endpoints)
            .finish()
    }
}

impl Etcd {
    /// A client of the etcd members at `endpoints` (`http://host:2379`), with no credentials.
    pub fn new(endpoints: Vec<String>) -> Result<Self, EtcdError> {
        Self::connect(EtcdAccess {
            endpoints,
            ..EtcdAccess::default()
        })
    }

    /// A client of the etcd members `access` names, proving itself as it says.
    pub fn connect(access: EtcdAccess) -> Result<Self, EtcdError> {
        if access.endpoints.is_empty() {
            return Err(EtcdError::Refused("no etcd endpoint given".into()));
        }
        let endpoints = (access.endpoints.iter())
            .map(|e| e.trim_end_matches('/').to_string())
            .collect();
        let refused = |what: &str, e: reqwest::Error| EtcdError::Refused(format!("{what}: {e}"));
        let mut http = reqwest::Client::builder().connect_timeout(Duration::from_secs(2));
        if let Some(ca) = &access.ca_pem {
            let roots = reqwest::Certificate::from_pem_bundle(ca)
                .map_err(|e| refused("the etcd CA certificates", e))?;
            if roots.is_empty() {
                return Err(EtcdError::Refused(
                    "the etcd CA file holds no PEM certificate".into(),
                ));
            }
            http = roots
                .into_iter()
                .fold(http.tls_built_in_root_certs(false), |http, root| {
                    http.add_root_certificate(root)
                });
        }
        if let Some(identity) = &access.identity_pem {
            let identity = reqwest::Identity::from_pem(identity)
                .map_err(|e| refused("the etcd client certificate and key", e))?;
            http = http.identity(identity);
        }
        let http = http.build().map_err(|e| refused("the etcd client", e))?;
        Ok(Self {
            endpoints: Arc::new(endpoints),
            current: Default::default(),
            http,
            user: access.user.map(Arc::new),
            token: Default::default(),
        })
    }

    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// The key's current value, if it exists.
    pub async fn get(&self, key: &str) -> Result<Option<KeyValue>, EtcdError> {
        let answer: RangeAnswer = self.call("kv/range", json!({ "key": b64(key) })).await?;
        Ok(answer.kvs.into_iter().next())
    }

    /// Every key under `prefix`, in key order, and the store's revision they were read at.
    pub async fn list(&self, prefix: &str) -> Result<(Vec<KeyValue>, i64), EtcdError> {
        let request = json!({ "key": b64(prefix), "range_end": b64_bytes(&prefix_end(prefix)) });
        let answer: RangeAnswer = self.call("kv/range", request).await?;
        Ok((answer.kvs, answer.header.revision))
    }

    /// Sets `key` to `value`, tied to `lease` when given; the revision of the change.
    pub async fn put(
        &self,
        key: &str,
        value: &[u8],
        lease: Option<LeaseId>,
    ) -> Result<i64, EtcdError> {
        let answer: PutAnswer = self.call("kv/put", put_request(key, value, lease)).await?;
        Ok(answer.header.revision)
    }

    /// Creates `key` if no key of that name exists, in one transaction: `Ok(())` when this
    /// call created it, `Err(existing)` with the key that was there.
    pub async fn create(
        &self,
        key: &str,
        value: &[u8],
        lease: Option<LeaseId>,
    ) -> Result<Result<(), KeyValue>, EtcdError> {
        let request = json!({
            "compare": [{ "key": b64(key), "target": "CREATE", "result": "EQUAL", "create_revision": "0" }],
            "success": [{ "request_put": put_request(key, value, lease) }],
            "failure": [{ "request_range": { "key": b64(key) } }],
        });
        let answer: TxnAnswer = self.call("kv/txn", request).await?;
        if answer.succeeded {
            return Ok(Ok(()));
        }
        let existing = (answer.responses.into_iter())
            .filter_map(|r| r.response_range)
            .flat_map(|r| r.kvs)
            .next();
        match existing {
            Some(kv) => Ok(Err(kv)),
            // Deleted between the compare and the range of the same transaction: impossible,
            // but not worth a panic.
            None => Err(EtcdError::Refused(format!("create of {key} failed"))),
        }
    }

    /// Sets `key` to `value` (`None`: deletes it) only if it still holds `expected` (`None`:
    /// only if it does not exist), in one transaction; whether it did.
    pub async fn swap(
        &self,
        key: &str,
        expected: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Result<bool, EtcdError> {
        let compare = match expected {
            Some(expected) => {
                json!({ "key": b64(key), "target": "VALUE", "result": "EQUAL", "value": b64_bytes(expected) })
            }
            None => {
                json!({ "key": b64(key), "target": "CREATE", "result": "EQUAL", "create_revision": "0" })
            }
        };
        let change = match value {
            Some(value) => json!({ "request_put": put_request(key, value, None) }),
            None => json!({ "request_delete_range": { "key": b64(key) } }),
        };
        let request = json!({ "compare": [compare], "success": [change] });
        let answer: TxnAnswer = self.call("kv/txn", request).await?;
        Ok(answer.succeeded)
    }

    /// Puts every `(key, value)` of `puts` only if each key of `expect` still holds its value
    /// (`None`: does not exist), in one transaction; whether they did.
    pub async fn put_if(
        &self,
        expect: &[(&str, Option<&[u8]>)],
        puts: &[(&str, &[u8])],
    ) -> Result<bool, EtcdError> {
        let compare: Vec<Value> = (expect.iter())
            .map(|(key, expected)| match expected {
                Some(expected) => {
                    json!({ "key": b64(key), "target": "VALUE", "result": "EQUAL", "value": b64_bytes(expected) })
                }
                None => {
                    json!({ "key": b64(key), "target": "CREATE", "result": "EQUAL", "create_revision": "0" })
                }
            })
            .collect();
        let success: Vec<Value> = (puts.iter())
            .map(|(key, value)| json!({ "request_put": put_request(key, value, None) }))
            .collect();
        let request = json!({ "compare": compare, "success": success });
        let answer: TxnAnswer = self.call("kv/txn", request).await?;
        Ok(answer.succeeded)
    }

    /// Deletes `key`.
    pub async fn delete(&self, key: &str) -> Result<(), EtcdError> {
        let _: Value = self
            .call("kv/deleterange", json!({ "key": b64(key) }))
            .await?;
        Ok(())
    }

    /// A new lease of `ttl`.
    pub async fn grant(&self, ttl: Duration) -> Result<LeaseId, EtcdError> {
        let answer: LeaseAnswer = self
            .call("lease/grant", json!({ "TTL": ttl.as_secs().to_string() }))
            .await?;
        Ok(answer.id)
    }

    /// Renews the lease; `false` when it had already expired (its keys are gone).
    pub async fn keep_alive(&self, lease: LeaseId) -> Result<bool, EtcdError> {
        #[derive(Deserialize)]
        struct Answer {
            result: Option<LeaseAnswer>,
        }
        let answer: Answer = self
            .call("lease/keepalive", json!({ "ID": lease.to_string() }))
            .await?;
        Ok(answer.result.is_some_and(|r| r.ttl > 0))
    }

    /// Ends the lease at once, and its keys with it.
    pub async fn revoke(&self, lease: LeaseId) -> Result<(), EtcdError> {
        let _: Value = self
            .call("lease/revoke", json!({ "ID": lease.to_string() }))
            .await?;
        Ok(())
    }

    /// Changes to keys under `prefix` from revision `from` on, in order, until the stream
    /// breaks (the caller lists again and watches anew).
    pub async fn watch(
        &self,
        prefix: &str,
        from: i64,
    ) -> Result<impl futures::Stream<Item = Result<Vec<WatchEvent>, EtcdError>>, EtcdError> {
        let request = json!({ "create_request": {
            "key": b64(prefix),
            "range_end": b64_bytes(&prefix_end(prefix)),
            "start_revision": from.to_string(),
        }});
        let response = self.send("watch", &request, None).await?;
        let lines = lines(response.bytes_stream());
        Ok(lines.map(|line| {
            let line = line?;
            let message: WatchMessage =
                serde_json::from_slice(&line).map_err(|e| EtcdError::Refused(e.to_string()))?;
            if let Some(error) = message.error {
                return Err(EtcdError::Refused(error.to_string()));
            }
            let result = message.result.unwrap_or_default();
            if result.canceled || result.compact_revision > 0 {
                return Err(EtcdError::Refused(format!(
                    "watch canceled (compacted at {})",
                    result.compact_revision
                )));
            }
            Ok((result.events.into_iter())
                .map(|event| match event.kind.as_deref() {
                    Some("DELETE") => WatchEvent::Deleted(event.kv.key),
                    _ => WatchEvent::Put(event.kv),
                })
                .collect())
        }))
    }

    /// One unary call, tried on every endpoint from the one that answered last.
    async fn call<T: DeserializeOwned>(&self, path: &str, body: Value) -> Result<T, EtcdError> {
        let response = self.send(path, &body, Some(CALL_TIMEOUT)).await?;
        let bytes = (response.bytes().await).map_err(|e| EtcdError::Unreachable(e.to_string()))?;
        serde_json::from_slice(&bytes).map_err(|e| EtcdError::Refused(format!("{path}: {e}")))
    }

    /// Sends `body` to `path` with our token, taking a new one once if etcd refuses it.
    async fn send(
        &self,
        path: &str,
        body: &Value,
        timeout: Option<Duration>,
    ) -> Result<reqwest::Response, EtcdError> {
        let Some(user) = &self.user else {
            return self.send_as(None, path, body, timeout).await;
        };
        let held = self.token.lock().expect("not poisoned").clone();
        let token = match held {
            Some(token) => token,
            None => self.authenticate(user).await?,
        };
        match self.send_as(Some(&token), path, body, timeout).await {
            Err(EtcdError::Unauthenticated(_)) => {
                let token = self.authenticate(user).await?;
                self.send_as(Some(&token), path, body, timeout).await
            }
            answer => answer,
        }
    }

    /// A new token for `user`, kept for the calls that follow.
    async fn authenticate(&self, user: &(String, Zeroizing<String>)) -> Result<String, EtcdError> {
        #[derive(Deserialize)]
        struct Answer {
            token: String,
        }
        let (name, password) = user;
        let request = json!({ "name": name, "password": password.as_str() });
        let response =
            (self.send_as(None, "auth/authenticate", &request, Some(CALL_TIMEOUT))).await?;
        let bytes = (response.bytes().await).map_err(|e| EtcdError::Unreachable(e.to_string()))?;
        let answer: Answer = serde_json::from_slice(&bytes)
            .map_err(|e| EtcdError::Refused(format!("auth/authenticate: {e}")))?;
        *self.token.lock().expect("not poisoned") = Some(answer.token.clone());
        Ok(answer.token)
    }

    /// Sends `body` to `path` on every endpoint from the one that answered last, until one
    /// answers.
    async fn send_as(
        &self,
        token: Option<&str>,
        path: &str,
        body: &Value,
        timeout: Option<Duration>,
    ) -> Result<reqwest::Response, EtcdError> {
        let start = self.current.load(Ordering::Relaxed);
        let mut last_error = String::new();
        for step in 0..self.endpoints.len() {
            let index = (start + step) % self.endpoints.len();
            let url = format!("{}/v3/{path}", self.endpoints[index]);
            let mut request = (self.http.post(&url))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
            if let Some(token) = token {
                request = request.header(reqwest::header::AUTHORIZATION, token);
            }
            if let Some(timeout) = timeout {
                request = request.timeout(timeout);
            }
            match request.send().await {
                Ok(response) if response.status().is_success() => {
                    self.current.store(index, Ordering::Relaxed);
                    return Ok(response);
                }
                // A member that lost its quorum answers 503: another may have it.
                Ok(response) if response.status().is_server_error() => {
                    last_error = format!("{url}: {}", response.status());
                }
                Ok(response) => {
                    let status = response.status();
                    let text = response.text().await.unwrap_or_default();
                    let message = format!("{url}: {status} {text}");
                    return Err(match status {
                        reqwest::StatusCode::UNAUTHORIZED => EtcdError::Unauthenticated(message),
                        _ => EtcdError::Refused(message),
                    });
                }
                Err(e) => last_error = format!("{url}: {e}"),
            }
        }
        Err(EtcdError::Unreachable(last_error))
    }
}

/// `localhost`, or an address of this machine's loopback (`[::1]` as URLs write it).
fn is_loopback(host: &str) -> bool {
    let address = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || address
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn put_request(key: &str, value: &[u8], lease: Option<LeaseId>) -> Value {
    let mut request = json!({ "key": b64(key), "value": b64_bytes(value) });
    if let Some(lease) = lease {
        request["lease"] = json!(lease.to_string());
    }
    request
}

/// The first key after every key that starts with `prefix`.
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte 0xff (or empty): to the end of the key space.
    vec![0]
}

fn b64(text: &str) -> String {
    b64_bytes(text.as_bytes())
}

fn b64_bytes(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

/// The newline-separated JSON messages of a streamed answer.
fn lines(
    body: impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin,
) -> impl futures::Stream<Item = Result<Vec<u8>, EtcdError>> {
    futures::stream::unfold(
        (body, Vec::new()),
        |(mut body, mut buffer): (_, Vec<u8>)| async move {
            loop {
                if let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buffer.drain(..=end).collect();
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    return Some((Ok(line), (body, buffer)));
                }
                match body.next().await {
                    Some(Ok(chunk)) => buffer.extend_from_slice(&chunk),
                    Some(Err(e)) => {
                        return Some((Err(EtcdError::Unreachable(e.to_string())), (body, buffer)))
                    }
                    None if buffer.iter().all(u8::is_ascii_whitespace) => return None,
                    None => return Some((Ok(std::mem::take(&mut buffer)), (body, buffer))),
                }
            }
        },
    )
}

#[derive(Deserialize, Default)]
struct Header {
    #[serde(default, deserialize_with = "number")]
    revision: i64,
}

#[derive(Deserialize)]
struct RangeAnswer {
    #[serde(default)]
    header: Header,
    #[serde(default)]
    kvs: Vec<KeyValue>,
}

#[derive(Deserialize)]
struct PutAnswer {
    #[serde(default)]
    header: Header,
}

#[derive(Deserialize)]
struct TxnAnswer {
    #[serde(default)]
    succeeded: bool,
    #[serde(default)]
    responses: Vec<TxnResponse>,
}

#[derive(Deserialize)]
struct TxnResponse {
    response_range: Option<RangeAnswer>,
}

#[derive(Deserialize)]
struct LeaseAnswer {
    #[serde(rename = "ID", default, deserialize_with = "number")]
    id: i64,
    #[serde(rename = "TTL", default, deserialize_with = "number")]
    ttl: i64,
}

#[derive(Deserialize)]
struct WatchMessage {
    result: Option<WatchResult>,
    error: Option<Value>,
}

#[derive(Deserialize, Default)]
struct WatchResult {
    #[serde(default)]
    events: Vec<RawEvent>,
    #[serde(default)]
    canceled: bool,
    #[serde(default, deserialize_with = "number")]
    compact_revision: i64,
}

#[derive(Deserialize)]
struct RawEvent {
    #[serde(rename = "type")]
    kind: Option<String>,
    kv: KeyValue,
}

/// A 64-bit number, which the gateway writes as a string.
fn number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::String(s) => s.parse().map_err(serde::de::Error::custom),
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| serde::de::Error::custom("not a 64-bit integer")),
        _ => Err(serde::de::Error::custom("expected a number")),
    }
}

fn base64_bytes<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
    let text = String::deserialize(deserializer)?;
    BASE64.decode(text).map_err(serde::de::Error::custom)
}

fn base64_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    String::from_utf8(base64_bytes(deserializer)?).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plaintext_is_named_only_beyond_loopback() {
        let access = EtcdAccess {
            endpoints: [
                "http://127.0.0.1:2379",
                "http://localhost:2379",
                "http://[::1]:2379",
                "https://etcd-0.example:2379",
                "http://10.0.0.5:2379",
                "http://etcd-1:2379",
                "http://[fd00::1]:2379",
            ]
            .map(String::from)
            .to_vec(),
            ..EtcdAccess::default()
        };
        assert_eq!(
            access.plaintext_beyond_loopback(),
            [
                "http://10.0.0.5:2379",
                "http://etcd-1:2379",
                "http://[fd00::1]:2379"
            ]
        );
    }

    #[test]
    fn a_prefix_ends_at_its_last_byte_plus_one() {
        assert_eq!(prefix_end("/strata/nodes/"), b"/strata/nodes0");
        assert_eq!(prefix_end(""), vec![0]);
    }

    #[test]
    fn the_gateway_json_decodes() {
        let answer: RangeAnswer = serde_json::from_str(
            r#"{"header":{"revision":"7"},"kvs":[{"key":"Zm9v","create_revision":"2","mod_revision":"5","version":"3","value":"YmFy","lease":"42"}],"count":"1"}"#,
        )
        .unwrap();
        assert_eq!(answer.header.revision, 7);
        assert_eq!(
            answer.kvs,
            [KeyValue {
                key: "foo".into(),
                value: b"bar".to_vec(),
                create_revision: 2,
                mod_revision: 5,
                lease: 42,
            }]
        );
        // An empty range and a failed transaction leave their fields out.
        let empty: RangeAnswer = serde_json::from_str(r#"{"header":{}}"#).unwrap();
        assert!(empty.kvs.is_empty());
        let failed: TxnAnswer = serde_json::from_str(r#"{"header":{}}"#).unwrap();
        assert!(!failed.succeeded);
    }
}
