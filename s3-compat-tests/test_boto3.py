"""boto3 against strata: buckets, objects, ranges, digests, checksums, listing, multipart,
auth and presigned URLs, and the 501 answer for what is not implemented."""

from __future__ import annotations

import base64
import hashlib
import os
import urllib.error
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor

import botocore
import pytest
from awscrt import checksums as crt_checksums
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

from conftest import (
    ACCESS_KEY,
    MiB,
    SECRET_KEY,
    empty_and_delete_bucket,
    force_trailer_checksums,
    sha256,
    sha256_file,
    unique_name,
    write_random_file,
)

KiB = 1024


def error_of(excinfo) -> tuple[str, int]:
    """(S3 error code, HTTP status) of a botocore ClientError."""
    resp = excinfo.value.response
    return resp["Error"]["Code"], resp["ResponseMetadata"]["HTTPStatusCode"]


def status_of(resp) -> int:
    return resp["ResponseMetadata"]["HTTPStatusCode"]


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def multipart_etag(parts: list[bytes]) -> str:
    digests = b"".join(hashlib.md5(p).digest() for p in parts)
    return f'"{hashlib.md5(digests).hexdigest()}-{len(parts)}"'


def expected_checksum(algorithm: str, data: bytes) -> str:
    """The base64 value S3 reports for `algorithm` over `data`."""
    if algorithm == "CRC32":
        return b64(zlib.crc32(data).to_bytes(4, "big"))
    if algorithm == "CRC32C":
        return b64(crt_checksums.crc32c(data).to_bytes(4, "big"))
    if algorithm == "CRC64NVME":
        return b64(crt_checksums.crc64nvme(data).to_bytes(8, "big"))
    if algorithm == "SHA1":
        return b64(hashlib.sha1(data).digest())
    if algorithm == "SHA256":
        return b64(hashlib.sha256(data).digest())
    raise ValueError(algorithm)


@pytest.fixture(params=["header", "trailer"])
def uploader(request, s3_client_for):
    """A boto3 client with default checksums, sending them in a header (botocore's choice over
    plain HTTP) or as an aws-chunked trailer (its choice over HTTPS). Yields (client, sent
    request headers)."""
    client = s3_client_for()
    sent = force_trailer_checksums(client) if request.param == "trailer" else None
    yield client, sent, request.param


def assert_wire_form(sent, mode):
    """Checks the uploads really went out in the form the test meant."""
    if mode != "trailer":
        return
    assert sent, "no PutObject/UploadPart request was recorded"
    for headers in sent:
        assert headers.get("x-amz-content-sha256") == "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
        assert headers.get("content-encoding", "").endswith("aws-chunked")
        assert headers.get("x-amz-trailer", "").startswith("x-amz-checksum-")


# Buckets.


def test_bucket_create_head_list_delete(s3, bucket_name):
    resp = s3.create_bucket(Bucket=bucket_name)
    assert status_of(resp) == 200
    assert status_of(s3.head_bucket(Bucket=bucket_name)) == 200

    listed = s3.list_buckets()["Buckets"]
    mine = [b for b in listed if b["Name"] == bucket_name]
    assert len(mine) == 1
    assert mine[0]["CreationDate"] is not None

    assert status_of(s3.delete_bucket(Bucket=bucket_name)) == 204
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=bucket_name)
    assert status_of(e.value.response) == 404
    assert bucket_name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def test_delete_nonempty_bucket_is_bucket_not_empty(s3, bucket):
    s3.put_object(Bucket=bucket, Key="keep", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert error_of(e) == ("BucketNotEmpty", 409)
    # The bucket and its object survive the refused delete.
    assert s3.get_object(Bucket=bucket, Key="keep")["Body"].read() == b"x"


@pytest.mark.parametrize(
    "name",
    ["ab", "a" * 64, "UpperCase", "under_score", "-leading-dash", "trailing-dash-"],
)
def test_invalid_bucket_name(s3, name):
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=name)
    assert error_of(e) == ("InvalidBucketName", 400)


