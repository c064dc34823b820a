//! etcd on loopback for cluster tests, one member or three: Debian's `etcd-server` package,
//! which the project's test command installs. Members are stopped and started again on their
//! data folders to test what nodes do while etcd, or part of it, is away. A secured etcd
//! ([`EtcdServer::start_secured`]) serves TLS, checks client certificates and has its
//! authentication on, as a production etcd should.

use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct EtcdServer {
    members: Vec<Member>,
    /// `name=peer-url,...`: every member, as each is started with.
    initial_cluster: String,
    /// TLS and authentication, when secured.
    pub secured: Option<Secured>,
    token_ttl: Option<u32>,
    _data: tempfile::TempDir,
}

/// What a secured etcd checks, as files a node is given.
pub struct Secured {
    /// The CA that signs the members' and the clients' certificates.
    pub ca: std::path::PathBuf,
    /// A client certificate the CA signed, and its key.
    pub client_cert: std::path::PathBuf,
    pub client_key: std::path::PathBuf,
    server_cert: std::path::PathBuf,
    server_key: std::path::PathBuf,
    /// The etcd user with every right (`root`) and its password.
    pub user: String,
    pub password: String,
    /// Holds the files above; removed with the server.
    _folder: tempfile::TempDir,
}

struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    /// Plain http: `/health` of a secured member.
    metrics_port: u16,
    data: std::path::PathBuf,
    child: Mutex<Option<Child>>,
}

impl EtcdServer {
    /// One member, up and answering.
    pub fn start() -> EtcdServer {
        Self::start_members(1)
    }

    /// `count` members forming one etcd cluster, up and answering.
    pub fn start_members(count: usize) -> EtcdServer {
        Self::start_with(count, None)
    }

    /// One member serving TLS only to clients with a certificate its CA signed, with
    /// authentication on (user `root`) and tokens that lapse after `token_ttl_secs` unused.
    pub fn start_secured(token_ttl_secs: u32) -> EtcdServer {
        let folder = tempfile::Builder::new()
            .prefix("strata-etcd-tls-")
            .tempdir()
            .expect("temp dir");
        let files = folder.path().to_path_buf();
        let ca = super::Ca::new("etcd test CA");
        let (server_pem, server_key, _) = ca.server_cert("etcd");
        let (client_pem, client_key) = ca.nameless_client_cert();
        let write = |name: &str, pem: &str| {
            let path = files.join(name);
            std::fs::write(&path, pem).expect("write a PEM file");
            path
        };
        let secured = Secured {
            ca: write("ca.pem", &ca.pem),
            client_cert: write("client.pem", &client_pem),
            client_key: write("client-key.pem", &client_key),
            server_cert: write("server.pem", &server_pem),
            server_key: write("server-key.pem", &server_key),
            user: "root".into(),
            password: "etcd-root-password".into(),
            _folder: folder,
        };
        let server = Self::start_with(1, Some((secured, token_ttl_secs)));
        let secured = server.secured.as_ref().expect("secured");
        for command in [
            vec![
                "user".to_string(),
                "add".into(),
                format!("{}:{}", secured.user, secured.password),
            ],
            vec!["auth".into(), "enable".into()],
        ] {
            let done = Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .args(["--endpoints", &server.members[0].client_url(&server)])
                .arg("--cacert")
                .arg(&secured.ca)
                .arg("--cert")
                .arg(&secured.client_cert)
                .arg("--key")
                .arg(&secured.client_key)
                .args(&command)
                .output()
                .expect("etcdctl runs");
            assert!(done.status.success(), "etcdctl {command:?}: {done:?}");
        }
        server
    }

    fn start_with(count: usize, secured: Option<(Secured, u32)>) -> EtcdServer {
        let data = tempfile::Builder::new()
            .prefix("strata-etcd-")
            .tempdir()
            .expect("temp dir");
        let ports = super::ports::free_ports(3 * count);
        let members: Vec<Member> = (0..count)
            .map(|i| Member {
                name: format!("m{i}"),
                client_port: ports[3 * i],
                peer_port: ports[3 * i + 1],
                metrics_port: ports[3 * i + 2],
                data: data.path().join(format!("m{i}")),
                child: Mutex::new(None),
            })
            .collect();
        let initial_cluster = (members.iter())
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect::<Vec<_>>()
            .join(",");
        let (secured, token_ttl) = match secured {
            Some((secured, ttl)) => (Some(secured), Some(ttl)),
            None => (None, None),
        };
        let server = EtcdServer {
            members,
            initial_cluster,
            secured,
            token_ttl,
            _data: data,
        };
        // All members at once: none has a leader before a majority runs.
        for index in 0..count {
            server.spawn(index);
        }
        for index in 0..count {
            server.wait_healthy(index);
        }
        server
    }

    /// Every member's client URL, comma-separated, as `--etcd` takes them.
    pub fn endpoint(&self) -> String {
        (self.members.iter())
            .map(|m| m.client_url(self))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The value etcd holds under `key`, if any (through its JSON gateway).
    pub async fn get(&self, key: &str) -> Option<Vec<u8>> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let url = format!("{}/v3/kv/range", self.members[0].client_url(self));
        let request = serde_json::json!({ "key": b64.encode(key) });
        let answer = reqwest::Client::new()
            .post(url)
            .body(request.to_string())
            .send()
            .await
            .expect("etcd answers");
        let answer: serde_json::Value =
            serde_json::from_str(&answer.text().await.expect("an answer")).expect("JSON");
        let value = answer["kvs"][0]["value"].as_str()?;
        Some(b64.decode(value).expect("base64"))
    }

