"""Server-side encryption with boto3 and the aws CLI at their defaults: SSE-S3, SSE-KMS (the
session server's built-in key service), SSE-C, bucket default encryption, and S3's errors."""

from __future__ import annotations

import base64
import hashlib
import os

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import KMS_KEY_NAME, unique_name

CUSTOMER_KEY = bytes(range(100, 132))
OTHER_KEY = bytes(range(200, 232))


def error_of(excinfo) -> tuple[str, int]:
    resp = excinfo.value.response
    return resp["Error"]["Code"], resp["ResponseMetadata"]["HTTPStatusCode"]


def sse_c(key: bytes) -> dict:
    # boto3 base64-encodes the key and adds its MD5 itself.
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}


def test_sse_s3_round_trip_and_ranges(s3, bucket):
    data = os.urandom(300_000)
    put = s3.put_object(Bucket=bucket, Key="obj", Body=data, ServerSideEncryption="AES256")
    assert put["ServerSideEncryption"] == "AES256"
    assert put["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
    got = s3.get_object(Bucket=bucket, Key="obj")
    assert got["ServerSideEncryption"] == "AES256"
    assert got["Body"].read() == data
    ranged = s3.get_object(Bucket=bucket, Key="obj", Range="bytes=65530-131080")
    assert ranged["Body"].read() == data[65530:131081]
    assert s3.head_object(Bucket=bucket, Key="obj")["ContentLength"] == len(data)


def test_sse_kms_with_the_default_and_a_named_key(s3, bucket):
    put = s3.put_object(Bucket=bucket, Key="named", Body=b"kms data",
                        ServerSideEncryption="aws:kms", SSEKMSKeyId=KMS_KEY_NAME)
    assert put["ServerSideEncryption"] == "aws:kms"
    assert put["SSEKMSKeyId"] == KMS_KEY_NAME
    default = s3.put_object(Bucket=bucket, Key="default", Body=b"default",
                            ServerSideEncryption="aws:kms")
    assert default["SSEKMSKeyId"] == KMS_KEY_NAME
    assert s3.get_object(Bucket=bucket, Key="named")["Body"].read() == b"kms data"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="unknown", Body=b"x",
                      ServerSideEncryption="aws:kms", SSEKMSKeyId="no-such-key")
    assert error_of(e) == ("KMS.NotFoundException", 400)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="bad", Body=b"x", ServerSideEncryption="DES")
    assert error_of(e) == ("InvalidArgument", 400)


def test_sse_c_needs_its_key(s3, bucket):
    data = os.urandom(100_000)
    put = s3.put_object(Bucket=bucket, Key="obj", Body=data, **sse_c(CUSTOMER_KEY))
    key_md5 = base64.b64encode(hashlib.md5(CUSTOMER_KEY).digest()).decode()
    assert put["SSECustomerKeyMD5"] == key_md5
    got = s3.get_object(Bucket=bucket, Key="obj", **sse_c(CUSTOMER_KEY))
    assert got["Body"].read() == data
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="obj")
    assert error_of(e) == ("InvalidRequest", 400)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="obj", **sse_c(OTHER_KEY))
    assert error_of(e)[1] == 403
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="obj")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    # A copy re-encrypts under another type: the source's key rides in copy-source headers.
    s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "obj"},
                   CopySourceSSECustomerAlgorithm="AES256",
                   CopySourceSSECustomerKey=CUSTOMER_KEY,
                   ServerSideEncryption="AES256")
    assert s3.get_object(Bucket=bucket, Key="copy")["Body"].read() == data


