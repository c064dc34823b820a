//! Shared harness for the integration tests: runs the real `strata` binary over temporary
//! drive folders and talks to it with the AWS Rust SDK (or hand-signed raw requests).
//!
//! Each test file includes this with `mod common;`; helpers a file does not use are fine
//! (`dead_code` is allowed for the whole module).
#![allow(dead_code)]

mod cluster;
mod drives;
mod etcd;
mod multipart;
mod network;
mod payload;
pub mod ports;
mod raw;
mod sdk;
mod tls;

// Not every test file uses every helper group.
#[allow(unused_imports)]
pub use cluster::*;
#[allow(unused_imports)]
pub use drives::*;
#[allow(unused_imports)]
pub use etcd::*;
#[allow(unused_imports)]
pub use multipart::*;
#[allow(unused_imports)]
pub use network::*;
#[allow(unused_imports)]
pub use payload::*;
#[allow(unused_imports)]
pub use raw::*;
#[allow(unused_imports)]
pub use sdk::*;
#[allow(unused_imports)]
pub use tls::*;

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_s3::Client;

/// Access key the harness gives the server through `STRATA_ROOT_USER`.
pub const ACCESS_KEY: &str = "strata-test-admin";
/// Secret key the harness gives the server through `STRATA_ROOT_PASSWORD`.
pub const SECRET_KEY: &str = "strata-test-secret-0123456789";
/// Credentials the server uses when no `STRATA_ROOT_*` variables are set (contract).
pub const DEFAULT_ACCESS_KEY: &str = "strataadmin";
pub const DEFAULT_SECRET_KEY: &str = "strataadmin";
pub const REGION: &str = "us-east-1";

pub const KIB: usize = 1024;
pub const MIB: usize = 1024 * 1024;

/// How long the server may take to print its `listening on` line.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Marker the server logs once it serves (contract); `listening on https://` with TLS.
const LISTENING_MARKER: &str = "listening on http://";
const LISTENING_MARKER_TLS: &str = "listening on https://";

/// How to start a server. `Default` = 9 fresh drives, default EC (6+3), test credentials,
/// `127.0.0.1:0`.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Number of fresh drive folders to create (ignored when `drives` is set).
    pub drive_count: usize,
    /// Value for `--ec`, e.g. `"4+2"`; `None` leaves the server default.
    pub ec: Option<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Explicit drive folders, in command-line order (for restarts on the same drives,
    /// swapped drives, ...). The harness does not delete these.
    pub drives: Option<Vec<PathBuf>>,
    /// Raw drive arguments passed instead of the drive paths (e.g. a `{1...9}` range).
    /// `drives` (or the generated folders) still describe where the drives live.
    pub drive_args: Option<Vec<String>>,
    /// Value for `--address`.
    pub address: String,
    /// When false, `STRATA_ROOT_USER`/`STRATA_ROOT_PASSWORD` are removed from the environment
    /// so the server falls back to its default credentials.
    pub set_credentials: bool,
    /// Additional command-line arguments, placed after `server` and before the drives.
    pub extra_args: Vec<String>,
    /// Working directory of the server process (default: inherited).
    pub current_dir: Option<PathBuf>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            drive_count: 9,
            ec: None,
            env: Vec::new(),
            drives: None,
            drive_args: None,
            address: "127.0.0.1:0".to_string(),
            set_credentials: true,
            extra_args: Vec::new(),
            current_dir: None,
        }
    }
}

/// Why a server did not come up.
#[derive(Debug)]
pub struct StartFailure {
    /// Exit status, or `None` if it neither exited nor announced itself within the timeout
    /// (it was killed).
    pub status: Option<ExitStatus>,
    /// Everything the process wrote (stderr and stdout, interleaved by line).
    pub output: String,
}

impl StartFailure {
    pub fn exited_nonzero(&self) -> bool {
        matches!(self.status, Some(s) if !s.success())
    }
}

/// A running process plus the watchdog that kills it if the test process dies without
/// running destructors (statics, `process::exit`, aborts).
struct Running {
    child: Child,
    watchdog: Option<Child>,
    addr: String,
    /// `http` or `https`, as announced.
    scheme: &'static str,
}

