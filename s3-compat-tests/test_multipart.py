"""Multipart uploads through real clients (issue 4): boto3's transfer manager with 8 threads,
`aws s3 cp` of 1 GiB with the CLI's default 8 MiB parts, minio `fput_object` with a custom
part size, ListParts / ListMultipartUploads paginators, UploadPartCopy with a source range,
GetObject by part number, write-once Complete (If-None-Match: *) and FULL_OBJECT checksums."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import threading
import time
import urllib.parse
import zlib

import pytest
from awscrt import checksums as crt_checksums
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

from conftest import MiB, sha256, sha256_file, write_random_file

KiB = 1024
GiB = 1024 * MiB


def error_of(excinfo) -> tuple[str, int]:
    """(S3 error code, HTTP status) of a botocore ClientError."""
    resp = excinfo.value.response
    return resp["Error"]["Code"], resp["ResponseMetadata"]["HTTPStatusCode"]


def status_of(resp) -> int:
    return resp["ResponseMetadata"]["HTTPStatusCode"]


def md5_quoted(data: bytes) -> str:
    return f'"{hashlib.md5(data).hexdigest()}"'


def multipart_etag(parts: list[bytes]) -> str:
    digests = b"".join(hashlib.md5(p).digest() for p in parts)
    return f'"{hashlib.md5(digests).hexdigest()}-{len(parts)}"'


def file_multipart_etag(path, part_size: int) -> str:
    digests = []
    with open(path, "rb") as f:
        while chunk := f.read(part_size):
            digests.append(hashlib.md5(chunk).digest())
    return f'"{hashlib.md5(b"".join(digests)).hexdigest()}-{len(digests)}"'


def random_bytes(size: int, seed: int) -> bytes:
    """Deterministic bytes (repeatable failures), cheap to make."""
    out = bytearray()
    block = hashlib.sha256(str(seed).encode()).digest()
    while len(out) < size:
        block = hashlib.sha256(block).digest()
        out += block * 32
    return bytes(out[:size])


def cli_ok(proc):
    assert proc.returncode == 0, (
        f"`{' '.join(proc.args[3:])}` exited {proc.returncode}\n"
        f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    return proc


def upload_parts(s3, bucket, key, parts, **create_args):
    """Creates an upload and uploads `parts` in order; returns (upload id, completion list)."""
    upload_id = s3.create_multipart_upload(Bucket=bucket, Key=key, **create_args)["UploadId"]
    done = []
    for number, part in enumerate(parts, start=1):
        resp = s3.upload_part(
            Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=part
        )
        assert resp["ETag"] == md5_quoted(part)
        done.append({"PartNumber": number, "ETag": resp["ETag"]})
    return upload_id, done


# Real clients, real sizes.


def test_upload_file_64mib_with_8_threads(s3_client_for, bucket, tmp_path):
    """boto3's transfer manager: 8 parts of 8 MiB sent by 8 threads, downloaded by 8."""
    client = s3_client_for(max_pool_connections=16)
    src, dst = tmp_path / "ckpt.bin", tmp_path / "ckpt.back"
    digest = write_random_file(src, 64 * MiB)
    config = TransferConfig(
        multipart_threshold=8 * MiB,
        multipart_chunksize=8 * MiB,
        max_concurrency=8,
        preferred_transfer_client="classic",
    )
    client.upload_file(str(src), bucket, "ckpt/step-1000.bin", Config=config)

    head = client.head_object(Bucket=bucket, Key="ckpt/step-1000.bin")
    assert head["ContentLength"] == 64 * MiB
    assert head["ETag"] == file_multipart_etag(src, 8 * MiB)  # 8 parts

    client.download_file(bucket, "ckpt/step-1000.bin", str(dst), Config=config)
    assert sha256_file(dst) == digest