def test_no_such_bucket(s3):
    missing = unique_name("missing")
    calls = [
        lambda: s3.get_object(Bucket=missing, Key="k"),
        lambda: s3.put_object(Bucket=missing, Key="k", Body=b"data"),
        lambda: s3.list_objects_v2(Bucket=missing),
        lambda: s3.delete_bucket(Bucket=missing),
    ]
    for call in calls:
        with pytest.raises(ClientError) as e:
            call()
        assert error_of(e) == ("NoSuchBucket", 404)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=missing)
    assert status_of(e.value.response) == 404


# Objects.


@pytest.mark.parametrize(
    "size", [0, 1, 100 * KiB, MiB + 1, 7 * MiB], ids=["0B", "1B", "100KiB", "1MiB+1", "7MiB"]
)
def test_put_get_byte_identical(uploader, bucket, size):
    client, sent, mode = uploader
    data = os.urandom(size)
    put = client.put_object(Bucket=bucket, Key=f"obj-{size}", Body=data)
    assert put["ETag"] == f'"{md5_hex(data)}"'
    assert_wire_form(sent, mode)

    got = client.get_object(Bucket=bucket, Key=f"obj-{size}")
    body = got["Body"].read()
    assert got["ContentLength"] == size
    assert len(body) == size
    assert sha256(body) == sha256(data)
    assert got["ETag"] == put["ETag"]

    head = client.head_object(Bucket=bucket, Key=f"obj-{size}")
    assert head["ContentLength"] == size
    assert head["ETag"] == put["ETag"]


def test_metadata_and_content_type(s3, bucket):
    meta = {"color": "blue", "owner-team": "storage", "spaced": "a value with spaces"}
    s3.put_object(
        Bucket=bucket,
        Key="doc.txt",
        Body=b"hello",
        ContentType="text/plain; charset=utf-8",
        Metadata=meta,
    )
    head = s3.head_object(Bucket=bucket, Key="doc.txt")
    assert head["ContentType"] == "text/plain; charset=utf-8"
    assert head["Metadata"] == meta
    got = s3.get_object(Bucket=bucket, Key="doc.txt")
    assert got["ContentType"] == "text/plain; charset=utf-8"
    assert got["Metadata"] == meta
    assert got["Body"].read() == b"hello"


def test_overwrite_replaces_data_and_metadata(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=os.urandom(300 * KiB), Metadata={"v": "1"})
    second = os.urandom(2 * MiB + 3)
    s3.put_object(Bucket=bucket, Key="k", Body=second, Metadata={"v": "2"})
    got = s3.get_object(Bucket=bucket, Key="k")
    assert sha256(got["Body"].read()) == sha256(second)
    assert got["Metadata"] == {"v": "2"}


def test_missing_key(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="nope")
    assert error_of(e) == ("NoSuchKey", 404)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="nope")
    assert status_of(e.value.response) == 404
    # DeleteObject of a missing key succeeds, as in S3.
    assert status_of(s3.delete_object(Bucket=bucket, Key="nope")) == 204


def test_delete_object(s3, bucket):
    s3.put_object(Bucket=bucket, Key="gone", Body=os.urandom(200 * KiB))
    assert status_of(s3.delete_object(Bucket=bucket, Key="gone")) == 204
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="gone")
    assert error_of(e) == ("NoSuchKey", 404)


