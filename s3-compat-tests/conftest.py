"""Fixtures for the S3 compatibility suites: a real `strata` server and real clients.

The session server is the release binary (`target/release/strata`, or `$STRATA_BIN`) on
`127.0.0.1:0` over nine temporary drive folders (one 6+3 erasure set). Tests talk to it with
boto3, the minio SDK and the aws CLI exactly as a user would, and assert what a user checks:
HTTP status, the S3 error code, and byte-identical data (sha256).

Tests that need a server of their own (drive faults, restarts, tiers) use `start_server`; one
that must come back on the same port after a restart asks for `address=f"127.0.0.1:{free_port()}"`.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import boto3
import botocore.config
import pytest
import urllib3
from minio import Minio

REPO_ROOT = Path(__file__).resolve().parent.parent
STRATA_BIN = Path(os.environ.get("STRATA_BIN", REPO_ROOT / "target" / "release" / "strata"))

ACCESS_KEY = "compat-access-key"
SECRET_KEY = "compat-secret-key-0123456789abcdef"
REGION = "us-east-1"

STARTUP_TIMEOUT_S = 60
# Debug-build tracing output may carry colour codes even into a pipe; strip them before matching.
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# `listening on https://...` when the server serves TLS (`--certs-dir`).
_LISTENING_RE = re.compile(r"listening on (https?)://(\S+):(\d+)")

MiB = 1024 * 1024


# The session server's deployment master key (`<name>:<base64 of 32 bytes>`): its name is
# the default KMS key.
KMS_KEY_NAME = "compat-key"
KMS_MASTER_KEY = f"{KMS_KEY_NAME}:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 * MiB):
            h.update(chunk)
    return h.hexdigest()


def write_random_file(path: os.PathLike, size: int, piece: int = 8 * MiB) -> str:
    """Writes `size` random bytes to `path` in pieces; returns their sha256."""
    h = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        while left:
            chunk = os.urandom(min(piece, left))
            h.update(chunk)
            f.write(chunk)
            left -= len(chunk)
    return h.hexdigest()


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL the server if pytest itself dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    except OSError:
        pass


class StrataServer:
    """One `strata server` process on a free loopback port, its log drained to a file."""

    def __init__(
        self, drives: list[str], log_path: Path, extra_args=(), env=None, address="127.0.0.1:0"
    ):
        self.drives = [str(d) for d in drives]
        self.log_path = log_path
        self.extra_args = list(extra_args)
        self.env = env
        self.address = address
        self.proc: subprocess.Popen | None = None
        self.host: str | None = None
        self.port: int | None = None
        self.scheme = "http"

    @property
    def endpoint(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def start(self) -> "StrataServer":
        if not STRATA_BIN.is_file():
            pytest.fail(
                f"strata binary not found at {STRATA_BIN}: run `cargo build --release --bin strata`"
                " or set STRATA_BIN",
                pytrace=False,
            )
        env = dict(os.environ)
        env.update(
            STRATA_ROOT_USER=ACCESS_KEY,
            STRATA_ROOT_PASSWORD=SECRET_KEY,
            NO_COLOR="1",
            RUST_BACKTRACE="1",
        )
        if self.env:
            env.update(self.env)
        cmd = [str(STRATA_BIN), "server", "--address", self.address, *self.extra_args, *self.drives]
        log = open(self.log_path, "ab", buffering=0)
        log.write(f"$ {' '.join(cmd)}\n".encode())
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=_die_with_parent,
        )
        found = threading.Event()
        address: list[tuple[str, str, int]] = []

        def drain(pipe, log_file):
            # Reads every line so the pipe never fills and blocks the server.
            with log_file:
                for raw in iter(pipe.readline, b""):
                    log_file.write(raw)
                    if not found.is_set():
                        m = _LISTENING_RE.search(_ANSI_RE.sub("", raw.decode("utf-8", "replace")))
                        if m:
                            address.append((m.group(1), m.group(2), int(m.group(3))))
                            found.set()
                pipe.close()

        threading.Thread(target=drain, args=(self.proc.stdout, log), daemon=True).start()

        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not found.wait(0.05):
            if self.proc.poll() is not None:
                time.sleep(0.2)  # let the drain thread write the last lines
                pytest.fail(
                    f"strata exited with code {self.proc.returncode} before listening\n"
                    f"{self.log_tail()}",
                    pytrace=False,
                )
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(
                    f"strata did not log 'listening on http://...' within {STARTUP_TIMEOUT_S}s\n"
                    f"{self.log_tail()}",
                    pytrace=False,
                )
        self.scheme, host, self.port = address[0]
        self.host = host.strip("[]") if host.startswith("[") else host
        return self

    def stop(self) -> int | None:
        """Stops the server (SIGTERM, then SIGKILL); returns its exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        return self.proc.returncode

    def kill(self) -> None:
        """Kills the server without letting it shut down (a crash)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=15)

    def restart(self) -> "StrataServer":
        self.stop()
        return self.start()

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no server log)"
        tail = "\n".join(text.splitlines()[-lines:])
        return f"--- last {lines} lines of {self.log_path} ---\n{tail}"

    # Clients bound to this server.

    def boto3_client(self, access_key=ACCESS_KEY, secret_key=SECRET_KEY, **config):
        return make_boto3_client(self.endpoint, access_key, secret_key, **config)

    def minio_client(self, access_key=ACCESS_KEY, secret_key=SECRET_KEY):
        return make_minio_client(self.host, self.port, access_key, secret_key)


def make_boto3_client(endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY, **config):
    cfg = dict(
        region_name=REGION,
        signature_version="s3v4",
        s3={"addressing_style": "path"},
        # One attempt: a retried request would hide a server error from the test.
        retries={"max_attempts": 1, "mode": "standard"},
        connect_timeout=10,
        read_timeout=120,
        max_pool_connections=16,
    )
    cfg.update(config)
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        region_name=REGION,
        config=botocore.config.Config(**cfg),
    )


def make_minio_client(host, port, access_key=ACCESS_KEY, secret_key=SECRET_KEY):
    http = urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=10, read=120),
        maxsize=10,
        # No retries: the minio default retries 5xx answers, which would hide server errors.
        retries=urllib3.Retry(total=0, raise_on_status=False, raise_on_redirect=False),
    )
    # region given: otherwise the SDK first asks GetBucketLocation.
    return Minio(
        f"{host}:{port}",
        access_key=access_key,
        secret_key=secret_key,
        secure=False,
        region=REGION,
        http_client=http,
    )


def force_trailer_checksums(client) -> list[dict]:
    """Makes `client` send its flexible checksum as an aws-chunked trailer, as botocore does
    over HTTPS (over plain HTTP it puts the checksum in a header instead). Returns a list that
    collects the headers of every PutObject/UploadPart request sent, so tests can check that the
    trailer form really went on the wire."""
    sent: list[dict] = []

    def to_trailer(params, **_):
        algorithm = params.get("context", {}).get("checksum", {}).get("request_algorithm")
        if isinstance(algorithm, dict) and algorithm.get("in") == "header":
            algorithm["in"] = "trailer"

    def record(request, **_):
        sent.append(
            {
                k.lower(): v.decode() if isinstance(v, bytes) else v
                for k, v in request.headers.items()
            }
        )

    for op in ("PutObject", "UploadPart"):
        client.meta.events.register(f"before-call.s3.{op}", to_trailer)
        client.meta.events.register(f"before-send.s3.{op}", record)
    return sent


@dataclass
class AwsCli:
    """Runs the venv's `aws` (CLI v1) against one endpoint, isolated from ~/.aws."""

    endpoint: str
    env: dict

    def __call__(self, *args, timeout=900, check=False, env=None) -> subprocess.CompletedProcess:
        """Runs `aws --endpoint-url ENDPOINT ARGS...`; `env` overrides single variables."""
        aws = Path(sys.executable).parent / "aws"
        cmd = [str(aws), "--endpoint-url", self.endpoint, *map(str, args)]
        proc = subprocess.run(
            cmd,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            pytest.fail(
                f"`aws {' '.join(map(str, args))}` exited {proc.returncode}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}",
                pytrace=False,
            )
        return proc


def free_port() -> int:
    """A loopback port nothing listens on right now, for a server that must keep its port
    across restarts (another process could take it in between; unlikely on a test machine)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_aws_cli(endpoint: str, home: Path) -> AwsCli:
    """The aws CLI bound to `endpoint` with the test credentials, its config kept in `home`."""
    config = home / "config"
    config.write_text(f"[default]\nregion = {REGION}\ns3 =\n    addressing_style = path\n")
    credentials = home / "credentials"
    credentials.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_DEFAULT_REGION=REGION,
        AWS_CONFIG_FILE=str(config),
        AWS_SHARED_CREDENTIALS_FILE=str(credentials),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_PAGER="",
        HOME=str(home),
    )
    return AwsCli(endpoint, env)


def unique_name(prefix: str) -> str:
    """A valid bucket name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def empty_and_delete_bucket(client, bucket: str) -> None:
    """Best-effort teardown: the drives are temporary anyway, so errors are ignored."""
    try:
        paginator = client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=bucket):
            for obj in page.get("Contents", []):
                client.delete_object(Bucket=bucket, Key=obj["Key"])
        client.delete_bucket(Bucket=bucket)
    except Exception:
        pass


