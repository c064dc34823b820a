"""Appends through boto3 (`put_object(WriteOffsetBytes=...)`, `x-amz-write-offset-bytes`) on
ordinary buckets: the offset must be the object's size; racing appends at one offset have one
winner; GET, ranges, partNumber, HEAD, checksums, copies and every encryption see one object;
in a versioned bucket each append is a new version and the older ones stay readable."""

from __future__ import annotations

import base64
import os
import struct
import threading
import zlib

import pytest
from botocore.exceptions import ClientError

from conftest import KMS_KEY_NAME, unique_name
from test_encryption import CUSTOMER_KEY, sse_c
from test_versioning import all_versions, purge, set_versioning

MiB = 1024 * 1024


def error_of(e: ClientError) -> tuple[str, int]:
    return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]


def crc32(data: bytes) -> str:
    return base64.b64encode(struct.pack(">I", zlib.crc32(data))).decode()


def append(s3, bucket: str, key: str, offset: int, data: bytes, **kwargs) -> dict:
    return s3.put_object(Bucket=bucket, Key=key, Body=data, WriteOffsetBytes=offset, **kwargs)


def body(s3, bucket: str, key: str, **kwargs) -> bytes:
    return s3.get_object(Bucket=bucket, Key=key, **kwargs)["Body"].read()


def test_appends_grow_one_object_that_every_read_sees_whole(s3, bucket):
    head = os.urandom(1000)
    s3.put_object(Bucket=bucket, Key="log", Body=head, ContentType="text/x-log",
                  Metadata={"run": "7"})
    segments = [head, os.urandom(5 * MiB), os.urandom(MiB + 17), b"tail"]
    size = len(head)
    for data in segments[1:]:
        answer = append(s3, bucket, "log", size, data)
        size += len(data)
        assert answer["Size"] == size
        # boto3 sends a CRC32 of each segment; the answer is the whole object's CRC32.
        assert answer["ChecksumCRC32"] == crc32(b"".join(segments)[:size])
    whole = b"".join(segments)

    got = s3.get_object(Bucket=bucket, Key="log", ChecksumMode="ENABLED")
    assert got["Body"].read() == whole
    assert got["ContentLength"] == len(whole)
    assert got["ContentType"] == "text/x-log" and got["Metadata"] == {"run": "7"}
    assert got["ChecksumCRC32"] == crc32(whole)
    assert got["ETag"].strip('"').endswith("-4")
    # Ranges across segment boundaries, and each segment by part number.
    for start, end in [(990, 1010), (5 * MiB + 990, 5 * MiB + 1010), (0, len(whole) - 1)]:
        assert body(s3, bucket, "log", Range=f"bytes={start}-{end}") == whole[start : end + 1]
    assert body(s3, bucket, "log", Range="bytes=-6") == whole[-6:]
    for n, data in enumerate(segments, start=1):
        assert body(s3, bucket, "log", PartNumber=n) == data
    assert s3.head_object(Bucket=bucket, Key="log")["ContentLength"] == len(whole)
    listed = s3.list_objects_v2(Bucket=bucket)["Contents"]
    assert [(o["Key"], o["Size"]) for o in listed] == [("log", len(whole))]

    # A copy is one object with the same bytes.
    s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "log"})
    assert body(s3, bucket, "copy") == whole


def test_the_offset_must_be_the_objects_size(s3, bucket):
    # Offset 0 on no object makes one; any other offset on no object is refused.
    with pytest.raises(ClientError) as e:
        append(s3, bucket, "new", 5, b"late")
    assert error_of(e.value) == ("InvalidWriteOffset", 400)
    append(s3, bucket, "new", 0, b"first ")
    append(s3, bucket, "new", 6, b"second")
    assert body(s3, bucket, "new") == b"first second"

    for offset in (0, 11, 13, 1 << 40):
        with pytest.raises(ClientError) as e:
            append(s3, bucket, "new", offset, b"wrong")
        assert error_of(e.value) == ("InvalidWriteOffset", 400)
    assert body(s3, bucket, "new") == b"first second"

    # A segment whose checksum does not match is refused and leaves the object whole.
    with pytest.raises(ClientError) as e:
        append(s3, bucket, "new", 12, b" third", ChecksumCRC32=crc32(b"other"))
    assert error_of(e.value)[1] == 400
    assert body(s3, bucket, "new") == b"first second"

    # The client's own conditions still apply.
    with pytest.raises(ClientError) as e:
        append(s3, bucket, "new", 12, b" third", IfMatch='"0123"')
    assert error_of(e.value) == ("PreconditionFailed", 412)
    etag = s3.head_object(Bucket=bucket, Key="new")["ETag"]
    append(s3, bucket, "new", 12, b" third", IfMatch=etag)
    assert body(s3, bucket, "new") == b"first second third"

    # A malformed offset is a clear error.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="new", Body=b"x", WriteOffsetBytes=-1)
    assert error_of(e.value)[1] == 400
    assert body(s3, bucket, "new") == b"first second third"


def test_racing_appends_at_one_offset_have_exactly_one_winner(s3, bucket):
    s3.put_object(Bucket=bucket, Key="ckpt", Body=b"base")
    writers = 8
    results: list[object] = [None] * writers
    start = threading.Barrier(writers)

    def run(i: int) -> None:
        start.wait()
        try:
            append(s3, bucket, "ckpt", 4, b"[writer %d]" % i)
            results[i] = "ok"
        except ClientError as e:
            results[i] = error_of(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, r in enumerate(results) if r == "ok"]
    assert len(winners) == 1, results
    assert all(r == ("InvalidWriteOffset", 400) for r in results if r != "ok"), results
    assert body(s3, bucket, "ckpt") == b"base[writer %d]" % winners[0]


