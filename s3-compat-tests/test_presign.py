"""Presigned URLs made by real clients and used by a plain HTTP client (urllib), as a user
hands them to a browser or curl: boto3 `generate_presigned_url` for GET, PUT, HEAD and DELETE
(with response-header overrides), the minio SDK's `presigned_get_object` /
`presigned_put_object`, and `aws s3 presign`. Expired URLs must be refused with
`AccessDenied` "Request has expired", tampered ones with `SignatureDoesNotMatch`.

`test_boto3.py` already has the basic boto3 GET/PUT round trip and a changed-key URL;
`test_minio.py` a basic minio presigned GET."""

from __future__ import annotations

import io
import os
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs, urlsplit

import pytest
from botocore.exceptions import ClientError

from conftest import REGION, sha256

KiB = 1024


def fetch(url: str, method: str = "GET", data: bytes | None = None, headers=None):
    """Sends `method url` with no credentials; returns (status, headers, body). HTTP errors
    are returned, not raised."""
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.headers, e.read()


def assert_s3_error(result, status: int, code: str, message: str | None = None) -> None:
    got_status, _, body = result
    text = body.decode("utf-8", "replace")
    assert got_status == status, f"want {status} {code}, got {got_status}: {text}"
    assert f"<Code>{code}</Code>" in text, f"want error code {code}: {text}"
    if message is not None:
        assert f"<Message>{message}</Message>" in text, f"want message {message!r}: {text}"


def assert_expired(result) -> None:
    assert_s3_error(result, 403, "AccessDenied", "Request has expired")


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query, keep_blank_values=True).items()}


def tamper(url: str, old: str, new: str) -> str:
    assert old in url, f"{old!r} not in {url}"
    return url.replace(old, new, 1)


def head_status(s3, bucket: str, key: str) -> int:
    try:
        return s3.head_object(Bucket=bucket, Key=key)["ResponseMetadata"]["HTTPStatusCode"]
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"]


def presign(s3, op: str, bucket: str, key: str, expires: int = 300, **params) -> str:
    return s3.generate_presigned_url(
        op, Params={"Bucket": bucket, "Key": key, **params}, ExpiresIn=expires
    )


# boto3.


def test_boto3_presigned_put_get_head_delete_round_trip(s3, bucket):
    key = "models/run 7/weights+ß.bin"
    data = os.urandom(3 * 1024 * KiB + 5)

    status, headers, _ = fetch(presign(s3, "put_object", bucket, key), "PUT", data)
    assert status == 200
    etag = headers["ETag"]
    assert etag == s3.head_object(Bucket=bucket, Key=key)["ETag"]

    status, headers, body = fetch(presign(s3, "get_object", bucket, key))
    assert status == 200
    assert headers["ETag"] == etag
    assert sha256(body) == sha256(data)

    status, headers, body = fetch(presign(s3, "head_object", bucket, key), "HEAD")
    assert status == 200
    assert headers["ETag"] == etag
    assert int(headers["Content-Length"]) == len(data)
    assert body == b""

    status, _, body = fetch(presign(s3, "delete_object", bucket, key), "DELETE")
    assert status == 204, body
    assert head_status(s3, bucket, key) == 404


def test_boto3_sigv2_presigned_bucket_urls_create_and_delete_buckets(s3_client_for, s3, bucket_name):
    """boto3 at SigV2 (`signature_version="s3"`) signs a path-style bucket URL as `/bucket/`,
    the bucket's resource in the virtual-hosted form: the URL creates and deletes it."""
    v2 = s3_client_for(signature_version="s3")
    url = v2.generate_presigned_url("create_bucket", Params={"Bucket": bucket_name}, ExpiresIn=300)
    status, _, body = fetch(url, "PUT")
    assert status == 200, body
    s3.head_bucket(Bucket=bucket_name)
    url = v2.generate_presigned_url("delete_bucket", Params={"Bucket": bucket_name}, ExpiresIn=300)
    status, _, body = fetch(url, "DELETE")
    assert status == 204, body
    with pytest.raises(ClientError):
        s3.head_bucket(Bucket=bucket_name)


def test_boto3_presigned_put_with_content_type_requires_that_type(s3, bucket):
    url = presign(s3, "put_object", bucket, "page.html", ContentType="text/html")
    assert "content-type" in query_of(url)["X-Amz-SignedHeaders"].split(";")

    refused = fetch(url, "PUT", b"{}", {"Content-Type": "application/json"})
    assert_s3_error(refused, 403, "SignatureDoesNotMatch")
    assert head_status(s3, bucket, "page.html") == 404

    status, _, _ = fetch(url, "PUT", b"<p>hi</p>", {"Content-Type": "text/html"})
    assert status == 200
    got = s3.get_object(Bucket=bucket, Key="page.html")
    assert got["ContentType"] == "text/html"
    assert got["Body"].read() == b"<p>hi</p>"