def test_key_too_long(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k" * 1025, Body=b"x")
    assert error_of(e) == ("KeyTooLongError", 400)
    # 1024 bytes is still allowed.
    s3.put_object(Bucket=bucket, Key="k" * 1024, Body=b"x")
    assert s3.get_object(Bucket=bucket, Key="k" * 1024)["Body"].read() == b"x"


def test_keys_are_not_paths(s3, bucket):
    """`a`, `a/`, `a/b` and `a//b` are four objects, and odd characters round-trip."""
    keys = ["a", "a/", "a/b", "a//b", "sp ace", "plus+sign", "uni-ß-文字", "pct%20x", "q?x=1&y", "~t"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=k.encode())
    for k in keys:
        assert s3.get_object(Bucket=bucket, Key=k)["Body"].read() == k.encode(), k
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert listed == sorted(keys, key=lambda k: k.encode())


# Ranges.


@pytest.mark.parametrize("size", [1000, 3 * MiB + 17], ids=["inline", "sharded"])
def test_range_get(s3, bucket, size):
    data = os.urandom(size)
    s3.put_object(Bucket=bucket, Key="r", Body=data)
    cases = [
        ("bytes=0-0", 0, 0),
        ("bytes=10-99", 10, 99),
        (f"bytes={size - 100}-", size - 100, size - 1),
        ("bytes=-37", size - 37, size - 1),
        (f"bytes={size - 5}-{size + 1000}", size - 5, size - 1),  # clamped to the end
    ]
    if size > 2 * MiB:
        cases.append((f"bytes={MiB - 7}-{2 * MiB + 7}", MiB - 7, 2 * MiB + 7))  # across blocks
    for header, first, last in cases:
        got = s3.get_object(Bucket=bucket, Key="r", Range=header)
        assert status_of(got) == 206, header
        assert got["ContentRange"] == f"bytes {first}-{last}/{size}", header
        assert got["ContentLength"] == last - first + 1, header
        assert got["Body"].read() == data[first : last + 1], header


def test_range_not_satisfiable(s3, bucket):
    s3.put_object(Bucket=bucket, Key="r", Body=b"0123456789")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="r", Range="bytes=10-20")
    assert error_of(e) == ("InvalidRange", 416)


def test_not_modified_is_a_304_at_boto3_defaults(s3, bucket):
    # boto3's defaults ask for response checksums; a 304 that carried one made botocore fail
    # with a TypeError instead of raising the 304.
    s3.put_object(Bucket=bucket, Key="cached", Body=os.urandom(300 * KiB))
    etag = s3.head_object(Bucket=bucket, Key="cached")["ETag"]
    for call in (s3.get_object, s3.head_object):
        with pytest.raises(ClientError) as e:
            call(Bucket=bucket, Key="cached", IfNoneMatch=etag)
        response = e.value.response
        assert response["ResponseMetadata"]["HTTPStatusCode"] == 304
        assert response["ResponseMetadata"]["HTTPHeaders"]["etag"] == etag
        assert not any(h.startswith("x-amz-checksum") for h in response["ResponseMetadata"]["HTTPHeaders"])


# Content-MD5.


def test_content_md5_correct_is_accepted(s3, bucket):
    data = os.urandom(150 * KiB)
    resp = s3.put_object(
        Bucket=bucket, Key="m", Body=data, ContentMD5=b64(hashlib.md5(data).digest())
    )
    assert resp["ETag"] == f'"{md5_hex(data)}"'


@pytest.mark.parametrize("size", [10, 2 * MiB], ids=["inline", "sharded"])
def test_content_md5_wrong_is_bad_digest(s3, bucket, size):
    data = os.urandom(size)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="m", Body=data, ContentMD5=b64(hashlib.md5(b"x").digest()))
    assert error_of(e) == ("BadDigest", 400)
    # Nothing was stored.
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="m")
    assert status_of(e.value.response) == 404


def test_content_md5_malformed_is_invalid_digest(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="m", Body=b"data", ContentMD5="not-an-md5")
    assert error_of(e) == ("InvalidDigest", 400)


# Flexible checksums.


@pytest.mark.parametrize("size", [1000, MiB + 1], ids=["inline", "sharded"])
def test_default_crc32_checksum_stored_and_returned(uploader, bucket, size):
    """boto3 >= 1.36 sends a CRC32 with every upload without being asked."""
    client, sent, mode = uploader
    data = os.urandom(size)
    client.put_object(Bucket=bucket, Key="c", Body=data)
    assert_wire_form(sent, mode)
    if sent is not None:
        assert sent[-1]["x-amz-trailer"] == "x-amz-checksum-crc32"

    want = expected_checksum("CRC32", data)
    head = client.head_object(Bucket=bucket, Key="c", ChecksumMode="ENABLED")
    assert head.get("ChecksumCRC32") == want
    got = client.get_object(Bucket=bucket, Key="c", ChecksumMode="ENABLED")
    assert got.get("ChecksumCRC32") == want
    # botocore also validates the body against the returned checksum while reading.
    assert sha256(got["Body"].read()) == sha256(data)


