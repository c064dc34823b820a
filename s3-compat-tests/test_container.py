"""The container image without a container engine: `deploy/docker-entrypoint.sh` run directly
(with a fake `strata` on PATH that reports the command line it got, and once with the real
binary), and the Dockerfile, docker-compose and Kubernetes files checked as parsed documents.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import STRATA_BIN

REPO_ROOT = Path(__file__).resolve().parent.parent
ENTRYPOINT = REPO_ROOT / "deploy" / "docker-entrypoint.sh"
DOCKERFILE = REPO_ROOT / "Dockerfile"
COMPOSE = REPO_ROOT / "deploy" / "docker-compose.yml"
STATEFULSET = REPO_ROOT / "deploy" / "kubernetes" / "statefulset.yaml"

CREDENTIALS = {"STRATA_ROOT_USER": "admin", "STRATA_ROOT_PASSWORD": "a-long-secret"}
DEFAULT_ARGS = ["server", "--ec", "6+3", "--address", "0.0.0.0:9000", "/data/d{1...9}"]

# The image's /bin/sh is dash; bash runs the script the same way.
SHELLS = [s for s in ("dash", "bash") if shutil.which(s)]

# Reports what it was started with, as JSON: arguments, STRATA_* environment, parent pid.
FAKE_STRATA = """#!{python}
import json, os, sys
print(json.dumps({{
    "argv": sys.argv[1:],
    "env": {{k: v for k, v in os.environ.items() if k.startswith("STRATA_")}},
    "ppid": os.getppid(),
}}))
"""


@pytest.fixture
def fake_bin(tmp_path) -> Path:
    """A folder with fake `strata` and `curl` commands, to put first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("strata", "curl"):
        path = bin_dir / name
        path.write_text(FAKE_STRATA.format(python=sys.executable))
        path.chmod(0o755)
    return bin_dir


def run_entrypoint(shell: str, bin_dir: Path, env: dict, args=(), cwd=None):
    """Runs the entrypoint under `shell` with only `env` (plus PATH); returns the process."""
    full_env = {"PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin", **env}
    return subprocess.run(
        [shell, str(ENTRYPOINT), *args],
        env=full_env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
    )


def started(proc) -> dict:
    """What the fake command reported; fails with the entrypoint's output otherwise."""
    assert proc.returncode == 0, f"entrypoint failed ({proc.returncode}): {proc.stderr}"
    return json.loads(proc.stdout)


def expand_ranges(arg: str) -> list[str]:
    """strata's `{N...M}` expansion, for checking drive lists against volume mounts."""
    m = re.search(r"\{(\d+)\.\.\.(\d+)\}", arg)
    if not m:
        return [arg]
    out = []
    for n in range(int(m.group(1)), int(m.group(2)) + 1):
        out += expand_ranges(arg[: m.start()] + str(n) + arg[m.end() :])
    return out


# The entrypoint.


@pytest.mark.parametrize("shell", SHELLS)
def test_entrypoint_defaults_exec_strata_server_over_nine_drives(shell, fake_bin):
    report = started(run_entrypoint(shell, fake_bin, CREDENTIALS))
    assert report["argv"] == DEFAULT_ARGS
    # exec: strata replaced the shell, so its parent is whoever started the entrypoint (tini
    # in the image) and the signals it forwards reach the server.
    assert report["ppid"] == os.getpid()
    assert report["env"]["STRATA_ROOT_USER"] == "admin"
    assert report["env"]["STRATA_ROOT_PASSWORD"] == "a-long-secret"
    # The console listens beyond the container's loopback, unless told otherwise.
    assert report["env"]["STRATA_CONSOLE_ADDRESS"] == "0.0.0.0:9001"
    env = {**CREDENTIALS, "STRATA_CONSOLE_ADDRESS": "none"}
    report = started(run_entrypoint(shell, fake_bin, env))
    assert report["env"]["STRATA_CONSOLE_ADDRESS"] == "none"


@pytest.mark.parametrize("shell", SHELLS)
def test_entrypoint_turns_every_setting_into_its_flag(shell, fake_bin):
    env = {
        **CREDENTIALS,
        "STRATA_EC": "4+2",
        "STRATA_ADDRESS": "[::]:9443",
        "STRATA_DOMAIN": "s3.example.com",
        "STRATA_CERTS_DIR": "/certs",
        "STRATA_JSON_LOGS": "true",
        "STRATA_MAX_REQUESTS": "64",
    }
    report = started(run_entrypoint(shell, fake_bin, env))
    assert report["argv"] == [
        "server",
        "--ec", "4+2",
        "--address", "[::]:9443",
        "--domain", "s3.example.com",
        "--certs-dir", "/certs",
        "--json-logs",
        # One erasure set of the chosen geometry.
        "/data/d{1...6}",
    ]
    # Settings the server reads itself pass through untouched.
    assert report["env"]["STRATA_MAX_REQUESTS"] == "64"