def test_boto3_presigned_get_with_response_header_overrides(s3, bucket):
    s3.put_object(Bucket=bucket, Key="report", Body=b"a,b\n1,2\n", ContentType="text/plain")
    url = presign(
        s3,
        "get_object",
        bucket,
        "report",
        ResponseContentDisposition='attachment; filename="report.csv"',
        ResponseContentType="text/csv",
    )
    status, headers, body = fetch(url)
    assert status == 200
    assert headers["Content-Disposition"] == 'attachment; filename="report.csv"'
    assert headers["Content-Type"] == "text/csv"
    assert body == b"a,b\n1,2\n"

    # The overrides are signed: changing one is refused.
    tampered = tamper(url, "response-content-type=text%2Fcsv", "response-content-type=text%2Fhtml")
    assert_s3_error(fetch(tampered), 403, "SignatureDoesNotMatch")
    # A plain GET still has the stored type.
    assert s3.head_object(Bucket=bucket, Key="report")["ContentType"] == "text/plain"


def test_boto3_presigned_urls_expire(s3, bucket):
    s3.put_object(Bucket=bucket, Key="kept", Body=b"still here")
    get_url = presign(s3, "get_object", bucket, "kept", expires=1)
    head_url = presign(s3, "head_object", bucket, "kept", expires=1)
    put_url = presign(s3, "put_object", bucket, "late", expires=1)
    delete_url = presign(s3, "delete_object", bucket, "kept", expires=1)
    assert query_of(get_url)["X-Amz-Expires"] == "1"
    time.sleep(2)

    result = fetch(get_url)
    assert_expired(result)
    assert b"still here" not in result[2]
    assert_expired(fetch(put_url, "PUT", b"too late"))
    assert head_status(s3, bucket, "late") == 404
    assert_expired(fetch(delete_url, "DELETE"))
    assert s3.get_object(Bucket=bucket, Key="kept")["Body"].read() == b"still here"
    status, _, body = fetch(head_url, "HEAD")
    assert (status, body) == (403, b"")


def test_boto3_presigned_url_tampered_query_or_method_is_rejected(s3, bucket):
    s3.put_object(Bucket=bucket, Key="obj", Body=b"original")
    url = presign(s3, "get_object", bucket, "obj", expires=300)
    cases = {
        "X-Amz-Expires raised": tamper(url, "X-Amz-Expires=300", "X-Amz-Expires=3000"),
        "query parameter added": tamper(url, "?", "?response-content-type=text%2Fhtml&"),
    }
    for what, bad in cases.items():
        result = fetch(bad)
        assert_s3_error(result, 403, "SignatureDoesNotMatch")
        assert b"original" not in result[2], what
    # A GET URL neither deletes nor overwrites.
    assert_s3_error(fetch(url, "DELETE"), 403, "SignatureDoesNotMatch")
    assert_s3_error(fetch(url, "PUT", b"overwritten"), 403, "SignatureDoesNotMatch")
    assert s3.get_object(Bucket=bucket, Key="obj")["Body"].read() == b"original"
    # Untouched, it works.
    assert fetch(url)[2] == b"original"


# minio.


def test_minio_presigned_put_then_presigned_get(mc, s3, bucket):
    data = os.urandom(1536 * KiB)
    put_url = mc.presigned_put_object(bucket, "drop/box.bin", expires=timedelta(minutes=5))
    status, _, body = fetch(put_url, "PUT", data)
    assert status == 200, body
    assert sha256(s3.get_object(Bucket=bucket, Key="drop/box.bin")["Body"].read()) == sha256(data)

    get_url = mc.presigned_get_object(bucket, "drop/box.bin", expires=timedelta(minutes=5))
    status, _, body = fetch(get_url)
    assert status == 200
    assert sha256(body) == sha256(data)


def test_minio_presigned_get_with_response_headers(mc, bucket):
    mc.put_object(bucket, "img", io.BytesIO(b"\x89PNG"), 4)
    url = mc.presigned_get_object(
        bucket,
        "img",
        expires=timedelta(minutes=5),
        response_headers={
            "response-content-type": "image/png",
            "response-content-disposition": "inline",
        },
    )
    status, headers, body = fetch(url)
    assert status == 200
    assert headers["Content-Type"] == "image/png"
    assert headers["Content-Disposition"] == "inline"
    assert body == b"\x89PNG"