@pytest.mark.parametrize("algorithm", ["SHA256", "CRC32C", "CRC64NVME", "SHA1"])
def test_explicit_checksum_algorithm(uploader, bucket, algorithm):
    client, sent, mode = uploader
    data = os.urandom(MiB + 123)
    client.put_object(Bucket=bucket, Key="c", Body=data, ChecksumAlgorithm=algorithm)
    assert_wire_form(sent, mode)
    want = expected_checksum(algorithm, data)
    head = client.head_object(Bucket=bucket, Key="c", ChecksumMode="ENABLED")
    assert head.get(f"Checksum{algorithm}") == want
    got = client.get_object(Bucket=bucket, Key="c", ChecksumMode="ENABLED")
    assert got.get(f"Checksum{algorithm}") == want
    assert sha256(got["Body"].read()) == sha256(data)


@pytest.mark.parametrize("algorithm", ["CRC32", "SHA256", "CRC64NVME"])
def test_wrong_checksum_is_bad_digest(s3, bucket, algorithm):
    data = os.urandom(300 * KiB)
    wrong = expected_checksum(algorithm, b"something else")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="c", Body=data, **{f"Checksum{algorithm}": wrong})
    assert error_of(e) == ("BadDigest", 400)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="c")
    assert status_of(e.value.response) == 404


# Listing.

LIST_DIRS = 5
LIST_PER_DIR = 500  # 2500 keys in all


@pytest.fixture(scope="module")
def big_bucket(s3):
    """A bucket with 2500 small objects `dir{d}/obj{i:04d}`, written 16 at a time."""
    name = unique_name("list")
    s3.create_bucket(Bucket=name)
    keys = [f"dir{d}/obj{i:04d}" for d in range(LIST_DIRS) for i in range(LIST_PER_DIR)]

    def put(key):
        s3.put_object(Bucket=name, Key=key, Body=key.encode())

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, keys))
    yield name, keys
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: s3.delete_object(Bucket=name, Key=k), keys))
    empty_and_delete_bucket(s3, name)


def test_list_paginates_2500_keys(s3, big_bucket):
    name, keys = big_bucket
    pages = list(
        s3.get_paginator("list_objects_v2").paginate(
            Bucket=name, PaginationConfig={"PageSize": 1000}
        )
    )
    assert [p["KeyCount"] for p in pages] == [1000, 1000, 500]
    assert [p["IsTruncated"] for p in pages] == [True, True, False]
    listed = [o["Key"] for p in pages for o in p["Contents"]]
    assert listed == sorted(keys)
    first = pages[0]["Contents"][0]
    assert first["Size"] == len(first["Key"])
    assert first["ETag"] == f'"{md5_hex(first["Key"].encode())}"'


def test_list_delimiter_prefix_start_after(s3, big_bucket):
    name, _ = big_bucket
    top = s3.list_objects_v2(Bucket=name, Delimiter="/")
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == [f"dir{d}/" for d in range(LIST_DIRS)]
    assert "Contents" not in top or top["Contents"] == []
    assert top["KeyCount"] == LIST_DIRS

    one = s3.list_objects_v2(Bucket=name, Prefix="dir3/", Delimiter="/")
    assert one["KeyCount"] == LIST_PER_DIR
    assert one["IsTruncated"] is False
    assert all(o["Key"].startswith("dir3/") for o in one["Contents"])

    after = s3.list_objects_v2(Bucket=name, StartAfter="dir4/obj0495")
    assert [o["Key"] for o in after["Contents"]] == [f"dir4/obj{i:04d}" for i in range(496, 500)]

    small = s3.list_objects_v2(Bucket=name, Prefix="dir1/", MaxKeys=7)
    assert small["KeyCount"] == 7 and small["IsTruncated"] is True
    rest = s3.list_objects_v2(
        Bucket=name, Prefix="dir1/", MaxKeys=7, ContinuationToken=small["NextContinuationToken"]
    )
    assert rest["Contents"][0]["Key"] == "dir1/obj0007"


