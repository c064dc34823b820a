#!/usr/bin/env bash
# The project's test command: formatting, lints, unit and integration tests, the release
# build, then the S3 compatibility suites against that build. Stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

section() {
    printf '\n========== %s ==========\n' "$*"
}

# rustfmt and clippy ship with the toolchain here; add them only if this one lacks them.
ensure_component() {
    local subcommand=$1 component=$2
    if ! cargo "$subcommand" --version >/dev/null 2>&1; then
        echo "cargo $subcommand is missing; installing the rustup component $component"
        rustup component add "$component" || {
            echo "error: could not add the rustup component $component" >&2
            exit 1
        }
    fi
}

# A clean build gains nothing from incremental compilation; CI builds from scratch.
if [[ "${CI:-}" == "true" ]]; then
    export CARGO_INCREMENTAL=0
fi

# The build and the suites' data share one disk; say how much it had when something fails.
disk_report() {
    df -h "$PWD" "${TMPDIR:-/tmp}" | awk 'NR == 1 || !seen[$0]++'
}

section "toolchain"
cargo --version
rustc --version
ensure_component fmt rustfmt
ensure_component clippy clippy
cargo fmt --version
cargo clippy --version

# The cluster tests start their own etcd: Debian's etcd-server package, and etcd-client's
# etcdctl for snapshots.
section "etcd"
if ! command -v etcd >/dev/null 2>&1 || ! command -v etcdctl >/dev/null 2>&1; then
    echo "etcd is missing; installing Debian's etcd-server and etcd-client"
    sudo_if_needed=()
    [[ $(id -u) -eq 0 ]] || sudo_if_needed=(sudo)
    "${sudo_if_needed[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends etcd-server etcd-client \
        || { "${sudo_if_needed[@]}" apt-get update && "${sudo_if_needed[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends etcd-server etcd-client; } \
        || { echo "error: could not install etcd-server and etcd-client" >&2; exit 1; }
fi
# sed reads every line: `head -1` could close the pipe early and fail the run (SIGPIPE).
etcd --version | sed -n 1p

# The console's browser tests drive Debian's Chromium through WebDriver: Debian's
# chromedriver, and the suites' venv's selenium (which then downloads nothing).
section "chromium"
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    echo "chromium or chromedriver is missing; installing Debian's chromium and chromium-driver"
    sudo_if_needed=()
    [[ $(id -u) -eq 0 ]] || sudo_if_needed=(sudo)
    "${sudo_if_needed[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver \
        || { "${sudo_if_needed[@]}" apt-get update && "${sudo_if_needed[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver; } \
        || { echo "error: could not install chromium and chromium-driver" >&2; exit 1; }
fi
chromium --version | sed -n 1p

disk_report

section "cargo fmt --check"
cargo fmt --check

section "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets -- -D warnings

section "cargo test"
cargo test

section "cargo build --release --bin strata"
cargo build --release --bin strata

section "s3-compat-tests (boto3, minio, aws CLI)"
disk_report
# The suites test the binary just built, wherever cargo put it.
target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" == /* ]] || target_dir="$PWD/$target_dir"
STRATA_BIN="$target_dir/release/strata" s3-compat-tests/run.sh