impl Running {
    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(mut dog) = self.watchdog.take() {
            // Kill the shell before closing its stdin, so it never runs its `kill` against a
            // pid that may have been reused.
            let _ = dog.kill();
            let _ = dog.wait();
            drop(dog.stdin.take());
        }
    }
}

/// The real server binary over temp drive folders.
pub struct TestServer {
    opts: ServerOptions,
    drives: Vec<PathBuf>,
    running: Mutex<Option<Running>>,
    log: Arc<Mutex<Vec<String>>>,
    /// Index in `log` where the current run's output starts.
    run_start: Mutex<usize>,
    /// Owns generated drive folders; dropped (deleted) with the server.
    tmp: Option<tempfile::TempDir>,
}

/// Runs `strata admin ARGS --endpoint <server>` as the root user.
pub fn strata_admin(server: &TestServer, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("admin")
        .args(args)
        .arg("--endpoint")
        .arg(server.endpoint())
        .env("STRATA_ROOT_USER", ACCESS_KEY)
        .env("STRATA_ROOT_PASSWORD", SECRET_KEY)
        .env_remove("STRATA_NEW_USER_SECRET")
        .env("NO_COLOR", "1")
        .output()
        .expect("run strata admin")
}

impl TestServer {
    /// 9 fresh drives, default options. Panics (with the server's output) on failure.
    pub fn start() -> TestServer {
        Self::start_with(ServerOptions::default())
    }

    /// Starts with `opts`; panics with the server's output if it does not come up.
    pub fn start_with(opts: ServerOptions) -> TestServer {
        match Self::try_start(opts) {
            Ok(s) => s,
            Err(f) => panic!(
                "strata server failed to start (status {:?}); output:\n{}",
                f.status, f.output
            ),
        }
    }

    /// Starts with `opts`; returns how it failed instead of panicking.
    pub fn try_start(opts: ServerOptions) -> Result<TestServer, StartFailure> {
        let (tmp, drives) = match &opts.drives {
            Some(d) => (None, d.clone()),
            None => {
                let tmp = tempfile::Builder::new()
                    .prefix("strata-test-")
                    .tempdir()
                    .expect("create temp dir");
                let drives: Vec<PathBuf> = (1..=opts.drive_count)
                    .map(|i| tmp.path().join(format!("d{i}")))
                    .collect();
                for d in &drives {
                    std::fs::create_dir_all(d).expect("create drive folder");
                }
                (Some(tmp), drives)
            }
        };
        let server = TestServer {
            opts,
            drives,
            running: Mutex::new(None),
            log: Arc::new(Mutex::new(Vec::new())),
            run_start: Mutex::new(0),
            tmp,
        };
        server.spawn()?;
        Ok(server)
    }

