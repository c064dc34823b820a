#!/usr/bin/env bash
# Runs the S3 compatibility suites (boto3, minio, aws CLI, drive faults) against the release
# binary. The pytest fixtures start and stop the servers themselves.
#
#   s3-compat-tests/run.sh [pytest args...]
#
# Needs target/release/strata (or STRATA_BIN) built first and python3 with venv; creates
# s3-compat-tests/.venv with the pinned clients of requirements.txt on first use.
set -euo pipefail
cd "$(dirname "$0")"

bin="${STRATA_BIN:-../target/release/strata}"
if [[ ! -x "$bin" ]]; then
    echo "error: $bin not found; run 'cargo build --release --bin strata' first (or set STRATA_BIN)" >&2
    exit 1
fi
export STRATA_BIN="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

if [[ ! -x .venv/bin/python ]]; then
    echo "creating s3-compat-tests/.venv"
    python3 -m venv .venv
fi
echo "installing pinned clients (requirements.txt)"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
.venv/bin/python -m pip check --disable-pip-version-check >/dev/null

set +e
.venv/bin/python -m pytest -v --durations=10 "$@"
status=$?
set -e
if [[ $status -eq 5 ]]; then
    echo "error: pytest collected no tests" >&2
    exit 1
fi
exit $status