def test_minio_presigned_urls_expire(mc, s3, bucket):
    mc.put_object(bucket, "kept", io.BytesIO(b"kept"), 4)
    # Signed ten minutes ago, valid for one: expired without waiting.
    signed = datetime.now(timezone.utc) - timedelta(minutes=10)
    get_url = mc.presigned_get_object(
        bucket, "kept", expires=timedelta(minutes=1), request_date=signed
    )
    assert_expired(fetch(get_url))
    put_url = mc.presigned_put_object(bucket, "late", expires=timedelta(seconds=1))
    time.sleep(2)
    assert_expired(fetch(put_url, "PUT", b"late"))
    assert head_status(s3, bucket, "late") == 404


# aws CLI.
#
# CLI v1 `aws s3 presign` makes SigV2 URLs unless the profile sets `s3.signature_version =
# s3v4`; both must work.


@pytest.fixture
def aws_s3v4(aws, tmp_path):
    """`aws` with a profile that sets `s3.signature_version = s3v4` (path-style, us-east-1)."""
    config = tmp_path / "aws-config-s3v4"
    config.write_text(
        f"[default]\nregion = {REGION}\ns3 =\n    addressing_style = path\n"
        "    signature_version = s3v4\n"
    )

    def run(*args, **kw):
        return aws(*args, env={"AWS_CONFIG_FILE": str(config)}, **kw)

    run.endpoint = aws.endpoint
    return run


def cli_presign(aws, uri: str, expires: int) -> str:
    proc = aws("s3", "presign", uri, "--expires-in", str(expires))
    assert proc.returncode == 0, proc.stderr
    url = proc.stdout.strip()
    assert url.startswith(aws.endpoint), url
    return url


def test_awscli_presign_url_downloads_the_object(aws_s3v4, s3, bucket):
    data = os.urandom(700 * KiB)
    s3.put_object(Bucket=bucket, Key="cli/shared file.bin", Body=data)
    url = cli_presign(aws_s3v4, f"s3://{bucket}/cli/shared file.bin", 300)
    query = query_of(url)
    assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256", url
    assert query["X-Amz-Expires"] == "300"
    status, _, body = fetch(url)
    assert status == 200, body[:500]
    assert sha256(body) == sha256(data)


def test_awscli_presign_url_expires(aws_s3v4, s3, bucket):
    s3.put_object(Bucket=bucket, Key="brief", Body=b"brief")
    url = cli_presign(aws_s3v4, f"s3://{bucket}/brief", 1)
    time.sleep(2)
    assert_expired(fetch(url))


def test_awscli_default_sigv2_presign_url_downloads_and_expires(aws, s3, bucket):
    data = os.urandom(300 * KiB)
    s3.put_object(Bucket=bucket, Key="cli/v2 file.bin", Body=data)
    url = cli_presign(aws, f"s3://{bucket}/cli/v2 file.bin", 300)
    assert "Signature=" in url and "X-Amz-Algorithm" not in url, f"not a SigV2 URL: {url}"
    status, _, body = fetch(url)
    assert status == 200, body[:500]
    assert sha256(body) == sha256(data)
    assert_s3_error(fetch(tamper(url, "v2%20file", "v3%20file")), 403, "SignatureDoesNotMatch")
    brief = cli_presign(aws, f"s3://{bucket}/cli/v2 file.bin", 1)
    time.sleep(2)
    assert_expired(fetch(brief))


# boto3 at its defaults (no signature_version): presigned URLs are SigV2.


@pytest.fixture
def s3_default_signature(s3_client_for):
    return s3_client_for(signature_version=None)