    /// Creates fresh temp drive folders (kept alive by the returned `TempDir`).
    pub fn temp_drives(count: usize) -> (tempfile::TempDir, Vec<PathBuf>) {
        let tmp = tempfile::Builder::new()
            .prefix("strata-test-")
            .tempdir()
            .expect("create temp dir");
        let drives: Vec<PathBuf> = (1..=count)
            .map(|i| tmp.path().join(format!("d{i}")))
            .collect();
        for d in &drives {
            std::fs::create_dir_all(d).expect("create drive folder");
        }
        (tmp, drives)
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
        cmd.arg("server").arg("--address").arg(&self.opts.address);
        if let Some(ec) = &self.opts.ec {
            cmd.arg("--ec").arg(ec);
        }
        cmd.args(&self.opts.extra_args);
        match &self.opts.drive_args {
            Some(args) => {
                cmd.args(args);
            }
            None => {
                cmd.args(&self.drives);
            }
        }
        cmd.env_remove("STRATA_ROOT_USER")
            .env_remove("STRATA_ROOT_PASSWORD")
            .env("NO_COLOR", "1");
        if self.opts.set_credentials {
            cmd.env("STRATA_ROOT_USER", ACCESS_KEY)
                .env("STRATA_ROOT_PASSWORD", SECRET_KEY);
        }
        for (k, v) in &self.opts.env {
            cmd.env(k, v);
        }
        if let Some(dir) = &self.opts.current_dir {
            cmd.current_dir(dir);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    fn spawn(&self) -> Result<(), StartFailure> {
        let mut child = self.command().spawn().expect("spawn strata binary");
        let cleanup = self
            .tmp
            .as_ref()
            .map(|t| t.path().to_string_lossy().into_owned())
            .unwrap_or_default();
        let watchdog = spawn_watchdog(child.id(), &cleanup);
        let (tx, rx) = mpsc::channel::<(&'static str, String)>();
        let echo = std::env::var_os("STRATA_TEST_ECHO").is_some();
        let stderr = child.stderr.take().expect("piped stderr");
        let stdout = child.stdout.take().expect("piped stdout");
        // Marks the start of this run in the shared log (restarts append).
        let first_line = self.log.lock().unwrap().len();
        *self.run_start.lock().unwrap() = first_line;
        pump_lines(stderr, "", self.log.clone(), Some(tx.clone()), echo);
        pump_lines(stdout, "stdout: ", self.log.clone(), Some(tx), echo);

        let deadline = Instant::now() + START_TIMEOUT;
        let (scheme, addr) = loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(remaining.min(Duration::from_millis(200))) {
                Ok(addr) => break addr,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Ok(Some(status)) = child.try_wait() {
                        // Give the pump threads a moment to drain the pipes.
                        std::thread::sleep(Duration::from_millis(100));
                        stop_watchdog(watchdog);
                        return Err(StartFailure {
                            status: Some(status),
                            output: self.log_since(first_line),
                        });
                    }
                    if Instant::now() >= deadline {
                        let _ = child.kill();
                        let _ = child.wait();
                        stop_watchdog(watchdog);
                        return Err(StartFailure {
                            status: None,
                            output: self.log_since(first_line),
                        });
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // Both pipes closed without the marker: the process is exiting.
                    let status = child.wait().expect("wait for strata");
                    stop_watchdog(watchdog);
                    return Err(StartFailure {
                        status: Some(status),
                        output: self.log_since(first_line),
                    });
                }
            }
        };
        *self.running.lock().unwrap() = Some(Running {
            child,
            watchdog,
            addr,
            scheme,
        });
        Ok(())
    }

    /// `HOST:PORT` the server announced.
    pub fn addr(&self) -> String {
        self.running
            .lock()
            .unwrap()
            .as_ref()
            .expect("server is not running")
            .addr
            .clone()
    }

    /// `http://HOST:PORT` (`https://` when the server announced TLS).
    pub fn endpoint(&self) -> String {
        let scheme = self
            .running
            .lock()
            .unwrap()
            .as_ref()
            .expect("server is not running")
            .scheme;
        format!("{scheme}://{}", self.addr())
    }

    /// Sends the running server a signal (`-STOP`, `-CONT`, `-TERM`, as `kill` takes it).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} {}", self.pid());
    }

    /// Process id of the running server (to send it signals).
    pub fn pid(&self) -> u32 {
        self.running
            .lock()
            .unwrap()
            .as_ref()
            .expect("server is not running")
            .child
            .id()
    }

    /// Waits up to `timeout` for the server to exit by itself; its status, or `None`.
    pub fn wait_exit(&self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(running) = self.running.lock().unwrap().as_mut() {
                if let Ok(Some(status)) = running.child.try_wait() {
                    return Some(status);
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Drive folders in command-line order.
    pub fn drives(&self) -> &[PathBuf] {
        &self.drives
    }

    pub fn options(&self) -> &ServerOptions {
        &self.opts
    }

    /// Kills the server (SIGKILL). The drives stay.
    pub fn kill(&self) {
        if let Some(r) = self.running.lock().unwrap().take() {
            r.stop();
        }
    }

    /// Kills and starts again on the same drives and options (a new port: make new clients).
    pub fn restart(&self) {
        if let Err(f) = self.try_restart() {
            panic!(
                "strata server failed to restart (status {:?}); output:\n{}",
                f.status, f.output
            );
        }
    }

    pub fn try_restart(&self) -> Result<(), StartFailure> {
        self.kill();
        self.spawn()
    }

    /// Everything the server printed so far (all runs).
    pub fn log(&self) -> String {
        self.log_since(0)
    }

    /// What the current (latest) run printed so far.
    pub fn run_log(&self) -> String {
        let start = *self.run_start.lock().unwrap();
        self.log_since(start)
    }

    fn log_since(&self, first_line: usize) -> String {
        let log = self.log.lock().unwrap();
        log[first_line.min(log.len())..].join("\n")
    }

    /// Last `n` log lines, for assertion messages.
    pub fn log_tail(&self, n: usize) -> String {
        let log = self.log.lock().unwrap();
        log[log.len().saturating_sub(n)..].join("\n")
    }

    /// SDK client with the test credentials.
    pub fn client(&self) -> Client {
        s3_client(&self.endpoint(), ACCESS_KEY, SECRET_KEY)
    }

    /// SDK client with arbitrary credentials (wrong secret, unknown key, defaults).
    pub fn client_with(&self, access_key: &str, secret_key: &str) -> Client {
        s3_client(&self.endpoint(), access_key, secret_key)
    }

    /// URL of `path_and_query` (which starts with `/`) on this server.
    pub fn url(&self, path_and_query: &str) -> String {
        format!("{}{}", self.endpoint(), path_and_query)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "---- last strata server output ----\n{}\n---- end of strata output ----",
                self.log_tail(200)
            );
        }
        self.kill();
    }
}

/// `sh` process that SIGKILLs `pid` once our end of its stdin closes, i.e. when the test
/// process goes away without dropping the server (a `static` shared server, an abort), and
/// then removes the server's generated temp folder (`cleanup`, may be empty).
fn spawn_watchdog(pid: u32, cleanup: &str) -> Option<Child> {
    Command::new("sh")
        .arg("-c")
        .arg(
            "cat >/dev/null; kill -9 \"$0\" 2>/dev/null; \
             if [ -n \"$1\" ]; then sleep 0.2; rm -rf \"$1\"; fi",
        )
        .arg(pid.to_string())
        .arg(cleanup)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

fn stop_watchdog(dog: Option<Child>) {
    if let Some(mut dog) = dog {
        let _ = dog.kill();
        let _ = dog.wait();
        drop(dog.stdin.take());
    }
}

/// Reads `pipe` line by line into `log`; sends the announced address once.
fn pump_lines(
    pipe: impl Read + Send + 'static,
    prefix: &'static str,
    log: Arc<Mutex<Vec<String>>>,
    tx: Option<mpsc::Sender<(&'static str, String)>>,
    echo: bool,
) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        let mut tx = tx;
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&buf).trim_end().to_string();
            if let Some(addr) = parse_listening(&line) {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(addr);
                }
            }
            if echo {
                eprintln!("[strata] {prefix}{line}");
            }
            log.lock().unwrap().push(format!("{prefix}{line}"));
        }
    });
}