@pytest.mark.timeout(1500)
def test_aws_s3_cp_1gib_round_trip(aws, bucket, tmp_path):
    """`aws s3 cp` with the CLI's defaults (8 MiB parts, 10 threads) up and down."""
    src, dst = tmp_path / "big.bin", tmp_path / "big.back"
    size = GiB
    try:
        digest = write_random_file(src, size)
        cli_ok(aws("s3", "cp", str(src), f"s3://{bucket}/ckpt/1gib.bin", timeout=1200))
        head = json.loads(
            cli_ok(
                aws("s3api", "head-object", "--bucket", bucket, "--key", "ckpt/1gib.bin",
                    "--output", "json")
            ).stdout
        )
        assert head["ContentLength"] == size
        assert head["ETag"] == file_multipart_etag(src, 8 * MiB)  # 128 parts

        cli_ok(aws("s3", "cp", f"s3://{bucket}/ckpt/1gib.bin", str(dst), timeout=1200))
        assert dst.stat().st_size == size
        assert sha256_file(dst) == digest
    finally:
        for p in (src, dst):
            p.unlink(missing_ok=True)


def test_minio_fput_object_6mib_parts(mc, bucket, tmp_path):
    """minio `fput_object` with part_size=6 MiB: 20 MiB goes up as 6+6+6+2 MiB."""
    src, dst = tmp_path / "src.bin", tmp_path / "dst.bin"
    digest = write_random_file(src, 20 * MiB)
    result = mc.fput_object(bucket, "ckpt/minio.bin", str(src), part_size=6 * MiB)
    assert result.etag.strip('"') == file_multipart_etag(src, 6 * MiB).strip('"')
    assert result.etag.endswith("-4")
    stat = mc.stat_object(bucket, "ckpt/minio.bin")
    assert stat.size == 20 * MiB
    assert stat.etag.strip('"') == result.etag.strip('"')
    mc.fget_object(bucket, "ckpt/minio.bin", str(dst))
    assert sha256_file(dst) == digest


# Listing.


def test_list_parts_paginator(s3, bucket):
    parts = [random_bytes(1000 * n + 17, n) for n in range(1, 8)]
    upload_id, _ = upload_parts(s3, bucket, "listed", parts)
    pages = list(
        s3.get_paginator("list_parts").paginate(
            Bucket=bucket, Key="listed", UploadId=upload_id, PaginationConfig={"PageSize": 3}
        )
    )
    assert [[p["PartNumber"] for p in page.get("Parts", [])] for page in pages] == [
        [1, 2, 3],
        [4, 5, 6],
        [7],
    ]
    assert [page["IsTruncated"] for page in pages] == [True, True, False]
    assert pages[0]["NextPartNumberMarker"] == 3
    assert pages[1]["PartNumberMarker"] == 3
    for page in pages:
        assert page["Bucket"] == bucket
        assert page["Key"] == "listed"
        assert page["UploadId"] == upload_id
        assert page["MaxParts"] == 3
        for p in page.get("Parts", []):
            data = parts[p["PartNumber"] - 1]
            assert p["ETag"] == md5_quoted(data)
            assert p["Size"] == len(data)
            assert p["LastModified"] is not None

    s3.abort_multipart_upload(Bucket=bucket, Key="listed", UploadId=upload_id)
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="listed", UploadId=upload_id)
    assert error_of(e) == ("NoSuchUpload", 404)


