"""RenameObject through boto3 (`rename_object`, `PUT /{key}?renameObject` with
`x-amz-rename-source: bucket/key`), on ordinary buckets: unversioned, versioned and suspended;
small and multipart objects; SSE-S3, SSE-KMS and SSE-C; every precondition; a retry by client
token; authorisation. A rename copies no data: the bucket's shard files on the drives are
the same files, under the same paths."""

from __future__ import annotations

import collections
import datetime
import os
import urllib.parse
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import KMS_KEY_NAME, unique_name
from test_encryption import CUSTOMER_KEY, sse_c
from test_iam import admin
from test_versioning import all_versions, purge, set_versioning

MiB = 1024 * 1024


def error_of(e: ClientError) -> tuple[str, int]:
    return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]


def source(bucket: str, key: str) -> str:
    return urllib.parse.quote(f"{bucket}/{key}")


def rename(s3, bucket: str, key: str, src: str, **kwargs):
    return s3.rename_object(Bucket=bucket, Key=key, RenameSource=source(bucket, src), **kwargs)


def body(s3, bucket: str, key: str, **kwargs) -> bytes:
    return s3.get_object(Bucket=bucket, Key=key, **kwargs)["Body"].read()


def missing(s3, bucket: str, key: str) -> bool:
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return False
    except ClientError as e:
        assert error_of(e)[1] == 404, e
        return True


def shard_files(drives: list[str], bucket_id: str) -> dict[Path, tuple[int, int]]:
    """Every shard file of one bucket on the drives: its path, and the file it is (device,
    inode). Only this bucket's: other tests' writes on the shared server do not show."""
    found = {}
    for drive in drives:
        for root, _, files in os.walk(Path(drive) / "data" / bucket_id):
            for name in files:
                if name.startswith("part."):
                    path = Path(root) / name
                    st = os.stat(path)
                    found[path] = (st.st_dev, st.st_ino)
    return found


def data_folders(drives: list[str]) -> set[Path]:
    """Every object data folder on the drives (`data/<bucket>/<xx>/<data id>`)."""
    return {folder for drive in drives for folder in (Path(drive) / "data").glob("*/*/*")}


def multipart(s3, bucket: str, key: str, parts: list[bytes], **kwargs) -> str:
    upload = s3.create_multipart_upload(Bucket=bucket, Key=key, **kwargs)["UploadId"]
    done = []
    for n, data in enumerate(parts, start=1):
        extra = {k: v for k, v in kwargs.items() if k.startswith("SSECustomer")}
        etag = s3.upload_part(
            Bucket=bucket, Key=key, UploadId=upload, PartNumber=n, Body=data, **extra
        )["ETag"]
        done.append({"PartNumber": n, "ETag": etag})
    return s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=upload, MultipartUpload={"Parts": done}
    )["ETag"]


@pytest.fixture
def versioned(s3):
    name = unique_name("rnv")
    s3.create_bucket(Bucket=name)
    set_versioning(s3, name, "Enabled")
    yield name
    purge(s3, name)