# Multipart.


def test_multipart_upload_low_level(s3, bucket):
    parts = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(MiB + 9)]
    mpu = s3.create_multipart_upload(Bucket=bucket, Key="mp", Metadata={"kind": "multipart"})
    upload_id = mpu["UploadId"]
    done = []
    for number, part in enumerate(parts, start=1):
        resp = s3.upload_part(
            Bucket=bucket, Key="mp", UploadId=upload_id, PartNumber=number, Body=part
        )
        assert resp["ETag"] == f'"{md5_hex(part)}"'
        done.append({"PartNumber": number, "ETag": resp["ETag"]})
    # A part's checksum, if the server echoes it, goes back in the completion request.
    complete = s3.complete_multipart_upload(
        Bucket=bucket, Key="mp", UploadId=upload_id, MultipartUpload={"Parts": done}
    )
    assert complete["ETag"] == multipart_etag(parts)

    whole = b"".join(parts)
    got = s3.get_object(Bucket=bucket, Key="mp")
    assert got["ContentLength"] == len(whole)
    assert got["ETag"] == multipart_etag(parts)
    assert got["Metadata"] == {"kind": "multipart"}
    assert sha256(got["Body"].read()) == sha256(whole)
    # A range that spans the boundary between parts 1 and 2.
    ranged = s3.get_object(Bucket=bucket, Key="mp", Range=f"bytes={5 * MiB - 10}-{5 * MiB + 9}")
    assert ranged["Body"].read() == whole[5 * MiB - 10 : 5 * MiB + 10]


def test_multipart_abort(s3, bucket):
    upload_id = s3.create_multipart_upload(Bucket=bucket, Key="ab")["UploadId"]
    part = s3.upload_part(
        Bucket=bucket, Key="ab", UploadId=upload_id, PartNumber=1, Body=os.urandom(MiB)
    )
    assert status_of(s3.abort_multipart_upload(Bucket=bucket, Key="ab", UploadId=upload_id)) == 204
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=bucket,
            Key="ab",
            UploadId=upload_id,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
        )
    assert error_of(e) == ("NoSuchUpload", 404)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="ab")
    assert status_of(e.value.response) == 404


def test_upload_file_download_file_multipart(uploader, bucket, tmp_path):
    """30 MiB through the transfer manager: 4 parts of 8 MiB up, ranged GETs down."""
    client, sent, mode = uploader
    src, dst = tmp_path / "src.bin", tmp_path / "dst.bin"
    digest = write_random_file(src, 30 * MiB)
    config = TransferConfig(
        multipart_threshold=8 * MiB,
        multipart_chunksize=8 * MiB,
        max_concurrency=4,
        preferred_transfer_client="classic",
    )
    client.upload_file(str(src), bucket, "big.bin", Config=config)
    assert_wire_form(sent, mode)
    if sent is not None:
        assert len(sent) == 4  # four UploadPart requests

    data = src.read_bytes()
    chunks = [data[i : i + 8 * MiB] for i in range(0, len(data), 8 * MiB)]
    head = client.head_object(Bucket=bucket, Key="big.bin")
    assert head["ContentLength"] == 30 * MiB
    assert head["ETag"] == multipart_etag(chunks)

    client.download_file(bucket, "big.bin", str(dst), Config=config)
    assert sha256_file(dst) == digest


# Auth.


def test_wrong_secret_is_signature_does_not_match(s3_client_for, bucket):
    bad = s3_client_for(secret_key=SECRET_KEY + "x")
    for call in (
        bad.list_buckets,
        lambda: bad.put_object(Bucket=bucket, Key="k", Body=b"data"),
        lambda: bad.list_objects_v2(Bucket=bucket),
    ):
        with pytest.raises(ClientError) as e:
            call()
        assert error_of(e) == ("SignatureDoesNotMatch", 403)