def test_list_multipart_uploads_paginator(s3, bucket):
    keys = ["b/two", "a/one", "b/two", "c", "a/one"]
    created = []
    for key in keys:
        created.append((key, s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]))
        time.sleep(0.02)  # distinct initiation times
    # By key; uploads of one key in initiation order.
    want = [u for _, u in sorted(enumerate(created), key=lambda iu: (iu[1][0], iu[0]))]

    pages = list(
        s3.get_paginator("list_multipart_uploads").paginate(
            Bucket=bucket, PaginationConfig={"PageSize": 2}
        )
    )
    got = [(u["Key"], u["UploadId"]) for page in pages for u in page.get("Uploads", [])]
    assert got == want
    assert [len(page.get("Uploads", [])) for page in pages] == [2, 2, 1]
    for page in pages:
        for u in page.get("Uploads", []):
            assert u["Initiated"] is not None

    rolled = s3.list_multipart_uploads(Bucket=bucket, Delimiter="/")
    assert [u["Key"] for u in rolled.get("Uploads", [])] == ["c"]
    assert [p["Prefix"] for p in rolled.get("CommonPrefixes", [])] == ["a/", "b/"]
    under_b = s3.list_multipart_uploads(Bucket=bucket, Prefix="b/")
    assert [(u["Key"], u["UploadId"]) for u in under_b["Uploads"]] == [
        u for u in want if u[0] == "b/two"
    ]

    # Completed and aborted uploads leave the listing.
    key, done_id = created[3]
    part = s3.upload_part(Bucket=bucket, Key=key, UploadId=done_id, PartNumber=1, Body=b"c")
    s3.complete_multipart_upload(
        Bucket=bucket,
        Key=key,
        UploadId=done_id,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
    )
    s3.abort_multipart_upload(Bucket=bucket, Key=created[0][0], UploadId=created[0][1])
    left = [
        (u["Key"], u["UploadId"])
        for page in s3.get_paginator("list_multipart_uploads").paginate(Bucket=bucket)
        for u in page.get("Uploads", [])
    ]
    assert left == [u for u in want if u not in (created[3], created[0])]
    for key, upload_id in left:
        s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)


# Copy, part numbers, conditions, checksums.


def test_upload_part_copy_with_copy_source_range(s3, bucket):
    src = random_bytes(12 * MiB + 5, 100)
    s3.put_object(Bucket=bucket, Key="src/big.bin", Body=src)
    small = random_bytes(300 * KiB, 101)
    small_key = "src/small ß é+&.bin"
    s3.put_object(Bucket=bucket, Key=small_key, Body=small)

    upload_id = s3.create_multipart_upload(Bucket=bucket, Key="assembled")["UploadId"]
    ranges = [(0, 5 * MiB - 1), (5 * MiB, len(src) - 1)]
    done = []
    for number, (a, b) in enumerate(ranges, start=1):
        resp = s3.upload_part_copy(
            Bucket=bucket,
            Key="assembled",
            UploadId=upload_id,
            PartNumber=number,
            CopySource={"Bucket": bucket, "Key": "src/big.bin"},
            CopySourceRange=f"bytes={a}-{b}",
        )
        assert resp["CopyPartResult"]["ETag"] == md5_quoted(src[a : b + 1])
        assert resp["CopyPartResult"]["LastModified"] is not None
        done.append({"PartNumber": number, "ETag": resp["CopyPartResult"]["ETag"]})
    resp = s3.upload_part_copy(
        Bucket=bucket,
        Key="assembled",
        UploadId=upload_id,
        PartNumber=3,
        CopySource={"Bucket": bucket, "Key": small_key},
    )
    assert resp["CopyPartResult"]["ETag"] == md5_quoted(small)
    done.append({"PartNumber": 3, "ETag": resp["CopyPartResult"]["ETag"]})

    complete = s3.complete_multipart_upload(
        Bucket=bucket, Key="assembled", UploadId=upload_id, MultipartUpload={"Parts": done}
    )
    want = src + small
    assert complete["ETag"] == multipart_etag([src[: 5 * MiB], src[5 * MiB :], small])
    got = s3.get_object(Bucket=bucket, Key="assembled")
    assert got["ContentLength"] == len(want)
    assert sha256(got["Body"].read()) == sha256(want)


