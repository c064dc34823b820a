"""Lifecycle transitions to tiers, seen through boto3 and the aws CLI: a server with a `WARM`
tier (a second drive pool, 4+2 over six folders) and a `COLD` tier (another strata server,
bucket `archive`), rules sent as the CLI's JSON, and one lifecycle day shortened to two
seconds. Objects and noncurrent versions age into the tiers and out of existence, read back
identical at every stage; a remote tier that is down fails reads with 503 and loses nothing."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import (
    ACCESS_KEY,
    MiB,
    REGION,
    SECRET_KEY,
    AwsCli,
    StrataServer,
    free_port,
    make_aws_cli,
    sha256,
    unique_name,
)
from test_awscli import ok

DAY_SECONDS = 2
# A stage is due one day (or two) after the last; the scanner runs every second. Four days
# leave room for a slow machine without making a failing test wait long.
STAGE_TIMEOUT_S = 4 * DAY_SECONDS
# Objects under 128 KiB stay in the metadata records and are never transitioned, as in S3.
SIZE = 3 * MiB + 12_345


@dataclass
class Tiered:
    server: StrataServer
    remote: StrataServer
    s3: object  # boto3 client of `server`
    aws: AwsCli  # aws CLI bound to `server`
    tmp: Path

    def shard_bytes(self, pool: str) -> int:
        """Bytes of object shards (`data/**/part.*`) on the drives of `pool` (`hot` or `warm`):
        where the data really is, metadata databases left out."""
        return sum(f.stat().st_size for f in (self.tmp / pool).glob("d*/data/**/part.*"))

    def remote_keys(self) -> list[str]:
        """The object names in the COLD tier's bucket, read on the remote server."""
        out = self.remote.boto3_client().list_objects_v2(Bucket="archive")
        return [o["Key"] for o in out.get("Contents", [])]

    def put_rules(self, bucket: str, rules: list[dict]) -> None:
        """Sends the rules as `aws s3api put-bucket-lifecycle-configuration` JSON."""
        path = self.tmp / f"rules-{bucket}.json"
        path.write_text(json.dumps({"Rules": rules}))
        ok(
            self.aws(
                "s3api", "put-bucket-lifecycle-configuration", "--bucket", bucket,
                "--lifecycle-configuration", f"file://{path}",
            )
        )


@pytest.fixture
def tiered(start_server, tmp_path) -> Tiered:
    def folders(name: str, count: int) -> list[Path]:
        paths = [tmp_path / name / f"d{i}" for i in range(1, count + 1)]
        for p in paths:
            p.mkdir(parents=True)
        return paths

    # A fixed port for the remote tier, so it comes back where the tiers file says it is.
    remote = start_server(folders("remote", 9), address=f"127.0.0.1:{free_port()}")
    remote.boto3_client().create_bucket(Bucket="archive")
    warm = folders("warm", 6)
    tiers = tmp_path / "tiers.json"
    tiers.write_text(
        json.dumps(
            {
                "tiers": [
                    {
                        "name": "WARM",
                        "type": "pool",
                        "drives": [str(d) for d in warm],
                        "data_shards": 4,
                        "parity_shards": 2,
                    },
                    {
                        "name": "COLD",
                        "type": "s3",
                        "endpoint": remote.endpoint,
                        "bucket": "archive",
                        "prefix": "strata/",
                        "access_key": ACCESS_KEY,
                        "secret_key": SECRET_KEY,
                        "region": REGION,
                    },
                ]
            }
        )
    )
    server = start_server(
        folders("hot", 9),
        extra_args=["--tiers", str(tiers)],
        env={"STRATA_LIFECYCLE_DAY_SECONDS": str(DAY_SECONDS)},
    )
    home = tmp_path / "aws-home"
    home.mkdir()
    return Tiered(server, remote, server.boto3_client(), make_aws_cli(server.endpoint, home), tmp_path)


def storage_class(s3, bucket: str, key: str, version_id: str | None = None) -> str | None:
    """The storage class HEAD reports (S3 names none for STANDARD), or None once gone."""
    args = {"VersionId": version_id} if version_id else {}
    try:
        head = s3.head_object(Bucket=bucket, Key=key, **args)
    except ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
            return None
        raise
    return head.get("StorageClass", "STANDARD")