def test_a_thousand_appends_read_back_exactly(s3, bucket):
    pieces = [os.urandom(97 + i % 50) for i in range(1000)]
    s3.put_object(Bucket=bucket, Key="stream", Body=b"")
    offset = 0
    for piece in pieces:
        append(s3, bucket, "stream", offset, piece)
        offset += len(piece)
    whole = b"".join(pieces)
    got = s3.get_object(Bucket=bucket, Key="stream", ChecksumMode="ENABLED")
    assert got["Body"].read() == whole
    assert got["ChecksumCRC32"] == crc32(whole)
    for start, end in [(0, 0), (500, 90_000), (len(whole) - 300, len(whole) - 1)]:
        assert body(s3, bucket, "stream", Range=f"bytes={start}-{end}") == whole[start : end + 1]
    assert body(s3, bucket, "stream", PartNumber=1000) == pieces[-1]


def test_in_a_versioned_bucket_each_append_is_a_new_version(s3):
    name = unique_name("apv")
    s3.create_bucket(Bucket=name)
    set_versioning(s3, name, "Enabled")
    try:
        first = s3.put_object(Bucket=name, Key="log", Body=b"a" * 200_000)["VersionId"]
        second = append(s3, name, "log", 200_000, b"b" * 1000)["VersionId"]
        third = append(s3, name, "log", 201_000, b"c" * 10)["VersionId"]
        assert len({first, second, third}) == 3
        assert body(s3, name, "log") == b"a" * 200_000 + b"b" * 1000 + b"c" * 10
        assert body(s3, name, "log", VersionId=first) == b"a" * 200_000
        assert body(s3, name, "log", VersionId=second) == b"a" * 200_000 + b"b" * 1000
        # Removing an older version leaves the newer ones whole: they share no folder.
        s3.delete_object(Bucket=name, Key="log", VersionId=second)
        s3.delete_object(Bucket=name, Key="log", VersionId=first)
        assert body(s3, name, "log") == b"a" * 200_000 + b"b" * 1000 + b"c" * 10
        versions = [v["VersionId"] for v in all_versions(s3, name)]
        assert versions == [third]

        # An append to a key whose newest version is a delete marker is an append to nothing.
        s3.delete_object(Bucket=name, Key="log")
        with pytest.raises(ClientError) as e:
            append(s3, name, "log", 201_010, b"d")
        assert error_of(e.value) == ("InvalidWriteOffset", 400)
        append(s3, name, "log", 0, b"fresh")
        assert body(s3, name, "log") == b"fresh"
    finally:
        purge(s3, name)


@pytest.mark.parametrize("kind", ["sse-s3", "sse-kms", "sse-c"])
def test_appends_to_encrypted_objects_are_sealed_like_them(s3, bucket, kind):
    args = {
        "sse-s3": {"ServerSideEncryption": "AES256"},
        "sse-kms": {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": KMS_KEY_NAME},
        "sse-c": sse_c(CUSTOMER_KEY),
    }[kind]
    key_args = sse_c(CUSTOMER_KEY) if kind == "sse-c" else {}
    # A small object (stored inline) and a large one grow alike.
    for key, first in [("small", os.urandom(3000)), ("large", os.urandom(6 * MiB))]:
        s3.put_object(Bucket=bucket, Key=key, Body=first, **args)
        more = [os.urandom(MiB), os.urandom(100)]
        offset = len(first)
        for data in more:
            append(s3, bucket, key, offset, data, **key_args)
            offset += len(data)
        whole = first + b"".join(more)
        assert body(s3, bucket, key, **key_args) == whole
        start = len(first) - 5
        got = body(s3, bucket, key, Range=f"bytes={start}-{start + 9}", **key_args)
        assert got == whole[start : start + 10]
        head = s3.head_object(Bucket=bucket, Key=key, **key_args)
        assert head["ContentLength"] == len(whole)
        if kind == "sse-c":
            # Without the key, the object can be neither read nor appended to.
            with pytest.raises(ClientError) as e:
                append(s3, bucket, key, len(whole), b"x")
            assert error_of(e.value)[1] == 400
        else:
            assert head["ServerSideEncryption"] == args["ServerSideEncryption"]
            # An append asking for another encryption than the object's is refused.
            with pytest.raises(ClientError) as e:
                other = "aws:kms" if kind == "sse-s3" else "AES256"
                append(s3, bucket, key, len(whole), b"x", ServerSideEncryption=other)
            assert error_of(e.value) == ("InvalidRequest", 400)
        assert body(s3, bucket, key, **key_args) == whole


def test_an_append_onto_a_multipart_object_adds_a_part(s3, bucket):
    parts = [os.urandom(5 * MiB), os.urandom(MiB)]
    upload = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    done = []
    for n, data in enumerate(parts, start=1):
        etag = s3.upload_part(Bucket=bucket, Key="mp", UploadId=upload, PartNumber=n, Body=data)
        done.append({"PartNumber": n, "ETag": etag["ETag"]})
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=upload,
                                 MultipartUpload={"Parts": done})
    append(s3, bucket, "mp", 6 * MiB, b"more")
    whole = b"".join(parts) + b"more"
    got = s3.get_object(Bucket=bucket, Key="mp", ChecksumMode="ENABLED")
    assert got["Body"].read() == whole
    assert got["ETag"].strip('"').endswith("-3")
    assert body(s3, bucket, "mp", PartNumber=3) == b"more"