    /// Saves a snapshot of etcd's data to `path` (`etcdctl snapshot save`, Debian's
    /// `etcd-client`), as an operator backs etcd up.
    pub fn save_snapshot(&self, path: &std::path::Path) {
        let saved = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args([
                "--endpoints",
                &self.members[0].client_url(self),
                "snapshot",
                "save",
            ])
            .arg(path)
            .output()
            .expect("etcdctl is installed (Debian's etcd-client; scripts/test-all.sh installs it)");
        assert!(saved.status.success(), "etcdctl snapshot save: {saved:?}");
    }

    /// Restores a one-member etcd from the snapshot at `path` (`etcdctl snapshot restore`
    /// into a fresh data folder), as an operator recovers etcd, and starts it again.
    pub fn restore_snapshot(&self, path: &std::path::Path) {
        assert_eq!(self.members.len(), 1, "restores a one-member etcd");
        self.stop();
        let member = &self.members[0];
        std::fs::remove_dir_all(&member.data).expect("the member's data folder goes");
        let restored = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["snapshot", "restore"])
            .arg(path)
            .args(["--name", &member.name])
            .arg("--data-dir")
            .arg(&member.data)
            .args(["--initial-cluster", &self.initial_cluster])
            .args(["--initial-advertise-peer-urls", &member.peer_url()])
            .output()
            .expect("etcdctl runs");
        assert!(
            restored.status.success(),
            "etcdctl snapshot restore: {restored:?}"
        );
        self.spawn(0);
        self.wait_healthy(0);
    }

    /// Sets `key` to `value` (through the JSON gateway), as anyone who reaches etcd can.
    pub async fn put(&self, key: &str, value: &[u8]) {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let url = format!("{}/v3/kv/put", self.members[0].client_url(self));
        let request = serde_json::json!({ "key": b64.encode(key), "value": b64.encode(value) });
        let answer = (reqwest::Client::new().post(url).body(request.to_string()))
            .send()
            .await
            .expect("etcd answers");
        assert!(answer.status().is_success(), "put: {answer:?}");
    }

    /// Deletes every key under `prefix` (through the JSON gateway).
    pub async fn delete_prefix(&self, prefix: &str) {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut end = prefix.as_bytes().to_vec();
        *end.last_mut().expect("a prefix") += 1;
        let url = format!("{}/v3/kv/deleterange", self.members[0].client_url(self));
        let request =
            serde_json::json!({ "key": b64.encode(prefix), "range_end": b64.encode(end) });
        let answer = (reqwest::Client::new().post(url).body(request.to_string()))
            .send()
            .await
            .expect("etcd answers");
        assert!(answer.status().is_success(), "deleterange: {answer:?}");
    }

    /// Kills every member (their data stays).
    pub fn stop(&self) {
        for index in 0..self.members.len() {
            self.stop_member(index);
        }
    }

    /// Starts every member again on its data, and waits until they answer.
    pub fn restart(&self) {
        self.stop();
        for index in 0..self.members.len() {
            self.spawn(index);
        }
        for index in 0..self.members.len() {
            self.wait_healthy(index);
        }
    }

    /// Kills one member (its data stays).
    pub fn stop_member(&self, index: usize) {
        if let Some(mut child) = self.members[index].child.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn spawn(&self, index: usize) {
        let member = &self.members[index];
        let mut etcd = Command::new("etcd");
        if let Some(secured) = &self.secured {
            etcd.arg("--cert-file")
                .arg(&secured.server_cert)
                .arg("--key-file")
                .arg(&secured.server_key)
                .arg("--trusted-ca-file")
                .arg(&secured.ca)
                .arg("--client-cert-auth");
        }
        if let Some(ttl) = self.token_ttl {
            etcd.args(["--auth-token-ttl", &ttl.to_string()]);
        }
        let child = etcd
            .args(["--name", &member.name])
            .arg("--data-dir")
            .arg(&member.data)
            .args(["--listen-client-urls", &member.client_url(self)])
            .args(["--advertise-client-urls", &member.client_url(self)])
            .args(["--listen-metrics-urls", &member.metrics_url()])
            .args(["--listen-peer-urls", &member.peer_url()])
            .args(["--initial-advertise-peer-urls", &member.peer_url()])
            .args(["--initial-cluster", &self.initial_cluster])
            // Quick elections on loopback.
            .args(["--heartbeat-interval", "25", "--election-timeout", "250"])
            .args(["--log-level", "warn"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("etcd is installed (Debian's etcd-server; scripts/test-all.sh installs it)");
        *member.child.lock().unwrap() = Some(child);
    }

    fn wait_healthy(&self, index: usize) {
        let member = &self.members[index];
        let deadline = Instant::now() + Duration::from_secs(20);
        while !member.healthy() {
            assert!(
                Instant::now() < deadline,
                "etcd did not come up on {}",
                member.client_url(self)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Member {
    fn client_url(&self, server: &EtcdServer) -> String {
        let scheme = match server.secured {
            Some(_) => "https",
            None => "http",
        };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    fn metrics_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.metrics_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    /// Whether `GET /health` answers 200 (the member sees a leader).
    fn healthy(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.metrics_port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let request = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.starts_with("HTTP/1.0 200")
            && answer.contains(r#""health":"true""#)
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
    }
}