def test_unknown_access_key_is_invalid_access_key_id(s3_client_for, bucket):
    bad = s3_client_for(access_key="NOSUCHKEY0000000", secret_key=SECRET_KEY)
    for call in (bad.list_buckets, lambda: bad.get_object(Bucket=bucket, Key="k")):
        with pytest.raises(ClientError) as e:
            call()
        assert error_of(e) == ("InvalidAccessKeyId", 403)


def test_anonymous_is_access_denied(s3_client_for, bucket):
    anon = s3_client_for(access_key=None, secret_key=None, signature_version=botocore.UNSIGNED)
    with pytest.raises(ClientError) as e:
        anon.list_objects_v2(Bucket=bucket)
    assert error_of(e) == ("AccessDenied", 403)


def test_presigned_get_and_put(s3, bucket):
    data = os.urandom(700 * KiB)
    s3.put_object(Bucket=bucket, Key="pre sign/ß.bin", Body=data)
    url = s3.generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": "pre sign/ß.bin"}, ExpiresIn=300
    )
    assert "X-Amz-Signature=" in url
    with urllib.request.urlopen(url, timeout=60) as resp:
        assert resp.status == 200
        assert sha256(resp.read()) == sha256(data)

    put_url = s3.generate_presigned_url(
        "put_object", Params={"Bucket": bucket, "Key": "uploaded"}, ExpiresIn=300
    )
    body = os.urandom(200 * KiB)
    req = urllib.request.Request(
        put_url, data=body, method="PUT", headers={"Content-Type": "application/octet-stream"}
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert resp.status == 200
    assert sha256(s3.get_object(Bucket=bucket, Key="uploaded")["Body"].read()) == sha256(body)


def test_presigned_tampered_is_rejected(s3, bucket):
    s3.put_object(Bucket=bucket, Key="secret", Body=b"s")
    url = s3.generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": "secret"}, ExpiresIn=300
    )
    tampered = url.replace("/secret?", "/other?")
    assert tampered != url
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(tampered, timeout=60)
    assert e.value.code == 403
    assert b"<Code>SignatureDoesNotMatch</Code>" in e.value.read()


# Not implemented.


def test_unimplemented_operations_are_501(s3, bucket):
    calls = [
        lambda: s3.get_bucket_website(Bucket=bucket),
        lambda: s3.get_bucket_replication(Bucket=bucket),
    ]
    for call in calls:
        with pytest.raises(ClientError) as e:
            call()
        assert error_of(e) == ("NotImplemented", 501)



def test_delete_objects_batch_and_quiet(s3, bucket):
    for key in ["a", "b", "c", "keep"]:
        s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
    out = s3.delete_objects(
        Bucket=bucket,
        Delete={"Objects": [{"Key": k} for k in ["a", "b", "missing"]]},
    )
    assert sorted(d["Key"] for d in out["Deleted"]) == ["a", "b", "missing"]
    assert out.get("Errors", []) == []
    quiet = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "c"}], "Quiet": True})
    assert quiet.get("Deleted", []) == [] and quiet.get("Errors", []) == []
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys == ["keep"]


def test_a_client_in_another_region_re_signs_for_the_servers(server, s3, bucket_name):
    """boto3 configured for eu-central-1 creates its bucket there (S3's global endpoint takes
    it), then is answered `AuthorizationHeaderMalformed` with the server's `<Region>` and
    re-signs its requests for it: the README's claim about regions, with boto3's defaults."""
    import boto3

    elsewhere = boto3.session.Session().client(
        "s3",
        endpoint_url=server.endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="eu-central-1",
        config=botocore.config.Config(s3={"addressing_style": "path"}),
    )
    elsewhere.create_bucket(
        Bucket=bucket_name, CreateBucketConfiguration={"LocationConstraint": "eu-central-1"}
    )
    try:
        elsewhere.put_object(Bucket=bucket_name, Key="k", Body=b"signed twice")
        assert elsewhere.get_object(Bucket=bucket_name, Key="k")["Body"].read() == b"signed twice"
        assert s3.get_object(Bucket=bucket_name, Key="k")["Body"].read() == b"signed twice"
    finally:
        empty_and_delete_bucket(s3, bucket_name)
