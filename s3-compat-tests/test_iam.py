"""Identities and access as real clients meet them: a public-read bucket policy put, read and
deleted with boto3 and used by unsigned clients (botocore UNSIGNED, urllib), and a read-only
user made with `strata admin` used from boto3 and the minio SDK."""

from __future__ import annotations

import io
import json
import os
import subprocess
import urllib.error
import urllib.request
import uuid

import botocore
import pytest
from botocore.exceptions import ClientError
from minio.error import S3Error

from conftest import ACCESS_KEY, SECRET_KEY, STRATA_BIN


def error_of(excinfo) -> tuple[str, int]:
    """(S3 error code, HTTP status) of a botocore ClientError."""
    resp = excinfo.value.response
    return resp["Error"]["Code"], resp["ResponseMetadata"]["HTTPStatusCode"]


def public_read(bucket: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "PublicRead",
                    "Effect": "Allow",
                    "Principal": "*",
                    "Action": ["s3:GetObject", "s3:ListBucket"],
                    "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
                }
            ],
        }
    )


def http(method: str, url: str, data: bytes | None = None) -> tuple[int, bytes]:
    """An unsigned request with urllib: (status, body)."""
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def admin(server, *args: str) -> subprocess.CompletedProcess:
    """`strata admin ARGS` as the root user against the session server; must succeed."""
    env = dict(os.environ, STRATA_ROOT_USER=ACCESS_KEY, STRATA_ROOT_PASSWORD=SECRET_KEY)
    env.pop("STRATA_NEW_USER_SECRET", None)
    proc = subprocess.run(
        [str(STRATA_BIN), "admin", *args, "--endpoint", server.endpoint],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"strata admin {args}: {proc.stdout}\n{proc.stderr}"
    return proc


def test_bucket_policy_makes_a_bucket_publicly_readable(s3, bucket, server):
    s3.put_object(Bucket=bucket, Key="dataset/part-0", Body=b"open data")
    anonymous = server.boto3_client(signature_version=botocore.UNSIGNED)
    url = f"{server.endpoint}/{bucket}/dataset/part-0"

    # Private to start with.
    with pytest.raises(ClientError) as e:
        anonymous.get_object(Bucket=bucket, Key="dataset/part-0")
    assert error_of(e) == ("AccessDenied", 403)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy(Bucket=bucket)
    assert error_of(e) == ("NoSuchBucketPolicy", 404)
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=bucket, Policy='{"Statement": "nonsense"}')
    assert error_of(e) == ("MalformedPolicy", 400)

    s3.put_bucket_policy(Bucket=bucket, Policy=public_read(bucket))
    assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"]) == json.loads(
        public_read(bucket)
    )

    # Anyone reads and lists, with an SDK or a plain HTTP client.
    got = anonymous.get_object(Bucket=bucket, Key="dataset/part-0")["Body"].read()
    assert got == b"open data"
    listed = anonymous.list_objects_v2(Bucket=bucket, Prefix="dataset/")
    assert [o["Key"] for o in listed["Contents"]] == ["dataset/part-0"]
    assert http("GET", url) == (200, b"open data")

    # Nobody writes or deletes anonymously.
    with pytest.raises(ClientError) as e:
        anonymous.put_object(Bucket=bucket, Key="dataset/evil", Body=b"x")
    assert error_of(e) == ("AccessDenied", 403)
    with pytest.raises(ClientError) as e:
        anonymous.delete_object(Bucket=bucket, Key="dataset/part-0")
    assert error_of(e) == ("AccessDenied", 403)
    status, body = http("PUT", f"{server.endpoint}/{bucket}/dataset/evil", b"x")
    assert status == 403 and b"<Code>AccessDenied</Code>" in body
    assert http("DELETE", url)[0] == 403
    assert s3.get_object(Bucket=bucket, Key="dataset/part-0")["Body"].read() == b"open data"

    # Without the policy the bucket is private again.
    s3.delete_bucket_policy(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        anonymous.get_object(Bucket=bucket, Key="dataset/part-0")
    assert error_of(e) == ("AccessDenied", 403)
    assert http("GET", url)[0] == 403


def test_a_read_only_user_from_the_cli(s3, bucket, server, tmp_path):
    s3.put_object(Bucket=bucket, Key="model/weights.bin", Body=b"weights")
    user = f"reader-{uuid.uuid4().hex[:8]}"
    policy = f"readonly-{uuid.uuid4().hex[:8]}"
    secret = f"secret-{uuid.uuid4().hex}"
    document = tmp_path / "readonly.json"
    document.write_text(
        json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": ["s3:GetObject", "s3:ListBucket"],
                        "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
                    }
                ],
            }
        )
    )
    admin(server, "policy", "add", policy, str(document))
    admin(server, "user", "add", user, "--secret", secret, "--policy", policy)
    try:
        listed = admin(server, "user", "list").stdout
        assert user in listed and secret not in listed

        # boto3
        reader = server.boto3_client(access_key=user, secret_key=secret)
        assert reader.get_object(Bucket=bucket, Key="model/weights.bin")["Body"].read() == (
            b"weights"
        )
        assert [o["Key"] for o in reader.list_objects_v2(Bucket=bucket)["Contents"]] == [
            "model/weights.bin"
        ]
        with pytest.raises(ClientError) as e:
            reader.put_object(Bucket=bucket, Key="model/other.bin", Body=b"x")
        assert error_of(e) == ("AccessDenied", 403)
        with pytest.raises(ClientError) as e:
            reader.delete_object(Bucket=bucket, Key="model/weights.bin")
        assert error_of(e) == ("AccessDenied", 403)

        # minio
        mc = server.minio_client(access_key=user, secret_key=secret)
        response = mc.get_object(bucket, "model/weights.bin")
        try:
            assert response.read() == b"weights"
        finally:
            response.close()
            response.release_conn()
        with pytest.raises(S3Error) as e:
            mc.put_object(bucket, "model/other.bin", io.BytesIO(b"x"), 1)
        assert e.value.code == "AccessDenied"
        with pytest.raises(S3Error) as e:
            mc.remove_object(bucket, "model/weights.bin")
        assert e.value.code == "AccessDenied"
    finally:
        admin(server, "user", "remove", user)
        admin(server, "policy", "remove", policy)

    # A removed user's key is unknown.
    with pytest.raises(ClientError) as e:
        reader.get_object(Bucket=bucket, Key="model/weights.bin")
    assert error_of(e) == ("InvalidAccessKeyId", 403)
    assert s3.get_object(Bucket=bucket, Key="model/weights.bin")["Body"].read() == b"weights"
