"""Browser form uploads (POST Object) as boto3's `generate_presigned_post` signs them, sent
with `requests` like a web page's form would be, and read back with boto3."""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET

import pytest
import requests
from botocore.exceptions import ClientError

KiB = 1024


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def error_code(response: requests.Response) -> str | None:
    """The S3 error code of an XML error answer."""
    try:
        return ET.fromstring(response.content).findtext("Code")
    except ET.ParseError:
        return None


def post(presigned: dict, data: bytes, filename: str = "notes.txt", **fields) -> requests.Response:
    """Posts the presigned fields (overridden by `fields`) and then the file, last, as S3
    requires; redirects are returned, not followed."""
    form = {**presigned["fields"], **fields}
    return requests.post(
        presigned["url"],
        data=form,
        files={"file": (filename, data, "application/octet-stream")},
        allow_redirects=False,
        timeout=60,
    )


def assert_absent(s3, bucket: str, key: str) -> None:
    with pytest.raises(ClientError) as excinfo:
        s3.head_object(Bucket=bucket, Key=key)
    assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


@pytest.fixture
def upload_policy(s3, bucket):
    """A presigned POST for `uploads/${filename}` with a text content type, one metadata
    field, a 201 answer and a 1..1024 byte size range."""
    return s3.generate_presigned_post(
        Bucket=bucket,
        Key="uploads/${filename}",
        Fields={
            "Content-Type": "text/plain",
            "x-amz-meta-origin": "browser",
            "success_action_status": "201",
        },
        Conditions=[
            {"Content-Type": "text/plain"},
            {"x-amz-meta-origin": "browser"},
            {"success_action_status": "201"},
            ["content-length-range", 1, 1024],
        ],
        ExpiresIn=600,
    )


def test_presigned_post_stores_the_file_with_its_fields(s3, bucket, upload_policy):
    data = b"hello from a browser form\n"
    response = post(upload_policy, data, filename="notes.txt")
    assert response.status_code == 201, response.text
    doc = ET.fromstring(response.content)
    assert doc.tag == "PostResponse"
    assert doc.findtext("Bucket") == bucket
    assert doc.findtext("Key") == "uploads/notes.txt"
    assert doc.findtext("ETag") == f'"{md5_hex(data)}"'
    assert doc.findtext("Location").endswith(f"/{bucket}/uploads/notes.txt")

    got = s3.get_object(Bucket=bucket, Key="uploads/notes.txt")
    assert got["Body"].read() == data
    assert got["ContentType"] == "text/plain"
    assert got["Metadata"] == {"origin": "browser"}
    assert got["ETag"] == f'"{md5_hex(data)}"'


def test_presigned_post_defaults_to_204(s3, bucket):
    presigned = s3.generate_presigned_post(Bucket=bucket, Key="plain.bin", ExpiresIn=600)
    data = bytes(range(256)) * 64
    response = post(presigned, data)
    assert response.status_code == 204, response.text
    assert response.headers["ETag"] == f'"{md5_hex(data)}"'
    assert s3.get_object(Bucket=bucket, Key="plain.bin")["Body"].read() == data


def test_presigned_post_redirects_with_303(s3, bucket):
    target = "https://app.example/uploaded"
    presigned = s3.generate_presigned_post(
        Bucket=bucket,
        Key="redirected.txt",
        Fields={"success_action_redirect": target},
        Conditions=[{"success_action_redirect": target}],
        ExpiresIn=600,
    )
    data = b"redirect me"
    response = post(presigned, data)
    assert response.status_code == 303, response.text
    assert response.headers["Location"] == (
        f"{target}?bucket={bucket}&key=redirected.txt&etag=%22{md5_hex(data)}%22"
    )
    assert s3.get_object(Bucket=bucket, Key="redirected.txt")["Body"].read() == data


def test_presigned_post_enforces_the_size_range(s3, bucket, upload_policy):
    response = post(upload_policy, b"x" * (4 * KiB), filename="big.txt")
    assert response.status_code == 400, response.text
    assert error_code(response) == "EntityTooLarge"
    assert_absent(s3, bucket, "uploads/big.txt")

    response = post(upload_policy, b"", filename="empty.txt")
    assert response.status_code == 400, response.text
    assert error_code(response) == "EntityTooSmall"
    assert_absent(s3, bucket, "uploads/empty.txt")


def test_presigned_post_enforces_the_conditions(s3, bucket, upload_policy):
    # A key outside the signed prefix.
    response = post(upload_policy, b"data", key="elsewhere/notes.txt")
    assert response.status_code == 403, response.text
    assert error_code(response) == "AccessDenied"
    assert_absent(s3, bucket, "elsewhere/notes.txt")

    # Another content type than the signed one.
    response = post(upload_policy, b"data", **{"Content-Type": "text/html"})
    assert response.status_code == 403, response.text
    assert error_code(response) == "AccessDenied"

    # A field the policy does not mention.
    response = post(upload_policy, b"data", **{"x-amz-meta-extra": "1"})
    assert response.status_code == 403, response.text
    assert "Extra input fields: x-amz-meta-extra" in response.text

    # A signature that is not the policy's.
    response = post(upload_policy, b"data", **{"x-amz-signature": "0" * 64})
    assert response.status_code == 403, response.text
    assert error_code(response) == "SignatureDoesNotMatch"
    assert_absent(s3, bucket, "uploads/notes.txt")


def test_presigned_post_expired_policy_is_denied(s3, bucket):
    presigned = s3.generate_presigned_post(Bucket=bucket, Key="late.txt", ExpiresIn=-60)
    response = post(presigned, b"too late")
    assert response.status_code == 403, response.text
    assert error_code(response) == "AccessDenied"
    assert "Policy expired" in response.text
    assert_absent(s3, bucket, "late.txt")


def test_boto3_default_presigned_post_is_sigv2_and_stores_the_file(s3_client_for, s3, bucket):
    v2 = s3_client_for(signature_version=None)
    presigned = v2.generate_presigned_post(
        Bucket=bucket,
        Key="v2/${filename}",
        Fields={"Content-Type": "text/plain"},
        Conditions=[{"Content-Type": "text/plain"}, ["content-length-range", 1, 1024]],
        ExpiresIn=600,
    )
    fields = presigned["fields"]
    assert {"AWSAccessKeyId", "signature", "policy"} <= set(fields), fields
    data = b"signed with SigV2\n"
    response = post(presigned, data, filename="form.txt")
    assert response.status_code == 204, response.text
    got = s3.get_object(Bucket=bucket, Key="v2/form.txt")
    assert got["Body"].read() == data
    assert got["ContentType"] == "text/plain"
    # A signature that is not the policy's is refused, and nothing is stored.
    forged = post(presigned, data, filename="forged.txt", signature="AAAAAAAAAAAAAAAAAAAAAAAAAAA=")
    assert forged.status_code == 403 and error_code(forged) == "SignatureDoesNotMatch"
    assert_absent(s3, bucket, "v2/forged.txt")