@pytest.mark.parametrize("shell", SHELLS)
def test_entrypoint_leaves_out_unset_and_false_settings(shell, fake_bin):
    env = {**CREDENTIALS, "STRATA_DOMAIN": "", "STRATA_CERTS_DIR": "", "STRATA_JSON_LOGS": "false"}
    assert started(run_entrypoint(shell, fake_bin, env))["argv"] == DEFAULT_ARGS
    for value in ("1", "yes", "TRUE", "on"):
        env = {**CREDENTIALS, "STRATA_JSON_LOGS": value}
        assert "--json-logs" in started(run_entrypoint(shell, fake_bin, env))["argv"]
    bad = run_entrypoint(shell, fake_bin, {**CREDENTIALS, "STRATA_JSON_LOGS": "maybe"})
    assert bad.returncode != 0 and "STRATA_JSON_LOGS" in bad.stderr and bad.stdout == ""


@pytest.mark.parametrize("shell", SHELLS)
def test_entrypoint_drive_list_is_split_but_never_globbed(shell, fake_bin, tmp_path):
    # A `*` that would match files in the working folder and a range both reach strata as
    # written (strata expands the range itself).
    (tmp_path / "data1").mkdir()
    (tmp_path / "data2").mkdir()
    env = {**CREDENTIALS, "STRATA_DRIVES": " /data{1...9}   /mnt/extra* \n/mnt/last "}
    report = started(run_entrypoint(shell, fake_bin, env, cwd=tmp_path))
    assert report["argv"][-3:] == ["/data{1...9}", "/mnt/extra*", "/mnt/last"]
    env = {**CREDENTIALS, "STRATA_DRIVES": "*"}
    assert started(run_entrypoint(shell, fake_bin, env, cwd=tmp_path))["argv"][-1] == "*"


@pytest.mark.parametrize("shell", SHELLS)
def test_entrypoint_extra_flags_go_before_the_drives(shell, fake_bin):
    args = ["--block-size", "2097152"]
    report = started(run_entrypoint(shell, fake_bin, CREDENTIALS, args))
    assert report["argv"] == DEFAULT_ARGS[:-1] + args + DEFAULT_ARGS[-1:]


@pytest.mark.parametrize("shell", SHELLS)
def test_entrypoint_runs_other_commands_as_given(shell, fake_bin):
    # `docker exec`/`docker run IMAGE strata admin info`: no server, no credential check.
    report = started(run_entrypoint(shell, fake_bin, {}, ["strata", "admin", "info"]))
    assert report["argv"] == ["admin", "info"]
    proc = run_entrypoint(shell, fake_bin, {}, ["sh", "-c", "echo hello"])
    assert proc.returncode == 0 and proc.stdout == "hello\n"


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize(
    "env",
    [
        {},
        {"STRATA_ROOT_USER": "admin"},
        {"STRATA_ROOT_PASSWORD": "a-long-secret"},
        {"STRATA_ROOT_USER": "", "STRATA_ROOT_PASSWORD": ""},
    ],
    ids=["none", "no-password", "no-user", "empty"],
)
def test_entrypoint_refuses_to_start_without_credentials(shell, fake_bin, env):
    proc = run_entrypoint(shell, fake_bin, env)
    assert proc.returncode != 0
    assert proc.stdout == "", "strata was started"
    assert "STRATA_ROOT_USER and STRATA_ROOT_PASSWORD must be set" in proc.stderr
    assert "at least 8 characters" in proc.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_entrypoint_reads_credentials_from_files(shell, fake_bin, tmp_path):
    (tmp_path / "user").write_text("file-admin\n")
    (tmp_path / "password").write_text("file-secret-123")
    env = {
        "STRATA_ROOT_USER_FILE": str(tmp_path / "user"),
        "STRATA_ROOT_PASSWORD_FILE": str(tmp_path / "password"),
    }
    report = started(run_entrypoint(shell, fake_bin, env))
    assert report["env"]["STRATA_ROOT_USER"] == "file-admin"
    assert report["env"]["STRATA_ROOT_PASSWORD"] == "file-secret-123"
    assert "STRATA_ROOT_PASSWORD_FILE" not in report["env"]
    both = run_entrypoint(shell, fake_bin, {**CREDENTIALS, **env})
    assert both.returncode != 0 and "not both" in both.stderr
    missing = {**env, "STRATA_ROOT_PASSWORD_FILE": str(tmp_path / "nope")}
    proc = run_entrypoint(shell, fake_bin, missing)
    assert proc.returncode != 0 and "cannot read" in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("ec", ["6", "6+", "+3", "six+3", "6+3+1"])
