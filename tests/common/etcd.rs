//! A one-member etcd on loopback for cluster tests: Debian's `etcd-server` package, which the
//! project's test command installs. Stopped and started again on the same data folder to test
//! what nodes do while etcd is away.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct EtcdServer {
    client_port: u16,
    peer_port: u16,
    data: tempfile::TempDir,
    child: Mutex<Option<Child>>,
}

impl EtcdServer {
    /// Starts etcd and waits until it answers.
    pub fn start() -> EtcdServer {
        let data = tempfile::Builder::new()
            .prefix("strata-etcd-")
            .tempdir()
            .expect("temp dir");
        let server = EtcdServer {
            client_port: free_port(),
            peer_port: free_port(),
            data,
            child: Mutex::new(None),
        };
        server.run();
        server
    }

    /// The client URL, as `--etcd` takes it.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// Kills etcd (its data stays).
    pub fn stop(&self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on its data, and waits until it answers.
    pub fn restart(&self) {
        self.stop();
        self.run();
    }

    fn run(&self) {
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let child = Command::new("etcd")
            .args(["--name", "test"])
            .arg("--data-dir")
            .arg(self.data.path().join("member"))
            .args(["--listen-client-urls", &self.endpoint()])
            .args(["--advertise-client-urls", &self.endpoint()])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("test={peer}")])
            // Quick elections on loopback, and no fsync wait worth speaking of on a test box.
            .args(["--heartbeat-interval", "25", "--election-timeout", "250"])
            .args(["--log-level", "warn"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("etcd is installed (Debian's etcd-server; scripts/test-all.sh installs it)");
        *self.child.lock().unwrap() = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.healthy() {
            assert!(
                Instant::now() < deadline,
                "etcd did not come up on {}",
                self.endpoint()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl EtcdServer {
    /// Whether `GET /health` answers 200 (etcd has a leader).
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
