"""The aws CLI (v1) against strata: `aws s3` high-level commands, `aws s3api` calls, and a
300 MiB multipart round trip with the CLI's default transfer settings."""

from __future__ import annotations

import hashlib
import json
import os

from conftest import MiB, sha256_file, unique_name, write_random_file


def ok(proc):
    assert proc.returncode == 0, (
        f"`{' '.join(proc.args[3:])}` exited {proc.returncode}\n"
        f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    return proc


def multipart_etag_of_file(path, part_size) -> str:
    digests = []
    with open(path, "rb") as f:
        while chunk := f.read(part_size):
            digests.append(hashlib.md5(chunk).digest())
    return f'"{hashlib.md5(b"".join(digests)).hexdigest()}-{len(digests)}"'


def test_s3_mb_ls_rb(aws):
    name = unique_name("cli")
    out = ok(aws("s3", "mb", f"s3://{name}")).stdout
    assert f"make_bucket: {name}" in out
    listed = ok(aws("s3", "ls")).stdout.split()
    assert name in listed
    out = ok(aws("s3", "rb", f"s3://{name}")).stdout
    assert f"remove_bucket: {name}" in out
    assert name not in ok(aws("s3", "ls")).stdout.split()


def test_s3_rb_nonempty_fails_and_force_empties(aws, tmp_path):
    name = unique_name("cli")
    ok(aws("s3", "mb", f"s3://{name}"))
    src = tmp_path / "f.txt"
    src.write_bytes(b"content")
    ok(aws("s3", "cp", str(src), f"s3://{name}/f.txt"))
    refused = aws("s3", "rb", f"s3://{name}")
    assert refused.returncode != 0
    assert "BucketNotEmpty" in refused.stderr
    ok(aws("s3", "rb", "--force", f"s3://{name}"))
    assert name not in ok(aws("s3", "ls")).stdout.split()


def test_s3_cp_ls_rm(aws, bucket, tmp_path):
    src = tmp_path / "hello.txt"
    src.write_bytes(os.urandom(5000))
    ok(aws("s3", "cp", str(src), f"s3://{bucket}/docs/hello.txt"))
    ok(aws("s3", "cp", str(src), f"s3://{bucket}/docs/sub/again.txt"))

    top = ok(aws("s3", "ls", f"s3://{bucket}/docs/")).stdout
    assert "PRE sub/" in top
    line = next(l for l in top.splitlines() if l.endswith(" hello.txt"))
    assert line.split()[2] == "5000"  # date, time, size, name

    recursive = ok(aws("s3", "ls", "--recursive", f"s3://{bucket}")).stdout
    assert [l.split()[-1] for l in recursive.splitlines()] == [
        "docs/hello.txt",
        "docs/sub/again.txt",
    ]

    dst = tmp_path / "back.txt"
    ok(aws("s3", "cp", f"s3://{bucket}/docs/hello.txt", str(dst)))
    assert dst.read_bytes() == src.read_bytes()

    ok(aws("s3", "rm", f"s3://{bucket}/docs/hello.txt"))
    ok(aws("s3", "rm", "--recursive", f"s3://{bucket}/docs/"))
    gone = aws("s3", "ls", "--recursive", f"s3://{bucket}")
    assert gone.stdout.strip() == ""


def test_s3_sync_up_and_down(aws, bucket, tmp_path):
    up, down = tmp_path / "up", tmp_path / "down"
    files = {f"f{i:02d}.bin": os.urandom(i * 4099) for i in range(1, 13)}
    files["nested/deeper/leaf.txt"] = b"leaf"
    for rel, data in files.items():
        (up / rel).parent.mkdir(parents=True, exist_ok=True)
        (up / rel).write_bytes(data)

    ok(aws("s3", "sync", str(up), f"s3://{bucket}/tree"))
    ok(aws("s3", "sync", f"s3://{bucket}/tree", str(down)))
    got = {
        str(p.relative_to(down)): p.read_bytes() for p in down.rglob("*") if p.is_file()
    }
    assert got == files
    # A second sync finds nothing to copy.
    again = ok(aws("s3", "sync", str(up), f"s3://{bucket}/tree"))
    assert "upload:" not in again.stdout


def test_empty_file_upload_does_not_stall_the_next_one(aws, bucket, tmp_path):
    """An empty file, then two more, over one kept-alive connection.

    The CLI sends `Expect: 100-continue` with every file upload, also for an empty body. A
    server may answer such a request at once, without `100 Continue` (RFC 9110 allows it when
    there is no content), and botocore before 1.43.77, which every awscli v1 carries, then
    reuses that early status line for the next response on the same connection: the next
    upload stalls until the read timeout and is silently retried. The server avoids this by
    closing the connection after answering an `Expect: 100-continue` request early."""
    src = tmp_path / "src"
    src.mkdir()
    files = {"a-empty": b"", "b.bin": os.urandom(10_000), "c.bin": os.urandom(20_000)}
    for name, data in files.items():
        (src / name).write_bytes(data)
    config = tmp_path / "config"
    config.write_text(
        "[default]\nregion = us-east-1\n"
        "s3 =\n    addressing_style = path\n    max_concurrent_requests = 1\n"
    )
    proc = ok(
        aws(
            "--debug", "--cli-read-timeout", "10",
            "s3", "cp", "--recursive", str(src), f"s3://{bucket}/e/",
            env={"AWS_CONFIG_FILE": str(config)},
        )
    )
    trouble = [
        line
        for line in proc.stderr.splitlines()
        if "retryable exception caught" in line or "Failed to parse headers" in line
    ]
    assert not trouble, "uploads were stalled and retried:\n" + "\n".join(trouble)

    listed = ok(aws("s3", "ls", f"s3://{bucket}/e/")).stdout.splitlines()
    assert sorted((l.split()[3], int(l.split()[2])) for l in listed) == [
        (name, len(data)) for name, data in sorted(files.items())
    ]


def test_s3api_put_head_get_list(aws, bucket, tmp_path):
    body = tmp_path / "body.bin"
    data = os.urandom(2 * MiB + 11)
    body.write_bytes(data)
    put = json.loads(
        ok(
            aws(
                "s3api", "put-object", "--bucket", bucket, "--key", "api/obj.bin",
                "--body", str(body), "--content-type", "application/x-cli",
                "--metadata", "team=storage,stage=test", "--output", "json",
            )
        ).stdout
    )
    assert put["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'

    head = json.loads(
        ok(
            aws("s3api", "head-object", "--bucket", bucket, "--key", "api/obj.bin",
                "--output", "json")
        ).stdout
    )
    assert head["ContentLength"] == len(data)
    assert head["ETag"] == put["ETag"]
    assert head["ContentType"] == "application/x-cli"
    assert head["Metadata"] == {"team": "storage", "stage": "test"}

    out = tmp_path / "out.bin"
    got = json.loads(
        ok(
            aws("s3api", "get-object", "--bucket", bucket, "--key", "api/obj.bin",
                str(out), "--output", "json")
        ).stdout
    )
    assert got["ContentLength"] == len(data)
    assert out.read_bytes() == data

    for i in range(3):
        ok(aws("s3api", "put-object", "--bucket", bucket, "--key", f"api/n{i}", "--body", str(body)))
    listed = json.loads(
        ok(
            aws("s3api", "list-objects-v2", "--bucket", bucket, "--prefix", "api/n",
                "--output", "json")
        ).stdout
    )
    assert [o["Key"] for o in listed["Contents"]] == ["api/n0", "api/n1", "api/n2"]
    assert all(o["Size"] == len(data) for o in listed["Contents"])

    missing = aws("s3api", "get-object", "--bucket", bucket, "--key", "api/none", str(out))
    assert missing.returncode != 0
    assert "NoSuchKey" in missing.stderr


def test_300mib_multipart_roundtrip(aws, bucket, tmp_path):
    """The CLI's defaults: 8 MiB parts, 10 threads up; ranged GETs down."""
    src, dst = tmp_path / "big.bin", tmp_path / "big.back"
    size = 300 * MiB
    digest = write_random_file(src, size)
    try:
        ok(aws("s3", "cp", str(src), f"s3://{bucket}/huge/big.bin"))

        head = json.loads(
            ok(
                aws("s3api", "head-object", "--bucket", bucket, "--key", "huge/big.bin",
                    "--output", "json")
            ).stdout
        )
        assert head["ContentLength"] == size
        assert head["ETag"] == multipart_etag_of_file(src, 8 * MiB)  # 38 parts

        ok(aws("s3", "cp", f"s3://{bucket}/huge/big.bin", str(dst)))
        assert dst.stat().st_size == size
        assert sha256_file(dst) == digest

        ok(aws("s3", "rm", f"s3://{bucket}/huge/big.bin"))
        gone = aws("s3api", "head-object", "--bucket", bucket, "--key", "huge/big.bin")
        assert gone.returncode != 0
        assert "404" in gone.stderr or "Not Found" in gone.stderr
    finally:
        for p in (src, dst):
            p.unlink(missing_ok=True)
