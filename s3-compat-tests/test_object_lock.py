"""Object Lock through boto3, the minio SDK and the aws CLI: buckets made with Object Lock,
default retention, retention and legal holds on PUT and by their own calls, deletes of locked
versions refused (governance bypassed only when asked), and the headers GET and HEAD answer."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from botocore.exceptions import ClientError
from minio.commonconfig import COMPLIANCE, GOVERNANCE
from minio.objectlockconfig import DAYS, ObjectLockConfig
from minio.retention import Retention

from conftest import sha256, unique_name
from test_awscli import ok


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def error_code(call) -> str:
    with pytest.raises(ClientError) as caught:
        call()
    return caught.value.response["Error"]["Code"]


@pytest.fixture
def locked_bucket(s3):
    """A fresh bucket made with Object Lock (left behind: its versions may be locked)."""
    name = unique_name("lock")
    s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    return name


def test_boto3_bucket_configuration_and_default_retention(s3, locked_bucket):
    b = locked_bucket
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    config = s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
    assert config == {"ObjectLockEnabled": "Enabled"}
    s3.put_object_lock_configuration(
        Bucket=b,
        ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 2}},
        },
    )
    config = s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
    assert config["Rule"]["DefaultRetention"] == {"Mode": "GOVERNANCE", "Days": 2}

    version = s3.put_object(Bucket=b, Key="k", Body=b"data")["VersionId"]
    head = s3.head_object(Bucket=b, Key="k")
    assert head["ObjectLockMode"] == "GOVERNANCE"
    until = head["ObjectLockRetainUntilDate"]
    assert now() + dt.timedelta(days=2, seconds=-60) < until <= now() + dt.timedelta(days=2, seconds=5)
    assert error_code(lambda: s3.delete_object(Bucket=b, Key="k", VersionId=version)) == "AccessDenied"
    assert error_code(lambda: s3.put_bucket_versioning(
        Bucket=b, VersioningConfiguration={"Status": "Suspended"})) == "InvalidBucketState"

    plain = unique_name("nolock")
    s3.create_bucket(Bucket=plain)
    assert error_code(lambda: s3.get_object_lock_configuration(Bucket=plain)) == \
        "ObjectLockConfigurationNotFoundError"


def test_a_default_retention_of_no_days_is_invalid_argument_as_on_aws(s3, locked_bucket):
    """AWS answers a default retention of zero or negative days `400 InvalidArgument`
    ("Default retention period must be a positive integer value"); a conformance suite
    written against another server expects `InvalidRetentionPeriod`: AWS wins (README)."""
    for days in (0, -1):
        with pytest.raises(ClientError) as caught:
            s3.put_object_lock_configuration(
                Bucket=locked_bucket,
                ObjectLockConfiguration={
                    "ObjectLockEnabled": "Enabled",
                    "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": days}},
                },
            )
        error = caught.value.response["Error"]
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert error["Code"] == "InvalidArgument", error
        assert error["Message"] == "Default retention period must be a positive integer value"
    config = s3.get_object_lock_configuration(Bucket=locked_bucket)["ObjectLockConfiguration"]
    assert "Rule" not in config, "a refused rule changed nothing"


def test_boto3_retention_and_legal_hold(s3, locked_bucket):
    b = locked_bucket
    until = now() + dt.timedelta(days=1)
    compliance = s3.put_object(Bucket=b, Key="c", Body=b"c", ObjectLockMode="COMPLIANCE",
                               ObjectLockRetainUntilDate=until)["VersionId"]
    governance = s3.put_object(Bucket=b, Key="g", Body=b"g", ObjectLockMode="GOVERNANCE",
                               ObjectLockRetainUntilDate=until)["VersionId"]
    held = s3.put_object(Bucket=b, Key="h", Body=b"h", ObjectLockLegalHoldStatus="ON")["VersionId"]

    got = s3.get_object(Bucket=b, Key="c")
    assert got["ObjectLockMode"] == "COMPLIANCE" and got["ObjectLockRetainUntilDate"] == until
    assert s3.get_object_retention(Bucket=b, Key="c")["Retention"] == {
        "Mode": "COMPLIANCE", "RetainUntilDate": until}
    assert s3.get_object_legal_hold(Bucket=b, Key="h")["LegalHold"] == {"Status": "ON"}

    # Compliance and legal holds hold against everyone; governance yields to a bypass.
    for key, version in [("c", compliance), ("h", held)]:
        for bypass in [False, True]:
            code = error_code(lambda: s3.delete_object(
                Bucket=b, Key=key, VersionId=version, BypassGovernanceRetention=bypass))
            assert code == "AccessDenied", (key, bypass)
    assert error_code(lambda: s3.delete_object(Bucket=b, Key="g", VersionId=governance)) == "AccessDenied"
    s3.delete_object(Bucket=b, Key="g", VersionId=governance, BypassGovernanceRetention=True)
    assert "Versions" not in s3.list_object_versions(Bucket=b, Prefix="g")

    # A compliance retention only lengthens.
    shorter = {"Mode": "COMPLIANCE", "RetainUntilDate": until - dt.timedelta(hours=1)}
    assert error_code(lambda: s3.put_object_retention(
        Bucket=b, Key="c", Retention=shorter, BypassGovernanceRetention=True)) == "AccessDenied"
    longer = until + dt.timedelta(days=1)
    s3.put_object_retention(Bucket=b, Key="c",
                            Retention={"Mode": "COMPLIANCE", "RetainUntilDate": longer})
    assert s3.head_object(Bucket=b, Key="c")["ObjectLockRetainUntilDate"] == longer

    # A released hold lets the version go.
    s3.put_object_legal_hold(Bucket=b, Key="h", LegalHold={"Status": "OFF"})
    s3.delete_object(Bucket=b, Key="h", VersionId=held)

    # Batch deletes report the locked key and delete the others.
    free = s3.put_object(Bucket=b, Key="free", Body=b"f")["VersionId"]
    out = s3.delete_objects(Bucket=b, Delete={"Objects": [
        {"Key": "c", "VersionId": compliance}, {"Key": "free", "VersionId": free}]})
    assert [d["Key"] for d in out["Deleted"]] == ["free"]
    assert [(e["Key"], e["Code"]) for e in out["Errors"]] == [("c", "AccessDenied")]
    assert sha256(s3.get_object(Bucket=b, Key="c", VersionId=compliance)["Body"].read()) == sha256(b"c")


def test_minio_retention_and_legal_hold(mc, s3):
    b = unique_name("lock-minio")
    mc.make_bucket(b, object_lock=True)
    mc.set_object_lock_config(b, ObjectLockConfig(GOVERNANCE, 1, DAYS))
    config = mc.get_object_lock_config(b)
    assert (config.mode, config.duration, config.duration_unit) == (GOVERNANCE, 1, DAYS)

    until = now() + dt.timedelta(days=3)
    written = mc.put_object(b, "m", io.BytesIO(b"minio"), 5,
                            retention=Retention(COMPLIANCE, until), legal_hold=True)
    retention = mc.get_object_retention(b, "m")
    assert retention.mode == COMPLIANCE and retention.retain_until_date == until
    assert mc.is_object_legal_hold_enabled(b, "m")
    mc.disable_object_legal_hold(b, "m")
    assert not mc.is_object_legal_hold_enabled(b, "m")
    # Still retained: the delete is refused.
    with pytest.raises(Exception) as caught:
        mc.remove_object(b, "m", version_id=written.version_id)
    assert "AccessDenied" in str(caught.value)
    # The default retention reached an object put without one.
    mc.put_object(b, "d", io.BytesIO(b"default"), 7)
    assert mc.get_object_retention(b, "d").mode == GOVERNANCE


def test_aws_cli_object_lock(aws, s3, tmp_path):
    b = unique_name("lock-cli")

    def api(*args):
        out = ok(aws("s3api", *args, "--output", "json")).stdout
        return json.loads(out) if out.strip() else {}

    ok(aws("s3api", "create-bucket", "--bucket", b, "--object-lock-enabled-for-bucket"))
    rule = {"ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 1}}}
    ok(aws("s3api", "put-object-lock-configuration", "--bucket", b,
           "--object-lock-configuration", json.dumps(rule)))
    assert api("get-object-lock-configuration", "--bucket", b)["ObjectLockConfiguration"] == rule

    body = tmp_path / "ckpt.bin"
    body.write_bytes(b"checkpoint" * 1000)
    version = api("put-object", "--bucket", b, "--key", "ckpt", "--body", str(body))["VersionId"]
    head = api("head-object", "--bucket", b, "--key", "ckpt")
    assert head["ObjectLockMode"] == "COMPLIANCE" and "ObjectLockRetainUntilDate" in head
    api("put-object-legal-hold", "--bucket", b, "--key", "ckpt",
        "--legal-hold", "Status=ON")
    assert api("get-object-legal-hold", "--bucket", b, "--key", "ckpt") == {
        "LegalHold": {"Status": "ON"}}
    refused = aws("s3api", "delete-object", "--bucket", b, "--key", "ckpt",
                  "--version-id", version, "--bypass-governance-retention")
    assert refused.returncode != 0 and "AccessDenied" in refused.stderr
    back = tmp_path / "back.bin"
    api("get-object", "--bucket", b, "--key", "ckpt", "--version-id", version, str(back))
    assert sha256(back.read_bytes()) == sha256(body.read_bytes())
