//! The release `strata` binary as a child process over a bench's drive folders.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{PASSWORD, USER};

/// The server child; stopped on drop, also when the bench panics.
pub struct Server {
    child: Child,
    /// `http://ADDR`, the address the server announced.
    pub endpoint: String,
}

impl Server {
    /// Starts the server on a free port over `drives` with the bench credentials, the
    /// environment of the bench and then `env` (a `STRATA_LOG` there must keep
    /// `strata::server=info`, whose `listening on` line gives the address), and waits for
    /// it to listen. Every line the server logs is handed to `on_line`.
    pub fn start(
        drives: &[PathBuf],
        env: &[(&str, &str)],
        on_line: impl FnMut(&str) + Send + 'static,
    ) -> Server {
        let mut args = vec!["--address".to_string(), "127.0.0.1:0".to_string()];
        args.extend(drives.iter().map(|d| d.display().to_string()));
        Self::start_with_args(&args, env, on_line)
    }

    /// The same with the `strata server` arguments given whole (a cluster node's address,
    /// layout and flags).
    pub fn start_with_args(
        args: &[String],
        env: &[(&str, &str)],
        on_line: impl FnMut(&str) + Send + 'static,
    ) -> Server {
        Self::start_binary(env!("CARGO_BIN_EXE_strata").as_ref(), args, env, on_line)
    }

    /// The same with another `strata` binary (a previous build, as a baseline).
    pub fn start_binary(
        binary: &std::path::Path,
        args: &[String],
        env: &[(&str, &str)],
        mut on_line: impl FnMut(&str) + Send + 'static,
    ) -> Server {
        let mut child = Command::new(binary)
            .arg("server")
            .args(args)
            .env("STRATA_ROOT_USER", USER)
            .env("STRATA_ROOT_PASSWORD", PASSWORD)
            // Warnings only, except the `listening on` line of `strata::server`.
            .env("STRATA_LOG", "warn,strata::server=info")
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn strata");
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().expect("piped stderr");
        // Keeps draining stderr after the address is known: a full pipe would block the server.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                on_line(&line);
                if let Some((_, rest)) = line.split_once("listening on http://") {
                    let addr = rest.split_whitespace().next().unwrap_or_default();
                    let _ = tx.send(addr.to_string());
                }
            }
        });
        // Guarded before waiting, so a server that never announces itself is stopped too.
        let mut server = Server {
            child,
            endpoint: String::new(),
        };
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("server announces `listening on http://ADDR`");
        server.endpoint = format!("http://{addr}");
        server
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    /// SIGTERM first: a killed server leaves its databases to be repaired at the next open,
    /// which at a million keys takes longer than the figures.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Echoes what the server logs above info level (its warnings and errors), for an
/// `on_line` of `Server::start`.
pub fn print_warnings(line: &str) {
    if !line.contains(" INFO ") && !line.contains(" DEBUG ") {
        eprintln!("[strata] {line}");
    }
}