/// Extracts the scheme and `HOST:PORT` from a line containing `listening on http://HOST:PORT`
/// (or `https://`).
fn parse_listening(line: &str) -> Option<(&'static str, String)> {
    let (scheme, start) = match line.find(LISTENING_MARKER) {
        Some(at) => ("http", at + LISTENING_MARKER.len()),
        None => (
            "https",
            line.find(LISTENING_MARKER_TLS)? + LISTENING_MARKER_TLS.len(),
        ),
    };
    let addr: String = line[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '[' | ']' | '-'))
        .collect();
    let addr = addr.trim_end_matches('.').to_string();
    if addr.contains(':') {
        Some((scheme, addr))
    } else {
        None
    }
}

/// SDK client: path-style, us-east-1, plain HTTP, static credentials, no retries (so fault
/// tests see the first answer), generous timeouts so a hung server fails the test.
pub fn s3_client(endpoint: &str, access_key: &str, secret_key: &str) -> Client {
    let http = aws_smithy_http_client::Builder::new().build_http();
    s3_client_over(http, endpoint, access_key, secret_key)
}

/// The same over `http`, any HTTP client the SDK takes (one that speaks TLS, say).
pub fn s3_client_over(
    http: aws_sdk_s3::config::SharedHttpClient,
    endpoint: &str,
    access_key: &str,
    secret_key: &str,
) -> Client {
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(http)
        .region(Region::new(REGION))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(Credentials::new(
            access_key,
            secret_key,
            None,
            None,
            "strata-tests",
        ))
        .retry_config(RetryConfig::standard().with_max_attempts(1))
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(10))
                .operation_timeout(Duration::from_secs(120))
                .build(),
        )
        .build();
    Client::from_conf(config)
}
