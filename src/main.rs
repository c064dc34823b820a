//! The `strata` command line.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use strata::config::{self, ServerConfig};

#[derive(Parser)]
#[command(
    name = "strata",
    version,
    about = "An S3-compatible, erasure-coded object store"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the S3 API over a set of drive folders.
    Server {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:9000")]
        address: SocketAddr,
        /// Erasure coding as DATA+PARITY shards per set.
        #[arg(long, default_value = "6+3")]
        ec: String,
        /// Erasure block size in bytes.
        #[arg(long, default_value_t = strata::erasure::DEFAULT_BLOCK_SIZE)]
        block_size: usize,
        /// Log as JSON lines.
        #[arg(long)]
        json_logs: bool,
        /// Serve virtual-hosted-style requests (`bucket.DOMAIN`) besides path-style ones.
        #[arg(long, env = "STRATA_DOMAIN")]
        domain: Option<String>,
        /// Drive folders; `/data/d{1...9}` expands. Default: ./data/d1 … ./data/d9.
        drives: Vec<String>,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Server {
            address,
            ec,
            block_size,
            json_logs,
            domain,
            drives,
        } => {
            init_logging(json_logs);
            match server_config(address, &ec, block_size, domain, drives) {
                Ok(config) => run(config),
                Err(e) => fail(e),
            }
        }
    }
}

fn server_config(
    address: SocketAddr,
    ec: &str,
    block_size: usize,
    domain: Option<String>,
    drives: Vec<String>,
) -> anyhow::Result<ServerConfig> {
    let (data_shards, parity_shards) = config::parse_erasure(ec)?;
    let drives = if drives.is_empty() {
        (1..=data_shards + parity_shards)
            .map(|i| PathBuf::from(format!("./data/d{i}")))
            .collect()
    } else {
        config::expand_drive_args(&drives)?
    };
    config::check_drive_count(drives.len(), data_shards, parity_shards)?;
    if !(64 * 1024..=64 << 20).contains(&block_size) {
        anyhow::bail!("--block-size must be between 64 KiB and 64 MiB");
    }
    let user = std::env::var("STRATA_ROOT_USER")
        .ok()
        .filter(|v| !v.is_empty());
    let password = std::env::var("STRATA_ROOT_PASSWORD")
        .ok()
        .filter(|v| !v.is_empty());
    let (root_user, root_password, default_credentials) = match (user, password) {
        (Some(u), Some(p)) => (u, p, false),
        (None, None) => (
            config::DEFAULT_ROOT_USER.to_string(),
            config::DEFAULT_ROOT_PASSWORD.to_string(),
            true,
        ),
        _ => anyhow::bail!("set both STRATA_ROOT_USER and STRATA_ROOT_PASSWORD, or neither"),
    };
    if !default_credentials && root_password.len() < 8 {
        anyhow::bail!("STRATA_ROOT_PASSWORD must be at least 8 characters");
    }
    Ok(ServerConfig {
        address,
        drives,
        data_shards,
        parity_shards,
        block_size,
        root_user,
        root_password,
        default_credentials,
        region: "us-east-1".into(),
        domain: domain.map(|d| d.trim_matches('.').to_ascii_lowercase()),
        stale_upload_expiry: seconds_from_env(
            "STRATA_STALE_UPLOAD_EXPIRY_SECS",
            config::DEFAULT_STALE_UPLOAD_EXPIRY_SECS,
        )?,
        stale_upload_scan: seconds_from_env(
            "STRATA_STALE_UPLOAD_SCAN_SECS",
            config::DEFAULT_STALE_UPLOAD_SCAN_SECS,
        )?,
    })
}

fn seconds_from_env(name: &str, default: u64) -> anyhow::Result<std::time::Duration> {
    let secs = match std::env::var(name) {
        Ok(v) => v
            .parse()
            .map_err(|_| anyhow::anyhow!("{name} must be a whole number of seconds, got {v:?}"))?,
        Err(_) => default,
    };
    Ok(std::time::Duration::from_secs(secs))
}

fn run(config: ServerConfig) -> std::process::ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime starts");
    match runtime.block_on(strata::server::run(config)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}

fn fail(err: anyhow::Error) -> std::process::ExitCode {
    tracing::error!("{err:#}");
    eprintln!("strata: {err:#}");
    std::process::ExitCode::FAILURE
}

fn init_logging(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STRATA_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}
