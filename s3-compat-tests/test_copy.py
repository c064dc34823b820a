"""Server-side copies as real clients make them: `aws s3 cp`/`mv` between S3 URLs, boto3's
copy_object and managed `copy` (UploadPartCopy for big sources), and minio's copy_object."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from minio.commonconfig import REPLACE, CopySource

from conftest import MiB, sha256, unique_name
from test_awscli import ok


def _get(s3, bucket, key) -> bytes:
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def test_aws_s3_cp_and_mv_between_buckets(aws, s3, bucket, tmp_path):
    other = unique_name("copy-dst")
    s3.create_bucket(Bucket=other)
    src = tmp_path / "model.bin"
    data = bytes(range(256)) * 4096 * 3  # 3 MiB
    src.write_bytes(data)
    ok(aws("s3", "cp", str(src), f"s3://{bucket}/ckpt/model.bin"))

    ok(aws("s3", "cp", f"s3://{bucket}/ckpt/model.bin", f"s3://{other}/copy.bin"))
    assert sha256(_get(s3, other, "copy.bin")) == sha256(data)

    ok(aws("s3", "mv", f"s3://{bucket}/ckpt/model.bin", f"s3://{bucket}/moved/model.bin"))
    assert sha256(_get(s3, bucket, "moved/model.bin")) == sha256(data)
    with pytest.raises(ClientError) as err:
        s3.head_object(Bucket=bucket, Key="ckpt/model.bin")
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404

    ok(aws("s3", "rm", "--recursive", f"s3://{other}"))
    s3.delete_bucket(Bucket=other)


def test_boto3_copy_object_directives_and_self_copy(s3, bucket):
    s3.put_object(
        Bucket=bucket,
        Key="src",
        Body=b"payload",
        ContentType="text/plain",
        Metadata={"owner": "ml"},
        Tagging="stage=raw",
    )
    out = s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"})
    assert out["CopyObjectResult"]["ETag"] == s3.head_object(Bucket=bucket, Key="src")["ETag"]
    head = s3.head_object(Bucket=bucket, Key="dst")
    assert head["ContentType"] == "text/plain"
    assert head["Metadata"] == {"owner": "ml"}
    assert s3.get_object_tagging(Bucket=bucket, Key="dst")["TagSet"] == [
        {"Key": "stage", "Value": "raw"}
    ]

    with pytest.raises(ClientError) as err:
        s3.copy_object(Bucket=bucket, Key="src", CopySource={"Bucket": bucket, "Key": "src"})
    assert err.value.response["Error"]["Code"] == "InvalidRequest"

    s3.copy_object(
        Bucket=bucket,
        Key="src",
        CopySource={"Bucket": bucket, "Key": "src"},
        MetadataDirective="REPLACE",
        Metadata={"owner": "infra"},
        ContentType="application/json",
    )
    head = s3.head_object(Bucket=bucket, Key="src")
    assert head["Metadata"] == {"owner": "infra"}
    assert head["ContentType"] == "application/json"
    assert _get(s3, bucket, "src") == b"payload"

    with pytest.raises(ClientError) as err:
        s3.copy_object(
            Bucket=bucket,
            Key="dst2",
            CopySource={"Bucket": bucket, "Key": "src"},
            CopySourceIfMatch='"00000000000000000000000000000000"',
        )
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412


def test_boto3_managed_copy_of_a_large_object(s3, bucket):
    """boto3's `copy` switches to multipart UploadPartCopy above its threshold."""
    from boto3.s3.transfer import TransferConfig

    data = bytes(range(251)) * (12 * MiB // 251)
    s3.put_object(Bucket=bucket, Key="big", Body=data)
    config = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)
    s3.copy({"Bucket": bucket, "Key": "big"}, bucket, "big-copy", Config=config)
    head = s3.head_object(Bucket=bucket, Key="big-copy")
    assert head["ETag"].endswith('-3"'), head["ETag"]
    assert sha256(_get(s3, bucket, "big-copy")) == sha256(data)


def test_minio_copy_object(mc, s3, bucket):
    s3.put_object(Bucket=bucket, Key="src.txt", Body=b"minio copy", Metadata={"a": "1"})
    result = mc.copy_object(bucket, "dst.txt", CopySource(bucket, "src.txt"))
    assert result.object_name == "dst.txt"
    assert _get(s3, bucket, "dst.txt") == b"minio copy"
    mc.copy_object(
        bucket,
        "replaced.txt",
        CopySource(bucket, "src.txt"),
        metadata={"x-amz-meta-b": "2"},
        metadata_directive=REPLACE,
    )
    assert s3.head_object(Bucket=bucket, Key="replaced.txt")["Metadata"] == {"b": "2"}
