"""Conditional deletes through boto3, as AWS documents them: DeleteObject with `If-Match`,
`x-amz-if-match-last-modified-time` and `x-amz-if-match-size` (412 on a mismatch; `If-Match`
on no object is 404, the other two on no object a 204 that deletes nothing), with a version
id, in versioned and unversioned buckets, and per-object `ETag`, `LastModifiedTime` and
`Size` in DeleteObjects."""

from __future__ import annotations

import datetime

import pytest
from botocore.exceptions import ClientError

from conftest import unique_name
from test_versioning import all_versions, purge, set_versioning


def error_of(e: ClientError) -> tuple[str, int]:
    return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]


def exists(s3, bucket: str, key: str) -> bool:
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return True
    except ClientError as e:
        assert error_of(e)[1] == 404, e
        return False


@pytest.fixture
def versioned(s3):
    name = unique_name("cdel")
    s3.create_bucket(Bucket=name)
    set_versioning(s3, name, "Enabled")
    yield name
    purge(s3, name)


def test_if_match_deletes_only_the_version_it_names(s3, bucket):
    old = s3.put_object(Bucket=bucket, Key="ckpt", Body=b"step 1")["ETag"]
    new = s3.put_object(Bucket=bucket, Key="ckpt", Body=b"step 2")["ETag"]
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=bucket, Key="ckpt", IfMatch=old)
    assert error_of(e.value) == ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bucket, Key="ckpt")["Body"].read() == b"step 2"

    answer = s3.delete_object(Bucket=bucket, Key="ckpt", IfMatch=new)
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert not exists(s3, bucket, "ckpt")

    # If-Match on no object is NoSuchKey, even with `*`.
    for etag in (new, "*"):
        with pytest.raises(ClientError) as e:
            s3.delete_object(Bucket=bucket, Key="ckpt", IfMatch=etag)
        assert error_of(e.value) == ("NoSuchKey", 404)

    s3.put_object(Bucket=bucket, Key="any", Body=b"x")
    s3.delete_object(Bucket=bucket, Key="any", IfMatch="*")
    assert not exists(s3, bucket, "any")


def test_last_modified_time_and_size_must_match(s3, bucket):
    s3.put_object(Bucket=bucket, Key="log", Body=b"12345")
    head = s3.head_object(Bucket=bucket, Key="log")
    modified = head["LastModified"]
    earlier = modified - datetime.timedelta(seconds=5)
    for wrong in ({"IfMatchSize": 4}, {"IfMatchLastModifiedTime": earlier},
                  {"IfMatch": head["ETag"], "IfMatchSize": 6}):
        with pytest.raises(ClientError) as e:
            s3.delete_object(Bucket=bucket, Key="log", **wrong)
        assert error_of(e.value) == ("PreconditionFailed", 412), wrong
        assert exists(s3, bucket, "log"), wrong

    s3.delete_object(
        Bucket=bucket,
        Key="log",
        IfMatch=head["ETag"],
        IfMatchLastModifiedTime=modified,
        IfMatchSize=5,
    )
    assert not exists(s3, bucket, "log")

    # On no object, these two are a success that deletes nothing.
    answer = s3.delete_object(Bucket=bucket, Key="log", IfMatchSize=5)
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_a_malformed_size_is_an_invalid_argument(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")

    def bad_size(request, **_):
        request.headers["x-amz-if-match-size"] = "lots"

    s3.meta.events.register_first("before-sign.s3.DeleteObject", bad_size)
    try:
        with pytest.raises(ClientError) as e:
            s3.delete_object(Bucket=bucket, Key="k")
    finally:
        s3.meta.events.unregister("before-sign.s3.DeleteObject", bad_size)
    assert error_of(e.value) == ("InvalidArgument", 400)
    assert exists(s3, bucket, "k")


def test_in_a_versioned_bucket_the_condition_is_on_the_current_version(s3, versioned):
    first = s3.put_object(Bucket=versioned, Key="ckpt", Body=b"one")
    second = s3.put_object(Bucket=versioned, Key="ckpt", Body=b"two")
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=versioned, Key="ckpt", IfMatch=first["ETag"])
    assert error_of(e.value) == ("PreconditionFailed", 412)
    assert [v["marker"] for v in all_versions(s3, versioned)] == [False, False]

    marked = s3.delete_object(Bucket=versioned, Key="ckpt", IfMatch=second["ETag"])
    assert marked["DeleteMarker"] is True
    versions = all_versions(s3, versioned)
    assert sorted(v["marker"] for v in versions) == [False, False, True]

    # The current version is a delete marker: If-Match finds no object.
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=versioned, Key="ckpt", IfMatch="*")
    assert error_of(e.value) == ("NoSuchKey", 404)

    # With a version id, the condition is on that version, which goes for good.
    with pytest.raises(ClientError) as e:
        s3.delete_object(
            Bucket=versioned, Key="ckpt", VersionId=first["VersionId"], IfMatch=second["ETag"]
        )
    assert error_of(e.value) == ("PreconditionFailed", 412)
    s3.delete_object(
        Bucket=versioned, Key="ckpt", VersionId=first["VersionId"], IfMatch=first["ETag"]
    )
    ids = [v["VersionId"] for v in all_versions(s3, versioned)]
    assert first["VersionId"] not in ids and second["VersionId"] in ids


def test_delete_objects_checks_each_entry_on_its_own(s3, bucket):
    etags = {
        key: s3.put_object(Bucket=bucket, Key=key, Body=key.encode())["ETag"]
        for key in ("a", "b", "c", "d")
    }
    sizes = {key: len(key) for key in etags}
    answer = s3.delete_objects(
        Bucket=bucket,
        Delete={
            "Objects": [
                {"Key": "a", "ETag": etags["a"]},
                {"Key": "b", "ETag": etags["a"]},
                {"Key": "c", "Size": sizes["c"] + 1},
                {"Key": "d", "Size": sizes["d"]},
            ]
        },
    )
    assert sorted(d["Key"] for d in answer.get("Deleted", [])) == ["a", "d"]
    errors = {e["Key"]: e["Code"] for e in answer.get("Errors", [])}
    assert errors == {"b": "PreconditionFailed", "c": "PreconditionFailed"}
    assert [exists(s3, bucket, k) for k in "abcd"] == [False, True, True, False]

    modified = s3.head_object(Bucket=bucket, Key="b")["LastModified"]
    answer = s3.delete_objects(
        Bucket=bucket,
        Delete={
            "Objects": [
                {"Key": "b", "LastModifiedTime": modified},
                {"Key": "c", "LastModifiedTime": modified - datetime.timedelta(days=1)},
            ]
        },
    )
    assert [d["Key"] for d in answer.get("Deleted", [])] == ["b"]
    assert [e["Code"] for e in answer.get("Errors", [])] == ["PreconditionFailed"]
    assert [exists(s3, bucket, k) for k in "bc"] == [False, True]