# Session server and clients.


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> StrataServer:
    base = tmp_path_factory.mktemp("strata")
    drives = [base / f"d{i}" for i in range(1, 10)]
    for d in drives:
        d.mkdir()
    # A key service for SSE-S3 and SSE-KMS, and SSE-C over the loopback's plain HTTP.
    env = {"STRATA_KMS_SECRET_KEY": KMS_MASTER_KEY, "STRATA_SSE_C_ALLOW_HTTP": "true"}
    srv = StrataServer(drives, base / "server.log", env=env).start()
    _SERVERS.append(srv)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def endpoint(server) -> str:
    return server.endpoint


@pytest.fixture(scope="session")
def s3(server):
    """boto3 client with the current defaults (CRC32 checksums on uploads, response checksum
    validation), path-style, us-east-1, one attempt per request."""
    return server.boto3_client()


@pytest.fixture(scope="session")
def s3_client_for(server):
    """Factory: a boto3 client with other credentials or config."""
    return server.boto3_client


@pytest.fixture(scope="session")
def mc(server) -> Minio:
    return server.minio_client()


@pytest.fixture(scope="session")
def aws(server, tmp_path_factory) -> AwsCli:
    return make_aws_cli(server.endpoint, tmp_path_factory.mktemp("aws-home"))