def test_bucket_default_encryption(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_encryption(Bucket=bucket)
    assert error_of(e) == ("ServerSideEncryptionConfigurationNotFoundError", 404)
    s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {
            "SSEAlgorithm": "aws:kms", "KMSMasterKeyID": KMS_KEY_NAME},
            "BucketKeyEnabled": True}]})
    rule = s3.get_bucket_encryption(Bucket=bucket)[
        "ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "aws:kms", "KMSMasterKeyID": KMS_KEY_NAME}
    assert rule["BucketKeyEnabled"] is True
    put = s3.put_object(Bucket=bucket, Key="obj", Body=b"by default")
    assert put["ServerSideEncryption"] == "aws:kms"
    assert put["BucketKeyEnabled"] is True
    s3.delete_bucket_encryption(Bucket=bucket)
    assert "ServerSideEncryption" not in s3.put_object(Bucket=bucket, Key="plain", Body=b"p")


def test_aws_cli_sse_flags(aws, s3, tmp_path):
    name = unique_name("cli-sse")
    assert aws("s3", "mb", f"s3://{name}").returncode == 0
    # Past the CLI's 8 MiB threshold: a multipart upload, sealed part by part.
    src = tmp_path / "src.bin"
    data = os.urandom(20 * 1024 * 1024)
    src.write_bytes(data)
    key_file = tmp_path / "key.bin"
    key_file.write_bytes(CUSTOMER_KEY)
    for key, flags in [
        ("s3", ["--sse", "AES256"]),
        ("kms", ["--sse", "aws:kms", "--sse-kms-key-id", KMS_KEY_NAME]),
        ("customer", ["--sse-c", "AES256", "--sse-c-key", f"fileb://{key_file}"]),
    ]:
        proc = aws("s3", "cp", src, f"s3://{name}/{key}", *flags)
        assert proc.returncode == 0, proc.stderr
    assert s3.head_object(Bucket=name, Key="s3")["ServerSideEncryption"] == "AES256"
    assert s3.head_object(Bucket=name, Key="kms")["SSEKMSKeyId"] == KMS_KEY_NAME
    out = tmp_path / "out.bin"
    proc = aws("s3", "cp", f"s3://{name}/customer", out,
               "--sse-c", "AES256", "--sse-c-key", f"fileb://{key_file}")
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == data
    assert aws("s3", "rb", f"s3://{name}", "--force").returncode == 0


# Each way to ask for encryption on a write, and to read what it wrote.
KINDS = {
    "plain": ({}, {}),
    "sse-s3": ({"ServerSideEncryption": "AES256"}, {}),
    "sse-kms": ({"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": KMS_KEY_NAME}, {}),
    "sse-c": (sse_c(CUSTOMER_KEY), sse_c(CUSTOMER_KEY)),
}


def test_copies_between_every_pair_of_encryption_types(s3, bucket):
    data = os.urandom(200_000)
    for source, (write, _) in KINDS.items():
        s3.put_object(Bucket=bucket, Key=f"src-{source}", Body=data, **write)
    for source, (_, read) in KINDS.items():
        # The source's SSE-C key goes in the copy-source arguments.
        copy_source_key = {f"CopySource{k}": v for k, v in read.items()}
        for dest, (write, dest_read) in KINDS.items():
            key = f"{source}-to-{dest}"
            s3.copy_object(Bucket=bucket, Key=key,
                           CopySource={"Bucket": bucket, "Key": f"src-{source}"},
                           **copy_source_key, **write)
            got = s3.get_object(Bucket=bucket, Key=key, **dest_read)
            assert got["Body"].read() == data, key
            assert got.get("ServerSideEncryption") == write.get("ServerSideEncryption"), key


def test_browser_form_uploads_can_ask_for_encryption(s3, bucket):
    post = s3.generate_presigned_post(
        bucket, "form.bin",
        Fields={"x-amz-server-side-encryption": "AES256"},
        Conditions=[{"x-amz-server-side-encryption": "AES256"}],
    )
    answer = requests.post(post["url"], data=post["fields"],
                           files={"file": ("form.bin", b"sealed by a form")})
    assert answer.status_code == 204, answer.text
    assert answer.headers["x-amz-server-side-encryption"] == "AES256"
    head = s3.head_object(Bucket=bucket, Key="form.bin")
    assert head["ServerSideEncryption"] == "AES256"