def wait_until(what: str, probe, want, timeout: float = STAGE_TIMEOUT_S):
    """Polls `probe()` every 100 ms until it returns `want`; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got == want:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: still {got!r} after {timeout}s, waiting for {want!r}")
        time.sleep(0.1)


def assert_reads(s3, bucket: str, key: str, data: bytes, stage: str, version_id=None) -> None:
    """The whole object and a range of it, byte-identical to `data`."""
    args = {"VersionId": version_id} if version_id else {}
    whole = s3.get_object(Bucket=bucket, Key=key, **args)
    assert sha256(whole["Body"].read()) == sha256(data), f"{key} at {stage}"
    assert whole["ContentLength"] == len(data)
    part = s3.get_object(Bucket=bucket, Key=key, Range="bytes=1000-300999", **args)
    assert sha256(part["Body"].read()) == sha256(data[1000:301_000]), f"{key} range at {stage}"


def listed_class(s3, bucket: str, key: str) -> str:
    [entry] = [o for o in s3.list_objects_v2(Bucket=bucket, Prefix=key)["Contents"] if o["Key"] == key]
    return entry["StorageClass"]


def cli_listed_class(aws: AwsCli, bucket: str, key: str) -> str:
    out = json.loads(
        ok(aws("s3api", "list-objects-v2", "--bucket", bucket, "--prefix", key, "--output", "json")).stdout
    )
    [entry] = [o for o in out["Contents"] if o["Key"] == key]
    return entry["StorageClass"]


def test_an_object_ages_hot_warm_cold_then_expires(tiered):
    s3 = tiered.s3
    bucket = unique_name("tiers")
    s3.create_bucket(Bucket=bucket)
    tiered.put_rules(
        bucket,
        [
            {
                "ID": "checkpoints",
                "Status": "Enabled",
                "Filter": {"Prefix": "ckpt/"},
                "Transitions": [
                    {"Days": 1, "StorageClass": "WARM"},
                    {"Days": 3, "StorageClass": "COLD"},
                ],
                "Expiration": {"Days": 5},
            }
        ],
    )
    shown = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"][0]
    assert [(t["Days"], t["StorageClass"]) for t in shown["Transitions"]] == [(1, "WARM"), (3, "COLD")]

    key, other = "ckpt/step-1000.bin", "keep/notes.bin"
    data = os.urandom(SIZE)
    etag = s3.put_object(
        Bucket=bucket, Key=key, Body=data, ContentType="application/x-ckpt", Metadata={"step": "1000"}
    )["ETag"]
    s3.put_object(Bucket=bucket, Key=other, Body=data)

    def check_stage(stage: str, remote_count: int) -> None:
        head = s3.head_object(Bucket=bucket, Key=key)
        assert head.get("StorageClass", "STANDARD") == stage
        # Key, ETag, size and metadata survive every move.
        assert head["ETag"] == etag
        assert head["ContentLength"] == len(data)
        assert head["ContentType"] == "application/x-ckpt"
        assert head["Metadata"] == {"step": "1000"}
        assert listed_class(s3, bucket, key) == stage
        assert cli_listed_class(tiered.aws, bucket, key) == stage
        assert_reads(s3, bucket, key, data, stage)
        assert len(tiered.remote_keys()) == remote_count

    check_stage("STANDARD", 0)
    assert "StorageClass" not in s3.head_object(Bucket=bucket, Key=key)
    # Two objects of one size: each holds half the hot shard bytes.
    hot_both = tiered.shard_bytes("hot")
    assert hot_both >= 2 * SIZE and tiered.shard_bytes("warm") == 0

    wait_until(key, lambda: storage_class(s3, bucket, key), "WARM")
    check_stage("WARM", 0)
    # The shards left the hot drives for the warm pool.
    wait_until("hot shard bytes", lambda: tiered.shard_bytes("hot"), hot_both // 2, timeout=5)
    assert tiered.shard_bytes("warm") >= SIZE

    wait_until(key, lambda: storage_class(s3, bucket, key), "COLD")
    check_stage("COLD", 1)
    [remote_key] = tiered.remote_keys()
    assert remote_key.startswith("strata/")
    wait_until("warm shard bytes", lambda: tiered.shard_bytes("warm"), 0, timeout=5)

    wait_until(key, lambda: storage_class(s3, bucket, key), None)
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket=bucket, Key=key)
    assert err.value.response["Error"]["Code"] == "NoSuchKey"
    assert tiered.remote_keys() == [], "expiry removed the tier's copy"

    # The object outside the rule's prefix never moved.
    assert tiered.shard_bytes("hot") == hot_both // 2
    assert storage_class(s3, bucket, other) == "STANDARD"
    assert listed_class(s3, bucket, other) == "STANDARD"
    assert_reads(s3, bucket, other, data, "end")


def test_a_noncurrent_version_goes_cold_then_expires(tiered):
    s3 = tiered.s3
    bucket = unique_name("tiers-ver")
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    tiered.put_rules(
        bucket,
        [
            {
                "ID": "old-versions",
                "Status": "Enabled",
                "Filter": {"Prefix": ""},
                "NoncurrentVersionTransitions": [{"NoncurrentDays": 1, "StorageClass": "COLD"}],
                "NoncurrentVersionExpiration": {"NoncurrentDays": 3},
            }
        ],
    )
    old, new = os.urandom(SIZE), os.urandom(2 * MiB + 1)
    v1 = s3.put_object(Bucket=bucket, Key="model.bin", Body=old)["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="model.bin", Body=new)["VersionId"]

    def classes() -> dict[str, str]:
        out = s3.list_object_versions(Bucket=bucket)
        return {v["VersionId"]: v["StorageClass"] for v in out.get("Versions", [])}

    assert classes() == {v1: "STANDARD", v2: "STANDARD"}
    wait_until("the old version", classes, {v1: "COLD", v2: "STANDARD"})
    assert storage_class(s3, bucket, "model.bin", v1) == "COLD"
    assert storage_class(s3, bucket, "model.bin") == "STANDARD"
    assert_reads(s3, bucket, "model.bin", old, "COLD", version_id=v1)
    assert_reads(s3, bucket, "model.bin", new, "current")
    assert len(tiered.remote_keys()) == 1

    wait_until("the old version", classes, {v2: "STANDARD"})
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket=bucket, Key="model.bin", VersionId=v1)
    assert err.value.response["Error"]["Code"] == "NoSuchVersion"
    assert tiered.remote_keys() == [], "expiry removed the tier's copy"
    assert_reads(s3, bucket, "model.bin", new, "end")


def test_a_down_remote_tier_fails_reads_and_loses_nothing(tiered):
    s3 = tiered.s3  # one attempt per request: the 503 is not retried away
    bucket = unique_name("tiers-down")
    s3.create_bucket(Bucket=bucket)
    tiered.put_rules(
        bucket,
        [
            {
                "ID": "cold",
                "Status": "Enabled",
                "Filter": {"Prefix": ""},
                "Transitions": [{"Days": 1, "StorageClass": "COLD"}],
            }
        ],
    )
    kept, dropped = os.urandom(SIZE), os.urandom(MiB + 1)
    s3.put_object(Bucket=bucket, Key="kept.bin", Body=kept)
    s3.put_object(Bucket=bucket, Key="dropped.bin", Body=dropped)
    wait_until("kept.bin", lambda: storage_class(s3, bucket, "kept.bin"), "COLD")
    wait_until("dropped.bin", lambda: storage_class(s3, bucket, "dropped.bin"), "COLD")
    assert len(tiered.remote_keys()) == 2

    # Deleting a tiered object removes its copy in the tier.
    s3.delete_object(Bucket=bucket, Key="dropped.bin")
    assert len(tiered.remote_keys()) == 1

    tiered.remote.kill()
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket=bucket, Key="kept.bin")
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert err.value.response["Error"]["Code"] == "ServiceUnavailable"
    # The record still answers: HEAD and listings need no tier.
    assert storage_class(s3, bucket, "kept.bin") == "COLD"
    assert listed_class(s3, bucket, "kept.bin") == "COLD"

    tiered.remote.start()  # same port, same drives
    assert_reads(s3, bucket, "kept.bin", kept, "COLD after the tier came back")
    assert len(tiered.remote_keys()) == 1