def test_get_object_part_number(s3, bucket):
    parts = [random_bytes(5 * MiB, 110), random_bytes(5 * MiB + 1, 111), random_bytes(MiB + 3, 112)]
    upload_id, done = upload_parts(s3, bucket, "parts", parts)
    s3.complete_multipart_upload(
        Bucket=bucket, Key="parts", UploadId=upload_id, MultipartUpload={"Parts": done}
    )
    total = sum(map(len, parts))
    offset = 0
    for number, part in enumerate(parts, start=1):
        got = s3.get_object(Bucket=bucket, Key="parts", PartNumber=number)
        assert status_of(got) == 206
        assert got["ContentLength"] == len(part)
        assert got["ContentRange"] == f"bytes {offset}-{offset + len(part) - 1}/{total}"
        assert got["PartsCount"] == 3
        assert got["ETag"] == multipart_etag(parts)
        assert sha256(got["Body"].read()) == sha256(part)
        head = s3.head_object(Bucket=bucket, Key="parts", PartNumber=number)
        assert head["ContentLength"] == len(part)
        assert head["PartsCount"] == 3
        offset += len(part)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="parts", PartNumber=4)
    assert error_of(e) == ("InvalidPartNumber", 416)


def test_complete_if_none_match_second_is_412(s3, bucket):
    """Write-once checkpoints: two trainers complete the same key, the second gets 412."""
    first = random_bytes(MiB, 120)
    second = random_bytes(MiB, 121)
    id1, done1 = upload_parts(s3, bucket, "ckpt/final", [first])
    id2, done2 = upload_parts(s3, bucket, "ckpt/final", [second])
    s3.complete_multipart_upload(
        Bucket=bucket,
        Key="ckpt/final",
        UploadId=id1,
        MultipartUpload={"Parts": done1},
        IfNoneMatch="*",
    )
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=bucket,
            Key="ckpt/final",
            UploadId=id2,
            MultipartUpload={"Parts": done2},
            IfNoneMatch="*",
        )
    assert error_of(e) == ("PreconditionFailed", 412)
    got = s3.get_object(Bucket=bucket, Key="ckpt/final")
    assert got["ETag"] == multipart_etag([first])
    assert sha256(got["Body"].read()) == sha256(first)


def crc_b64(algorithm: str, data: bytes) -> str:
    if algorithm == "CRC32":
        return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    if algorithm == "CRC32C":
        return base64.b64encode(crt_checksums.crc32c(data).to_bytes(4, "big")).decode()
    if algorithm == "CRC64NVME":
        return base64.b64encode(crt_checksums.crc64nvme(data).to_bytes(8, "big")).decode()
    raise ValueError(algorithm)


@pytest.mark.parametrize("algorithm", ["CRC32", "CRC32C", "CRC64NVME"])
def test_full_object_checksum(s3, bucket, algorithm):
    """FULL_OBJECT: Complete, HEAD and GET report the CRC of the whole body, which botocore
    checks against the bytes it reads."""
    parts = [random_bytes(5 * MiB, 130), random_bytes(2 * MiB + 9, 131)]
    key = f"full-{algorithm}"
    mpu = s3.create_multipart_upload(
        Bucket=bucket, Key=key, ChecksumAlgorithm=algorithm, ChecksumType="FULL_OBJECT"
    )
    assert mpu.get("ChecksumAlgorithm") == algorithm
    assert mpu.get("ChecksumType") == "FULL_OBJECT"
    done = []
    for number, part in enumerate(parts, start=1):
        resp = s3.upload_part(
            Bucket=bucket,
            Key=key,
            UploadId=mpu["UploadId"],
            PartNumber=number,
            Body=part,
            ChecksumAlgorithm=algorithm,
        )
        assert resp[f"Checksum{algorithm}"] == crc_b64(algorithm, part)
        done.append(
            {
                "PartNumber": number,
                "ETag": resp["ETag"],
                f"Checksum{algorithm}": resp[f"Checksum{algorithm}"],
            }
        )
    whole = b"".join(parts)
    # The whole object's CRC sent with Complete is checked against the object, not the XML.
    complete = s3.complete_multipart_upload(
        Bucket=bucket,
        Key=key,
        UploadId=mpu["UploadId"],
        MultipartUpload={"Parts": done},
        **{f"Checksum{algorithm}": crc_b64(algorithm, whole)},
    )
    assert complete[f"Checksum{algorithm}"] == crc_b64(algorithm, whole)
    assert complete["ChecksumType"] == "FULL_OBJECT"

    head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert head[f"Checksum{algorithm}"] == crc_b64(algorithm, whole)
    assert head["ChecksumType"] == "FULL_OBJECT"
    got = s3.get_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert got[f"Checksum{algorithm}"] == crc_b64(algorithm, whole)
    assert sha256(got["Body"].read()) == sha256(whole)  # botocore validates the CRC too