def test_entrypoint_refuses_a_malformed_ec_it_must_count_drives_for(shell, fake_bin, ec):
    proc = run_entrypoint(shell, fake_bin, {**CREDENTIALS, "STRATA_EC": ec})
    assert proc.returncode != 0 and "STRATA_EC must look like 6+3" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize(
    "env, url",
    [
        ({}, "http://127.0.0.1:9000/health/ready"),
        ({"STRATA_ADDRESS": "[::]:9100"}, "http://127.0.0.1:9100/health/ready"),
        ({"STRATA_ADDRESS": "10.1.2.3:9000"}, "http://10.1.2.3:9000/health/ready"),
        ({"STRATA_CERTS_DIR": "/certs"}, "https://127.0.0.1:9000/health/ready"),
    ],
)
def test_entrypoint_healthcheck_asks_health_ready(shell, fake_bin, env, url):
    report = started(run_entrypoint(shell, fake_bin, env, ["healthcheck"]))
    assert report["argv"][-1] == url
    assert "--fail" in report["argv"]


@pytest.mark.skipif(not shutil.which("curl"), reason="curl is not installed here")
def test_entrypoint_starts_the_real_server_and_its_healthcheck_passes(tmp_path):
    """The real binary accepts the command line the entrypoint builds: JSON logs, a drive
    range, the address; the healthcheck answers; SIGTERM reaches the server and stops it."""
    if not STRATA_BIN.is_file():
        pytest.fail(f"strata binary not found at {STRATA_BIN}")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "strata").symlink_to(STRATA_BIN)
    for i in range(1, 7):
        (tmp_path / f"d{i}").mkdir()
    env = {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        **CREDENTIALS,
        "STRATA_EC": "4+2",
        "STRATA_DRIVES": f"{tmp_path}/d{{1...6}}",
        "STRATA_ADDRESS": "127.0.0.1:0",
        "STRATA_CONSOLE_ADDRESS": "127.0.0.1:0",
        "STRATA_JSON_LOGS": "true",
        "NO_COLOR": "1",
    }
    proc = subprocess.Popen(
        ["sh", str(ENTRYPOINT)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    try:
        address = None
        deadline = time.monotonic() + 60
        while address is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            record = json.loads(line)  # every line is JSON
            m = re.search(r"listening on https?://(\S+)", record["fields"].get("message", ""))
            if m:
                address = m.group(1)
        assert address, "server did not start:\n" + "".join(lines)
        # exec: the process started is the server itself.
        assert Path(f"/proc/{proc.pid}/exe").resolve() == STRATA_BIN.resolve()
        check = subprocess.run(
            ["sh", str(ENTRYPOINT), "healthcheck"],
            env={**env, "STRATA_ADDRESS": address},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert check.returncode == 0, check.stderr
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, "".join(lines) + rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # Nothing to reach once it stopped.
    check = subprocess.run(
        ["sh", str(ENTRYPOINT), "healthcheck"],
        env={**env, "STRATA_ADDRESS": address},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert check.returncode != 0


def test_entrypoint_is_executable_posix_sh():
    assert os.access(ENTRYPOINT, os.X_OK)
    assert ENTRYPOINT.read_text().startswith("#!/bin/sh\n")
    if shutil.which("dash"):
        subprocess.run(["dash", "-n", str(ENTRYPOINT)], check=True)


# The Dockerfile.


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the final stage, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            out = []
        out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_runs_the_entrypoint_as_non_root_with_a_volume_per_drive():
    final = dockerfile_instructions()
    users = [args for word, args in final if word == "USER"]
    assert users, "no USER: the image would run as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), users[-1]
    assert user.isdigit(), "a numeric USER lets Kubernetes' runAsNonRoot check it"

    entrypoint = json.loads(next(args for word, args in final if word == "ENTRYPOINT"))
    assert entrypoint == ["/usr/bin/tini", "--", "/usr/local/bin/docker-entrypoint.sh"]
    copies = [args for word, args in final if word == "COPY"]
    assert any(
        "deploy/docker-entrypoint.sh" in c and c.endswith("/usr/local/bin/docker-entrypoint.sh")
        for c in copies
    ), copies
    assert not any(word == "CMD" for word, _ in final), "the entrypoint builds the command"

    volumes = [v for word, args in final if word == "VOLUME" for v in json.loads(args)]
    assert volumes == [f"/data/d{i}" for i in range(1, 10)]
    run = " ".join(args for word, args in final if word == "RUN")
    for volume in volumes:
        assert volume in run, f"{volume} is not created (and given to the user) in the image"
    assert "chown -R strata:strata /data" in run

    healthcheck = next(args for word, args in final if word == "HEALTHCHECK")
    assert '"/usr/local/bin/docker-entrypoint.sh", "healthcheck"' in healthcheck
    assert "curl" in run and "tini" in run


# docker-compose.


def test_compose_service_has_env_volumes_for_every_drive_and_a_healthcheck():
    compose = yaml.safe_load(COMPOSE.read_text())
    service = compose["services"]["strata"]
    assert service["user"].split(":")[0] not in ("0", "root")
    assert service["build"]["context"] == ".."
    assert "9000:9000" in service["ports"]

    env = service["environment"]
    assert env["STRATA_ROOT_USER"]
    # The password comes from the host's environment and is required there.
    assert env["STRATA_ROOT_PASSWORD"].startswith("${STRATA_ROOT_PASSWORD:?")
    data, parity = map(int, env["STRATA_EC"].split("+"))
    drives = [d for arg in env["STRATA_DRIVES"].split() for d in expand_ranges(arg)]
    assert len(drives) == data + parity

    mounts = dict(reversed(v.split(":", 1)) for v in service["volumes"])
    assert sorted(mounts) == sorted(drives), "a volume for every drive, and no other"
    assert set(mounts.values()) <= set(compose["volumes"])
    assert len(set(mounts.values())) == len(drives), "one volume per drive"

    assert service["healthcheck"]["test"] == [
        "CMD",
        "/usr/local/bin/docker-entrypoint.sh",
        "healthcheck",
    ]


# Kubernetes.


def kubernetes_documents() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for doc in yaml.safe_load_all(STATEFULSET.read_text()):
        if doc:
            out.setdefault(doc["kind"], []).append(doc)
    return out


def test_statefulset_runs_non_root_with_probes_secret_and_a_claim_per_drive():
    docs = kubernetes_documents()
    (sts,) = docs["StatefulSet"]
    spec = sts["spec"]
    assert spec["replicas"] == 1
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()

    security = pod["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] not in (None, 0)
    assert security["fsGroup"] == security["runAsGroup"], "volumes writable by the server"

    (container,) = pod["containers"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert "command" not in container and "args" not in container, "the image's entrypoint runs"
    port = next(p for p in container["ports"] if p["containerPort"] == 9000)
    ready, live = container["readinessProbe"], container["livenessProbe"]
    assert ready["httpGet"]["path"] == "/health/ready"
    assert live["httpGet"]["path"] == "/health/live"
    for probe in (ready, live, container["startupProbe"]):
        assert probe["httpGet"]["port"] in (port["name"], 9000)

    env = {e["name"]: e for e in container["env"]}
    secrets = {s["metadata"]["name"]: s for s in docs["Secret"]}
    for name, key in (("STRATA_ROOT_USER", "user"), ("STRATA_ROOT_PASSWORD", "password")):
        ref = env[name]["valueFrom"]["secretKeyRef"]
        assert ref["key"] == key
        assert key in secrets[ref["name"]]["stringData"]
    data, parity = map(int, env["STRATA_EC"]["value"].split("+"))
    drives = [d for arg in env["STRATA_DRIVES"]["value"].split() for d in expand_ranges(arg)]
    assert len(drives) == data + parity

    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert sorted(mounts) == sorted(drives), "a volume for every drive, and no other"
    claims = {c["metadata"]["name"] for c in spec["volumeClaimTemplates"]}
    assert set(mounts.values()) == claims and len(claims) == len(drives), "one claim per drive"

    services = {s["metadata"]["name"]: s["spec"] for s in docs["Service"]}
    assert services[spec["serviceName"]]["clusterIP"] == "None"
    for service in services.values():
        assert service["selector"].items() <= labels.items()
        assert any(p["targetPort"] in (port["name"], 9000) for p in service["ports"])