@pytest.fixture
def bucket_name() -> str:
    """A fresh bucket name (the bucket is not created)."""
    return unique_name("compat")


@pytest.fixture
def bucket(s3):
    """A fresh, created bucket; emptied and deleted afterwards."""
    name = unique_name("compat")
    s3.create_bucket(Bucket=name)
    yield name
    empty_and_delete_bucket(s3, name)


# Servers of a test's own.


@pytest.fixture
def start_server(tmp_path):
    """Factory: `start_server(drives, extra_args=(), env=None, address="127.0.0.1:0")` starts a
    server over the given drive paths (strings may use the `{1...9}` range form); every one is
    stopped afterwards."""
    started: list[StrataServer] = []

    def start(drives, extra_args=(), env=None, address="127.0.0.1:0") -> StrataServer:
        log = tmp_path / f"server-{len(started)}.log"
        srv = StrataServer(list(drives), log, extra_args, env, address)
        started.append(srv)
        _SERVERS.append(srv)
        return srv.start()

    yield start
    for srv in started:
        srv.stop()
        _SERVERS.remove(srv)


# Failure reports carry the tail of every running server's log.

_SERVERS: list[StrataServer] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and _SERVERS:
        for srv in _SERVERS:
            report.sections.append((f"strata log ({srv.log_path.name})", srv.log_tail(30)))
