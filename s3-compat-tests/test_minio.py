"""The minio Python SDK against strata: buckets, objects with metadata, multipart file
transfer, listing, removal and presigned URLs."""

from __future__ import annotations

import io
import os
import urllib.request
from datetime import timedelta

import pytest
from minio.error import S3Error

from conftest import MiB, empty_and_delete_bucket, sha256, sha256_file, unique_name, write_random_file


@pytest.fixture
def mbucket(mc, s3):
    name = unique_name("minio")
    mc.make_bucket(name)
    yield name
    empty_and_delete_bucket(s3, name)


def test_bucket_lifecycle(mc):
    name = unique_name("minio")
    assert mc.bucket_exists(name) is False
    mc.make_bucket(name)
    assert mc.bucket_exists(name) is True
    assert name in [b.name for b in mc.list_buckets()]
    mc.remove_bucket(name)
    assert mc.bucket_exists(name) is False
    assert name not in [b.name for b in mc.list_buckets()]


def test_remove_nonempty_bucket_is_refused(mc, mbucket):
    mc.put_object(mbucket, "x", io.BytesIO(b"x"), 1)
    with pytest.raises(S3Error) as e:
        mc.remove_bucket(mbucket)
    assert e.value.code == "BucketNotEmpty"
    assert e.value.response.status == 409


def test_put_get_stat_with_metadata(mc, mbucket):
    data = os.urandom(3 * MiB + 5)
    result = mc.put_object(
        mbucket,
        "dir/object.bin",
        io.BytesIO(data),
        len(data),
        content_type="application/x-strata-test",
        metadata={"color": "red", "x-amz-meta-shape": "round"},
    )
    stat = mc.stat_object(mbucket, "dir/object.bin")
    assert stat.size == len(data)
    assert stat.etag == result.etag
    assert stat.content_type == "application/x-strata-test"
    assert stat.metadata["x-amz-meta-color"] == "red"
    assert stat.metadata["x-amz-meta-shape"] == "round"

    resp = mc.get_object(mbucket, "dir/object.bin")
    try:
        body = resp.read()
    finally:
        resp.close()
        resp.release_conn()
    assert sha256(body) == sha256(data)

    resp = mc.get_object(mbucket, "dir/object.bin", offset=MiB - 3, length=1000)
    try:
        assert resp.status == 206
        assert resp.read() == data[MiB - 3 : MiB - 3 + 1000]
    finally:
        resp.close()
        resp.release_conn()


def test_fput_fget_multipart(mc, mbucket, tmp_path):
    """12 MiB with 5 MiB parts: three parts uploaded in parallel, then downloaded."""
    src, dst = tmp_path / "src.bin", tmp_path / "dst.bin"
    digest = write_random_file(src, 12 * MiB)
    result = mc.fput_object(mbucket, "big.bin", str(src), part_size=5 * MiB)
    assert result.etag.endswith("-3")
    stat = mc.stat_object(mbucket, "big.bin")
    assert stat.size == 12 * MiB
    assert stat.etag == result.etag
    mc.fget_object(mbucket, "big.bin", str(dst))
    assert sha256_file(dst) == digest


def test_list_objects(mc, mbucket):
    keys = ["a/1", "a/2", "a/b/3", "c", "d/e"]
    for k in keys:
        mc.put_object(mbucket, k, io.BytesIO(k.encode()), len(k))

    recursive = list(mc.list_objects(mbucket, recursive=True))
    assert [o.object_name for o in recursive] == keys
    assert [o.size for o in recursive] == [len(k) for k in keys]
    assert not any(o.is_dir for o in recursive)

    # The SDK yields a page's objects first, then its common prefixes.
    top = list(mc.list_objects(mbucket))
    assert sorted((o.object_name, o.is_dir) for o in top) == [
        ("a/", True),
        ("c", False),
        ("d/", True),
    ]

    under_a = list(mc.list_objects(mbucket, prefix="a/"))
    assert sorted((o.object_name, o.is_dir) for o in under_a) == [
        ("a/1", False),
        ("a/2", False),
        ("a/b/", True),
    ]


def test_remove_object(mc, mbucket):
    mc.put_object(mbucket, "gone", io.BytesIO(b"bye"), 3)
    mc.remove_object(mbucket, "gone")
    with pytest.raises(S3Error) as e:
        mc.stat_object(mbucket, "gone")
    assert e.value.response.status == 404
    with pytest.raises(S3Error) as e:
        mc.get_object(mbucket, "gone")
    assert e.value.code == "NoSuchKey"
    assert [o.object_name for o in mc.list_objects(mbucket, recursive=True)] == []


def test_presigned_get_object(mc, mbucket):
    data = os.urandom(600 * 1024)
    mc.put_object(mbucket, "shared/file.bin", io.BytesIO(data), len(data))
    url = mc.presigned_get_object(mbucket, "shared/file.bin", expires=timedelta(minutes=5))
    with urllib.request.urlopen(url, timeout=60) as resp:
        assert resp.status == 200
        assert sha256(resp.read()) == sha256(data)


def test_remove_objects_in_one_batch(mc, mbucket):
    from minio.deleteobjects import DeleteObject

    for i in range(5):
        mc.put_object(mbucket, f"batch/{i}", io.BytesIO(b"x"), 1)
    errors = list(mc.remove_objects(mbucket, [DeleteObject(f"batch/{i}") for i in range(3)]))
    assert errors == []
    left = sorted(o.object_name for o in mc.list_objects(mbucket, recursive=True))
    assert left == ["batch/3", "batch/4"]


def test_list_objects_with_user_metadata(mc, mbucket):
    """MinIO's listing extension (`include_user_meta`, minio-go's `WithMetadata`): each entry
    carries the object's metadata and tags, as a MinIO server lists them."""
    from minio.commonconfig import Tags

    tags = Tags.new_object_tags()
    tags["split"] = "train"
    mc.put_object(
        mbucket,
        "shard-0.jsonl",
        io.BytesIO(b"{}\n"),
        3,
        content_type="application/jsonl",
        metadata={"team": "vision"},
        tags=tags,
    )
    plain = list(mc.list_objects(mbucket))
    assert [o.object_name for o in plain] == ["shard-0.jsonl"]
    assert not plain[0].metadata

    (listed,) = list(mc.list_objects(mbucket, include_user_meta=True))
    assert listed.object_name == "shard-0.jsonl"
    assert listed.metadata["X-Amz-Meta-Team"] == "vision"
    assert listed.metadata["Content-Type"] == "application/jsonl"
    assert dict(listed.tags) == {"split": "train"}