def test_complete_sent_again_gets_the_same_answer(s3, bucket):
    # What an SDK does when the first CompleteMultipartUpload timed out.
    upload = s3.create_multipart_upload(Bucket=bucket, Key="retried")["UploadId"]
    parts = []
    for number, size in ((1, 5 * MiB), (2, 1234)):
        etag = s3.upload_part(
            Bucket=bucket, Key="retried", UploadId=upload, PartNumber=number, Body=b"x" * size
        )["ETag"]
        parts.append({"PartNumber": number, "ETag": etag})
    done = {"Parts": parts}
    first = s3.complete_multipart_upload(
        Bucket=bucket, Key="retried", UploadId=upload, MultipartUpload=done
    )
    again = s3.complete_multipart_upload(
        Bucket=bucket, Key="retried", UploadId=upload, MultipartUpload=done
    )
    assert again["ETag"] == first["ETag"]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=bucket, Key="retried", UploadId=upload, MultipartUpload={"Parts": parts[:1]}
        )
    assert e.value.response["Error"]["Code"] == "NoSuchUpload"


def send_part_slowly(s3, bucket, key, upload, data, pause):
    """UploadPart through a presigned URL, pausing `pause` seconds after the first KiB: a
    slow client whose request began first."""
    url = s3.generate_presigned_url(
        "upload_part",
        Params={"Bucket": bucket, "Key": key, "UploadId": upload, "PartNumber": 1},
    )
    target = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
    connection.putrequest("PUT", f"{target.path}?{target.query}")
    connection.putheader("Content-Length", str(len(data)))
    connection.endheaders()
    connection.send(data[:1024])
    time.sleep(pause)
    connection.send(data[1024:])
    answer = connection.getresponse()
    answer.read()
    assert answer.status == 200, answer.status
    return answer.getheader("ETag"), time.monotonic()


def test_a_part_uploaded_twice_is_the_one_that_finished_last(s3, bucket):
    """S3 keeps the last upload of a part number: when the first upload of part 1 finishes
    after a second one, the first's bytes are the part, and the second's ETag no longer
    names a part of the upload."""
    key = "resent"
    upload = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    first_data, second_data = b"A" * (5 * MiB), b"B" * (5 * MiB)
    finished = {}
    slow = threading.Thread(
        target=lambda: finished.update(
            first=send_part_slowly(s3, bucket, key, upload, first_data, 3)
        )
    )
    slow.start()
    time.sleep(0.5)
    finished["second"] = send_part_slowly(s3, bucket, key, upload, second_data, 0)
    slow.join()
    (first_etag, first_done), (second_etag, second_done) = finished["first"], finished["second"]
    assert first_done > second_done, "the first upload finished last"

    listed = s3.list_parts(Bucket=bucket, Key=key, UploadId=upload)["Parts"]
    assert [p["ETag"] for p in listed] == [first_etag]
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(
            Bucket=bucket, Key=key, UploadId=upload,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": second_etag}]},
        )
    assert e.value.response["Error"]["Code"] == "InvalidPart"
    s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=upload,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": first_etag}]},
    )
    assert sha256(s3.get_object(Bucket=bucket, Key=key)["Body"].read()) == sha256(first_data)
