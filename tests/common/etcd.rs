//! etcd on loopback for cluster tests, one member or three: Debian's `etcd-server` package,
//! which the project's test command installs. Members are stopped and started again on their
//! data folders to test what nodes do while etcd, or part of it, is away.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct EtcdServer {
    members: Vec<Member>,
    /// `name=peer-url,...`: every member, as each is started with.
    initial_cluster: String,
    _data: tempfile::TempDir,
}

struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
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
        let data = tempfile::Builder::new()
            .prefix("strata-etcd-")
            .tempdir()
            .expect("temp dir");
        let members: Vec<Member> = (0..count)
            .map(|i| Member {
                name: format!("m{i}"),
                client_port: free_port(),
                peer_port: free_port(),
                data: data.path().join(format!("m{i}")),
                child: Mutex::new(None),
            })
            .collect();
        let initial_cluster = (members.iter())
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect::<Vec<_>>()
            .join(",");
        let server = EtcdServer {
            members,
            initial_cluster,
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
            .map(Member::client_url)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The value etcd holds under `key`, if any (through its JSON gateway).
    pub async fn get(&self, key: &str) -> Option<Vec<u8>> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let url = format!("{}/v3/kv/range", self.members[0].client_url());
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
                &self.members[0].client_url(),
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

    /// Deletes every key under `prefix` (through the JSON gateway).
    pub async fn delete_prefix(&self, prefix: &str) {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut end = prefix.as_bytes().to_vec();
        *end.last_mut().expect("a prefix") += 1;
        let url = format!("{}/v3/kv/deleterange", self.members[0].client_url());
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
        let child = Command::new("etcd")
            .args(["--name", &member.name])
            .arg("--data-dir")
            .arg(&member.data)
            .args(["--listen-client-urls", &member.client_url()])
            .args(["--advertise-client-urls", &member.client_url()])
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
                member.client_url()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Member {
    fn client_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    /// Whether `GET /health` answers 200 (the member sees a leader).
    fn healthy(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.client_port)) else {
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

fn free_port() -> u16 {
    let probe = TcpListener::bind("127.0.0.1:0").expect("bind");
    probe.local_addr().expect("address").port()
}
