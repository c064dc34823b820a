#!/bin/sh
# Entrypoint of the Strata image: turns environment variables into `strata server` arguments
# and execs the server (so it receives the signals tini forwards; tini stays PID 1).
#
#   STRATA_ROOT_USER, STRATA_ROOT_PASSWORD   required (or STRATA_ROOT_USER_FILE and
#                           STRATA_ROOT_PASSWORD_FILE naming files that hold them, e.g. Docker
#                           secrets); the password needs at least 8 characters
#   STRATA_DRIVES           drive folders, separated by spaces; `{1...9}` ranges are expanded
#                           by strata. Default: /data/d1 ... /data/dN, N = the drives of one
#                           erasure set of STRATA_EC (one volume per drive: mount each)
#   STRATA_EC               erasure coding DATA+PARITY, default 6+3
#   STRATA_ADDRESS          listen address, default 0.0.0.0:9000
#   STRATA_CONSOLE_ADDRESS  the web console's address, default 0.0.0.0:9001 (reachable from
#                           outside the container); `none` turns it off
#   STRATA_DOMAIN           domain for virtual-hosted-style requests (bucket.DOMAIN)
#   STRATA_CERTS_DIR        TLS certificate folder (passed as --certs-dir when set)
#   STRATA_JSON_LOGS        1/true/yes: log JSON lines
#
# Every other STRATA_* setting (STRATA_LOG, STRATA_MAX_REQUESTS, ...) is read by the server
# itself from the environment.
#
# Arguments: none starts the server as configured; arguments starting with `-` are extra
# `strata server` flags (placed before the drives); `healthcheck` asks the running server's
# /health/ready (with curl); anything else runs as a command, e.g. `strata admin info`.
set -eu

die() {
    echo "docker-entrypoint: $*" >&2
    exit 64
}

# `healthcheck` (the image's HEALTHCHECK): whether the server here is ready for writes.
if [ "${1:-}" = healthcheck ]; then
    address=${STRATA_ADDRESS:-0.0.0.0:9000}
    host=${address%:*}
    case "$host" in
        '' | 0.0.0.0 | '[::]') host=127.0.0.1 ;;
    esac
    scheme=http
    [ -z "${STRATA_CERTS_DIR:-}" ] || scheme=https
    exec curl --fail --silent --show-error --insecure --max-time 4 --output /dev/null \
        "$scheme://$host:${address##*:}/health/ready"
fi

# A command rather than server flags: run it as given.
if [ "$#" -gt 0 ]; then
    case "$1" in
        -*) ;;
        *) exec "$@" ;;
    esac
fi

# VAR_FILE names a file holding VAR (Docker and Kubernetes secrets).
from_file() {
    name=$1
    eval "file=\${${name}_FILE:-}"
    eval "value=\${${name}:-}"
    [ -n "$file" ] || return 0
    [ -z "$value" ] || die "set $name or ${name}_FILE, not both"
    [ -r "$file" ] || die "${name}_FILE: cannot read $file"
    value=$(cat "$file")
    export "$name=$value"
}
from_file STRATA_ROOT_USER
from_file STRATA_ROOT_PASSWORD

if [ -z "${STRATA_ROOT_USER:-}" ] || [ -z "${STRATA_ROOT_PASSWORD:-}" ]; then
    die "STRATA_ROOT_USER and STRATA_ROOT_PASSWORD must be set (the root credentials; the \
password needs at least 8 characters). The server listens on ${STRATA_ADDRESS:-0.0.0.0:9000} \
and refuses to start there with its built-in default credentials."
fi
unset STRATA_ROOT_USER_FILE STRATA_ROOT_PASSWORD_FILE
# The server's own default, 127.0.0.1, would be the container's loopback alone.
export STRATA_CONSOLE_ADDRESS="${STRATA_CONSOLE_ADDRESS:-0.0.0.0:9001}"

ec=${STRATA_EC:-6+3}
drives=${STRATA_DRIVES:-}
if [ -z "$drives" ]; then
    # One erasure set: /data/d1 ... /data/dN.
    case "$ec" in
        *[!0-9+]* | +* | *+ | *+*+*) die "STRATA_EC must look like 6+3, got '$ec'" ;;
        *+*) ;;
        *) die "STRATA_EC must look like 6+3, got '$ec'" ;;
    esac
    drives="/data/d{1...$((${ec%+*} + ${ec#*+}))}"
fi

# Built back to front: extra flags, then the drives, go after the settings.
extra_count=$#
set -- "$@" --ec "$ec"
set -- "$@" --address "${STRATA_ADDRESS:-0.0.0.0:9000}"
if [ -n "${STRATA_DOMAIN:-}" ]; then
    set -- "$@" --domain "$STRATA_DOMAIN"
fi
if [ -n "${STRATA_CERTS_DIR:-}" ]; then
    set -- "$@" --certs-dir "$STRATA_CERTS_DIR"
fi
case "${STRATA_JSON_LOGS:-}" in
    1 | [Tt]rue | TRUE | [Yy]es | YES | [Oo]n | ON) set -- "$@" --json-logs ;;
    '' | 0 | [Ff]alse | FALSE | [Nn]o | NO | [Oo]ff | OFF) ;;
    *) die "STRATA_JSON_LOGS must be true or false, got '$STRATA_JSON_LOGS'" ;;
esac
# The extra flags given as arguments move behind the settings.
while [ "$extra_count" -gt 0 ]; do
    set -- "$@" "$1"
    shift
    extra_count=$((extra_count - 1))
done
# Drive arguments: split on blanks, never globbed (strata expands `{N...M}` itself).
set -f
# shellcheck disable=SC2086
set -- "$@" $drives
set +f

exec strata server "$@"