def test_rename_in_an_unversioned_bucket_moves_the_object_and_copies_no_data(
    s3, bucket, server
):
    small = os.urandom(1000)
    large = [os.urandom(5 * MiB), os.urandom(2 * MiB)]
    s3.put_object(Bucket=bucket, Key="small.tmp", Body=small, ContentType="text/x-ckpt",
                  Metadata={"step": "7"}, Tagging="run=1")
    folders_before = data_folders(server.drives)
    etag = multipart(s3, bucket, "ckpt.tmp", large)
    # The checkpoint's folders: one per drive, in this bucket's (the one new nine times).
    made = data_folders(server.drives) - folders_before
    counts = collections.Counter(folder.parent.parent.name for folder in made)
    bucket_id = max(counts, key=counts.get)
    ckpt_folders = {folder for folder in made if folder.parent.parent.name == bucket_id}
    assert len(ckpt_folders) == len(server.drives)
    before = shard_files(server.drives, bucket_id)
    assert before, "the multipart object has shard files"

    assert rename(s3, bucket, "small", "small.tmp")["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert rename(s3, bucket, "ckpt", "ckpt.tmp")["ResponseMetadata"]["HTTPStatusCode"] == 200

    # The new names hold the objects as they were; the old names are gone.
    head = s3.head_object(Bucket=bucket, Key="small")
    assert head["ContentType"] == "text/x-ckpt" and head["Metadata"] == {"step": "7"}
    assert body(s3, bucket, "small") == small
    tags = s3.get_object_tagging(Bucket=bucket, Key="small")["TagSet"]
    assert tags == [{"Key": "run", "Value": "1"}]
    assert s3.head_object(Bucket=bucket, Key="ckpt")["ETag"] == etag
    assert body(s3, bucket, "ckpt") == b"".join(large)
    got = body(s3, bucket, "ckpt", Range=f"bytes={5 * MiB - 10}-{5 * MiB + 9}")
    assert got == b"".join(large)[5 * MiB - 10 : 5 * MiB + 10]
    assert s3.head_object(Bucket=bucket, Key="ckpt", PartNumber=2)["ContentLength"] == 2 * MiB
    assert missing(s3, bucket, "small.tmp") and missing(s3, bucket, "ckpt.tmp")
    listed = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert listed == ["ckpt", "small"]

    # No shard file was written, moved or linked: the new name's files are the old ones,
    # where they were.
    assert shard_files(server.drives, bucket_id) == before

    # A rename over an existing object replaces it, and its data goes.
    s3.put_object(Bucket=bucket, Key="next.tmp", Body=b"step 8")
    rename(s3, bucket, "small", "next.tmp")
    assert body(s3, bucket, "small") == b"step 8"
    assert missing(s3, bucket, "next.tmp")
    nine = [os.urandom(5 * MiB), os.urandom(MiB)]
    multipart(s3, bucket, "ckpt.next", nine)
    assert ckpt_folders <= data_folders(server.drives)
    rename(s3, bucket, "ckpt", "ckpt.next")
    assert body(s3, bucket, "ckpt") == b"".join(nine)
    assert not (ckpt_folders & data_folders(server.drives)), "the replaced checkpoint's data went"

    # Renaming what is not there is NoSuchKey, and changes nothing.
    with pytest.raises(ClientError) as e:
        rename(s3, bucket, "ckpt", "no-such-key")
    assert error_of(e.value) == ("NoSuchKey", 404)
    assert body(s3, bucket, "ckpt") == b"".join(nine)


def test_rename_in_a_versioned_bucket_keeps_both_histories(s3, versioned):
    old_dest = s3.put_object(Bucket=versioned, Key="ckpt", Body=b"step 1")["VersionId"]
    src = s3.put_object(Bucket=versioned, Key="ckpt.tmp", Body=b"step 2")["VersionId"]
    rename(s3, versioned, "ckpt", "ckpt.tmp")

    assert body(s3, versioned, "ckpt") == b"step 2"
    assert missing(s3, versioned, "ckpt.tmp")
    versions = {(v["Key"], v["marker"], v["IsLatest"]): v for v in all_versions(s3, versioned)}
    # The destination: a new current version over the one it had.
    current = versions[("ckpt", False, True)]
    assert current["VersionId"] not in (old_dest, src)
    assert versions[("ckpt", False, False)]["VersionId"] == old_dest
    assert body(s3, versioned, "ckpt", VersionId=old_dest) == b"step 1"
    # The source: a delete marker over the version renamed, still readable by its id.
    assert ("ckpt.tmp", True, True) in versions
    assert versions[("ckpt.tmp", False, False)]["VersionId"] == src
    assert body(s3, versioned, "ckpt.tmp", VersionId=src) == b"step 2"
    assert len(versions) == 4

    # Removing the source's old version for good leaves the destination whole.
    s3.delete_object(Bucket=versioned, Key="ckpt.tmp", VersionId=src)
    assert body(s3, versioned, "ckpt") == b"step 2"

    # A delete marker is no object to rename.
    with pytest.raises(ClientError) as e:
        rename(s3, versioned, "other", "ckpt.tmp")
    assert error_of(e.value) == ("NoSuchKey", 404)


def test_rename_with_versioning_suspended_replaces_the_null_versions(s3, versioned):
    set_versioning(s3, versioned, "Suspended")
    s3.put_object(Bucket=versioned, Key="a", Body=b"a data")
    s3.put_object(Bucket=versioned, Key="b", Body=b"old b")
    rename(s3, versioned, "b", "a")
    assert body(s3, versioned, "b") == b"a data"
    assert missing(s3, versioned, "a")
    versions = all_versions(s3, versioned)
    assert {(v["Key"], v["VersionId"], v["marker"]) for v in versions} == {
        ("b", "null", False),
        ("a", "null", True),
    }


@pytest.mark.parametrize("kind", ["sse-s3", "sse-kms", "sse-c"])
def test_rename_of_encrypted_objects_rewraps_their_keys(s3, bucket, kind):
    args = {
        "sse-s3": {"ServerSideEncryption": "AES256"},
        "sse-kms": {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": KMS_KEY_NAME},
        "sse-c": sse_c(CUSTOMER_KEY),
    }[kind]
    read = sse_c(CUSTOMER_KEY) if kind == "sse-c" else {}
    small, large = os.urandom(3000), [os.urandom(5 * MiB), os.urandom(MiB)]
    s3.put_object(Bucket=bucket, Key="small.tmp", Body=small, **args)
    multipart(s3, bucket, "large.tmp", large, **args)

    if kind == "sse-c":
        # The object key opens only with the client's key, which RenameObject's model lacks:
        # it is sent as on a GET.
        with pytest.raises(ClientError) as e:
            rename(s3, bucket, "small", "small.tmp")
        assert error_of(e.value) == ("InvalidRequest", 400)
        assert body(s3, bucket, "small.tmp", **read) == small

        def add_key(request, **_):
            for name, value in sse_c_headers(CUSTOMER_KEY).items():
                request.headers[name] = value

        s3.meta.events.register("before-sign.s3.RenameObject", add_key)
    try:
        rename(s3, bucket, "small", "small.tmp")
        rename(s3, bucket, "large", "large.tmp")
    finally:
        if kind == "sse-c":
            s3.meta.events.unregister("before-sign.s3.RenameObject", add_key)
    assert body(s3, bucket, "small", **read) == small
    assert body(s3, bucket, "large", **read) == b"".join(large)
    assert body(s3, bucket, "large", Range="bytes=100-199", **read) == b"".join(large)[100:200]
    head = s3.head_object(Bucket=bucket, Key="large", **read)
    if kind == "sse-s3":
        assert head["ServerSideEncryption"] == "AES256"
    elif kind == "sse-kms":
        assert head["ServerSideEncryption"] == "aws:kms"
    else:
        assert head["SSECustomerAlgorithm"] == "AES256"
    assert missing(s3, bucket, "small.tmp") and missing(s3, bucket, "large.tmp")


def sse_c_headers(key: bytes) -> dict:
    import base64
    import hashlib

    return {
        "x-amz-server-side-encryption-customer-algorithm": "AES256",
        "x-amz-server-side-encryption-customer-key": base64.b64encode(key).decode(),
        "x-amz-server-side-encryption-customer-key-MD5": base64.b64encode(
            hashlib.md5(key).digest()
        ).decode(),
    }


def test_every_precondition_of_a_rename(s3, bucket):
    src_etag = s3.put_object(Bucket=bucket, Key="src", Body=b"new")["ETag"]
    dest_etag = s3.put_object(Bucket=bucket, Key="dest", Body=b"old")["ETag"]
    past = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)

    failing = [
        {"DestinationIfNoneMatch": "*"},
        {"DestinationIfMatch": '"0123456789abcdef0123456789abcdef"'},
        {"DestinationIfModifiedSince": future},
        {"DestinationIfUnmodifiedSince": past},
        {"SourceIfMatch": '"0123456789abcdef0123456789abcdef"'},
        {"SourceIfNoneMatch": src_etag},
        {"SourceIfModifiedSince": future},
        {"SourceIfUnmodifiedSince": past},
    ]
    for condition in failing:
        with pytest.raises(ClientError) as e:
            rename(s3, bucket, "dest", "src", **condition)
        assert error_of(e.value) == ("PreconditionFailed", 412), condition
        assert body(s3, bucket, "src") == b"new" and body(s3, bucket, "dest") == b"old"

    rename(
        s3, bucket, "dest", "src",
        DestinationIfMatch=dest_etag, DestinationIfUnmodifiedSince=future,
        DestinationIfModifiedSince=past, SourceIfMatch=src_etag,
        SourceIfNoneMatch='"0123456789abcdef0123456789abcdef"',
        SourceIfModifiedSince=past, SourceIfUnmodifiedSince=future,
    )
    assert body(s3, bucket, "dest") == b"new" and missing(s3, bucket, "src")

    # If-None-Match: * lets a rename create, never overwrite; If-Match needs an object.
    s3.put_object(Bucket=bucket, Key="src", Body=b"again")
    with pytest.raises(ClientError) as e:
        rename(s3, bucket, "fresh", "src", DestinationIfMatch=dest_etag)
    assert error_of(e.value) == ("PreconditionFailed", 412)
    rename(s3, bucket, "fresh", "src", DestinationIfNoneMatch="*")
    assert body(s3, bucket, "fresh") == b"again"


def test_a_retried_rename_with_its_client_token_succeeds_once(s3, bucket):
    token = uuid.uuid4().hex
    s3.put_object(Bucket=bucket, Key="ckpt.tmp", Body=b"weights")
    rename(s3, bucket, "ckpt", "ckpt.tmp", ClientToken=token)
    # The retry finds the source gone, and the rename its token made: a success.
    rename(s3, bucket, "ckpt", "ckpt.tmp", ClientToken=token)
    assert body(s3, bucket, "ckpt") == b"weights"
    # Without the token, it is a rename of nothing.
    with pytest.raises(ClientError) as e:
        rename(s3, bucket, "ckpt", "ckpt.tmp")
    assert error_of(e.value) == ("NoSuchKey", 404)
    # The same token with another source is refused.
    s3.put_object(Bucket=bucket, Key="other.tmp", Body=b"other")
    with pytest.raises(ClientError) as e:
        rename(s3, bucket, "ckpt", "other.tmp", ClientToken=token)
    assert error_of(e.value) == ("IdempotencyParameterMismatch", 400)
    assert body(s3, bucket, "ckpt") == b"weights" and body(s3, bucket, "other.tmp") == b"other"

    with pytest.raises(ClientError) as e:
        rename(s3, bucket, "x", "other.tmp", ClientToken="x" * 65)
    assert error_of(e.value) == ("InvalidArgument", 400)


def test_the_rename_source_must_be_in_the_same_bucket(s3, bucket):
    s3.put_object(Bucket=bucket, Key="a", Body=b"a")
    with pytest.raises(ClientError) as e:
        s3.rename_object(Bucket=bucket, Key="b", RenameSource=source("another-bucket", "a"))
    assert error_of(e.value) == ("InvalidRequest", 400)
    assert body(s3, bucket, "a") == b"a"


def test_rename_needs_put_on_the_destination_and_delete_on_the_source(
    s3, bucket, server, tmp_path
):
    import json

    s3.put_object(Bucket=bucket, Key="in/ckpt.tmp", Body=b"w")
    tag = uuid.uuid4().hex[:8]
    users = {}
    for name, actions in {
        "putonly": ["s3:PutObject", "s3:GetObject"],
        "renamer": ["s3:PutObject", "s3:GetObject", "s3:DeleteObject"],
    }.items():
        document = tmp_path / f"{name}.json"
        document.write_text(json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": actions,
                           "Resource": [f"arn:aws:s3:::{bucket}/*"]}],
        }))
        secret = f"secret-{uuid.uuid4().hex}"
        admin(server, "policy", "add", f"{name}-{tag}", str(document))
        admin(server, "user", "add", f"{name}-{tag}", "--secret", secret,
              "--policy", f"{name}-{tag}")
        users[name] = server.boto3_client(access_key=f"{name}-{tag}", secret_key=secret)

    with pytest.raises(ClientError) as e:
        rename(users["putonly"], bucket, "in/ckpt", "in/ckpt.tmp")
    assert error_of(e.value) == ("AccessDenied", 403)
    assert body(s3, bucket, "in/ckpt.tmp") == b"w" and missing(s3, bucket, "in/ckpt")

    rename(users["renamer"], bucket, "in/ckpt", "in/ckpt.tmp")
    assert body(s3, bucket, "in/ckpt") == b"w" and missing(s3, bucket, "in/ckpt.tmp")