def test_boto3_default_presigned_urls_are_sigv2_and_work(s3_default_signature, s3, bucket):
    v2 = s3_default_signature
    key = "v2/run 3/ckpt+1.bin"
    data = os.urandom(700 * KiB)
    # SigV2 signs the Content-Type: the upload sends the one the URL was made for.
    kind = "application/octet-stream"
    put_url = presign(v2, "put_object", bucket, key, ContentType=kind)
    query = query_of(put_url)
    assert {"AWSAccessKeyId", "Signature", "Expires"} <= set(query), put_url
    assert "X-Amz-Algorithm" not in query, put_url
    status, _, body = fetch(put_url, "PUT", data, headers={"Content-Type": kind})
    assert status == 200, body[:500]
    status, _, body = fetch(put_url, "PUT", data, headers={"Content-Type": "text/plain"})
    assert status == 403 and b"SignatureDoesNotMatch" in body, body[:500]

    get_url = presign(v2, "get_object", bucket, key, ResponseContentType="application/x-ckpt")
    status, headers, body = fetch(get_url)
    assert status == 200, body[:500]
    assert sha256(body) == sha256(data)
    assert headers["Content-Type"] == "application/x-ckpt"
    assert_s3_error(fetch(tamper(get_url, "ckpt%2B1", "ckpt%2B2")), 403, "SignatureDoesNotMatch")
    assert_s3_error(fetch(get_url, "DELETE"), 403, "SignatureDoesNotMatch")
    assert head_status(s3, bucket, key) == 200

    brief = presign(v2, "get_object", bucket, key, expires=1)
    time.sleep(2)
    assert_expired(fetch(brief))

    status, _, _ = fetch(presign(v2, "delete_object", bucket, key), "DELETE")
    assert status == 204
    assert head_status(s3, bucket, key) == 404


def test_boto3_default_client_works_for_ordinary_calls(s3_default_signature, bucket):
    data = os.urandom(64 * KiB)
    s3_default_signature.put_object(Bucket=bucket, Key="plain", Body=data)
    got = s3_default_signature.get_object(Bucket=bucket, Key="plain")["Body"].read()
    assert sha256(got) == sha256(data)


def test_boto3_sigv2_url_for_delete_bucket_cannot_remove_block_public_access(
    s3_default_signature, s3, bucket
):
    # SigV2 does not sign `?publicAccessBlock`: the same signature would cover it, so the
    # server takes only SigV4 for it (as AWS does) and the setting stays.
    block = {name: True for name in ("BlockPublicAcls", "IgnorePublicAcls",
                                     "BlockPublicPolicy", "RestrictPublicBuckets")}
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=block)
    url = s3_default_signature.generate_presigned_url(
        "delete_bucket", Params={"Bucket": bucket}, ExpiresIn=300
    )
    assert "AWSAccessKeyId" in url, url
    for selector in ("publicAccessBlock", "ownershipControls", "encryption"):
        assert_s3_error(fetch(f"{url}&{selector}", "DELETE"), 400, "InvalidRequest")
    kept = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert kept == block

    # And a SigV2 URL lives at most a week, as a SigV4 one does.
    key = "long-lived"
    s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    eight_days = 8 * 24 * 3600
    url = presign(s3_default_signature, "get_object", bucket, key, expires=eight_days)
    assert_s3_error(fetch(url), 403, "AccessDenied")
    status, _, body = fetch(presign(s3_default_signature, "get_object", bucket, key))
    assert (status, body) == (200, b"x")


@pytest.mark.parametrize("signature", ["s3", "s3v4"])
def test_a_browser_preflight_of_a_presigned_url_is_answered_by_cors(
    s3_client_for, s3, bucket, signature
):
    # A page that uploads through a presigned URL makes the browser send an OPTIONS preflight
    # to that URL, query string included, unsigned: the bucket's CORS rules answer it.
    signer = s3_client_for(signature_version=signature)
    s3.put_bucket_cors(
        Bucket=bucket,
        CORSConfiguration={
            "CORSRules": [{"AllowedMethods": ["GET", "PUT"], "AllowedOrigins": ["*"]}]
        },
    )
    origin = {"Origin": "https://notebook.example"}
    # SigV2 signs the Content-Type: the URL names the one the page sends.
    put_url = presign(signer, "put_object", bucket, "from-browser", ContentType="text/plain")
    status, headers, body = fetch(
        put_url, "OPTIONS", headers={**origin, "Access-Control-Request-Method": "PUT"}
    )
    assert status == 200, body[:500]
    assert headers["Access-Control-Allow-Origin"] == "*"
    assert "PUT" in headers["Access-Control-Allow-Methods"]
    status, headers, body = fetch(
        put_url, "PUT", b"uploaded", headers={**origin, "Content-Type": "text/plain"}
    )
    assert status == 200, body[:500]
    assert headers["Access-Control-Allow-Origin"] == "*"
    status, headers, body = fetch(presign(signer, "get_object", bucket, "from-browser"),
                                  headers=origin)
    assert (status, body) == (200, b"uploaded")
    assert headers["Access-Control-Allow-Origin"] == "*"
    # A method the rules do not allow is refused by CORS, signed URL or not.
    status, _, _ = fetch(
        put_url, "OPTIONS", headers={**origin, "Access-Control-Request-Method": "DELETE"}
    )
    assert status == 403
