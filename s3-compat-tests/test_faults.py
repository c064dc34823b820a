"""Drive faults seen through boto3, each on a server of its own: the `{1...9}` drive range,
lost drive folders (while running and across a restart), corrupted shard files, and the
503 answer once a set has lost more drives than its parity covers."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import MiB, sha256

# Sizes on both sides of the 128 KiB inline limit, and across erasure blocks.
SIZES = {"inline": 10 * 1024, "one-block": 900 * 1024, "multi-block": 3 * MiB + 7}


def make_drives(root: Path) -> list[Path]:
    drives = [root / f"d{i}" for i in range(1, 10)]
    for d in drives:
        d.mkdir()
    return drives


def fill(client, bucket: str) -> dict[str, bytes]:
    client.create_bucket(Bucket=bucket)
    objects = {name: os.urandom(size) for name, size in SIZES.items()}
    for key, data in objects.items():
        client.put_object(Bucket=bucket, Key=key, Body=data)
    return objects


def assert_all_readable(client, bucket: str, objects: dict[str, bytes]) -> None:
    for key, data in objects.items():
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert len(body) == len(data), key
        assert sha256(body) == sha256(data), key


def shard_files(drive: Path) -> list[Path]:
    return sorted(p for p in (drive / "data").rglob("part.*") if p.is_file())


def test_drive_range_is_expanded_and_formatted(start_server, tmp_path):
    srv = start_server([f"{tmp_path}/d{{1...9}}"])
    client = srv.boto3_client()
    objects = fill(client, "ranged")
    assert_all_readable(client, "ranged", objects)

    formats = [json.loads((tmp_path / f"d{i}" / ".strata" / "format.json").read_text()) for i in range(1, 10)]
    assert len({f["deployment_id"] for f in formats}) == 1
    assert {f["set_index"] for f in formats} == {0}
    indexes = [f["drive_index"] for f in formats]
    assert indexes == sorted(indexes) and len(set(indexes)) == 9
    # The sharded objects left one shard file per drive; the inline one none.
    for i in range(1, 10):
        assert shard_files(tmp_path / f"d{i}"), f"no shard files on d{i}"


@pytest.mark.parametrize("lost", [(1, 5, 9), (1, 2, 3), (7, 8, 9)], ids=["mixed", "data", "parity"])
def test_three_drives_removed_while_running(start_server, tmp_path, lost):
    drives = make_drives(tmp_path)
    srv = start_server(drives)
    client = srv.boto3_client()
    objects = fill(client, "faults")
    for i in lost:
        shutil.rmtree(drives[i - 1])
    assert_all_readable(client, "faults", objects)


def test_three_drives_removed_before_restart(start_server, tmp_path):
    drives = make_drives(tmp_path)
    srv = start_server(drives)
    objects = fill(srv.boto3_client(), "faults")
    srv.stop()
    for i in (2, 6, 8):
        shutil.rmtree(drives[i - 1])
    srv.start()
    assert_all_readable(srv.boto3_client(), "faults", objects)


def test_corrupted_shards_on_three_drives(start_server, tmp_path):
    drives = make_drives(tmp_path)
    srv = start_server(drives)
    client = srv.boto3_client()
    objects = fill(client, "bitrot")
    flipped = 0
    for i in (1, 4, 8):
        files = shard_files(drives[i - 1])
        assert files, f"no shard files on d{i}"
        for f in files:
            raw = bytearray(f.read_bytes())
            # Flip bytes in the first block's checksum and in its shard data.
            for pos in (0, 20, len(raw) // 2, len(raw) - 1):
                raw[pos] ^= 0xFF
            f.write_bytes(bytes(raw))
            flipped += 1
    assert flipped >= 6
    assert_all_readable(client, "bitrot", objects)
    # Still right after a restart, when nothing is cached.
    srv.restart()
    assert_all_readable(srv.boto3_client(), "bitrot", objects)


def test_four_drives_removed_is_service_unavailable(start_server, tmp_path):
    drives = make_drives(tmp_path)
    srv = start_server(drives)
    client = srv.boto3_client()
    fill(client, "quorum")
    for i in (1, 3, 7, 9):
        shutil.rmtree(drives[i - 1])

    with pytest.raises(ClientError) as e:
        client.get_object(Bucket="quorum", Key="multi-block")["Body"].read()
    assert e.value.response["Error"]["Code"] == "ServiceUnavailable"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503

    with pytest.raises(ClientError) as e:
        client.put_object(Bucket="quorum", Key="new", Body=os.urandom(2 * MiB))
    assert e.value.response["Error"]["Code"] == "ServiceUnavailable"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
