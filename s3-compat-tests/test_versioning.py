"""Object versioning through boto3 (client and resource API), the minio SDK and the aws CLI:
Put/GetBucketVersioning, versions read, copied, tagged and deleted by id, delete markers and
their 404/405 answers, ListObjectVersions with pages, prefix and delimiter, DeleteObjects with
version ids, the `null` version of keys written before enabling or while suspended, and a
bucket that holds only old versions or markers refusing to be deleted."""

from __future__ import annotations

import io
import json
import os

import boto3
import pytest
from botocore.exceptions import ClientError
from minio.commonconfig import ENABLED
from minio.error import S3Error
from minio.versioningconfig import SUSPENDED, VersioningConfig

from conftest import ACCESS_KEY, MiB, SECRET_KEY, REGION, sha256, unique_name
from test_awscli import ok

# Well formed (32 hex digits, as the server makes them) but naming no version.
UNKNOWN_VERSION = "0000000000000000000000000000beef"


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------


def set_versioning(s3, bucket: str, status: str) -> None:
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": status})


def all_versions(s3, bucket: str, prefix: str = "") -> list[dict]:
    """Every version and delete marker under `prefix` (paginated), each as a dict with
    Key, VersionId, IsLatest and `marker` (True for a delete marker)."""
    out = []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        for v in page.get("Versions", []):
            out.append({**v, "marker": False})
        for m in page.get("DeleteMarkers", []):
            out.append({**m, "marker": True})
    return out


def purge(s3, bucket: str) -> None:
    """Removes every version and marker, then the bucket (best effort: temp drives anyway)."""
    try:
        entries = all_versions(s3, bucket)
        for i in range(0, len(entries), 1000):
            s3.delete_objects(
                Bucket=bucket,
                Delete={
                    "Objects": [
                        {"Key": e["Key"], "VersionId": e["VersionId"]}
                        for e in entries[i : i + 1000]
                    ],
                    "Quiet": True,
                },
            )
        s3.delete_bucket(Bucket=bucket)
    except Exception:
        pass


def put(s3, bucket: str, key: str, data: bytes) -> str | None:
    """PUT; the `x-amz-version-id` answered (None when there is none)."""
    return s3.put_object(Bucket=bucket, Key=key, Body=data).get("VersionId")


def get(s3, bucket: str, key: str, version_id: str | None = None) -> tuple[str, str | None]:
    """GET of one version (the newest without `version_id`): sha256 of its bytes and the
    `x-amz-version-id` answered."""
    args = {"VersionId": version_id} if version_id else {}
    resp = s3.get_object(Bucket=bucket, Key=key, **args)
    return sha256(resp["Body"].read()), resp.get("VersionId")


def failure(excinfo) -> tuple[int, str, dict]:
    """(HTTP status, S3 error code, response headers) of a botocore ClientError."""
    resp = excinfo.value.response
    meta = resp["ResponseMetadata"]
    return meta["HTTPStatusCode"], resp["Error"]["Code"], meta["HTTPHeaders"]


@pytest.fixture
def plain_bucket(s3):
    """A fresh bucket (versioning never configured); every version is removed afterwards."""
    name = unique_name("vers")
    s3.create_bucket(Bucket=name)
    yield name
    purge(s3, name)


@pytest.fixture
def versioned(s3, plain_bucket):
    """A fresh bucket with versioning enabled."""
    set_versioning(s3, plain_bucket, "Enabled")
    return plain_bucket


# ---------------------------------------------------------------------------------------
# boto3
# ---------------------------------------------------------------------------------------


def test_versioning_is_unset_then_enabled_then_suspended(s3, plain_bucket):
    fresh = s3.get_bucket_versioning(Bucket=plain_bucket)
    assert "Status" not in fresh and "MFADelete" not in fresh
    set_versioning(s3, plain_bucket, "Enabled")
    assert s3.get_bucket_versioning(Bucket=plain_bucket)["Status"] == "Enabled"
    set_versioning(s3, plain_bucket, "Suspended")
    assert s3.get_bucket_versioning(Bucket=plain_bucket)["Status"] == "Suspended"
    set_versioning(s3, plain_bucket, "Enabled")
    assert s3.get_bucket_versioning(Bucket=plain_bucket)["Status"] == "Enabled"

    with pytest.raises(ClientError) as err:
        s3.get_bucket_versioning(Bucket=unique_name("missing"))
    assert failure(err)[:2] == (404, "NoSuchBucket")


def test_every_put_is_a_version_readable_by_its_id(s3, versioned):
    datas = [os.urandom(n) for n in (1000, 300 * 1024, 2 * MiB + 7)]
    ids = [put(s3, versioned, "model.bin", d) for d in datas]
    assert all(ids) and len(set(ids)) == 3, ids

    # Without an id: the newest, which says which version it is.
    assert get(s3, versioned, "model.bin") == (sha256(datas[2]), ids[2])
    for vid, data in zip(ids, datas):
        assert get(s3, versioned, "model.bin", vid) == (sha256(data), vid)
        head = s3.head_object(Bucket=versioned, Key="model.bin", VersionId=vid)
        assert head["VersionId"] == vid
        assert head["ContentLength"] == len(data)
    # A range of an old version.
    part = s3.get_object(Bucket=versioned, Key="model.bin", VersionId=ids[1], Range="bytes=10-19")
    assert part["Body"].read() == datas[1][10:20]
    assert part["ResponseMetadata"]["HTTPStatusCode"] == 206

    versions = all_versions(s3, versioned)
    assert [(v["VersionId"], v["IsLatest"], v["Size"]) for v in versions] == [
        (ids[2], True, len(datas[2])),
        (ids[1], False, len(datas[1])),
        (ids[0], False, len(datas[0])),
    ]
    assert all(v["StorageClass"] == "STANDARD" for v in versions)


def test_unknown_and_malformed_version_ids(s3, versioned):
    put(s3, versioned, "k", b"data")
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket=versioned, Key="k", VersionId=UNKNOWN_VERSION)
    assert failure(err)[:2] == (404, "NoSuchVersion")
    with pytest.raises(ClientError) as err:
        s3.head_object(Bucket=versioned, Key="k", VersionId=UNKNOWN_VERSION)
    assert failure(err)[0] == 404
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket=versioned, Key="k", VersionId="not-a-version")
    assert failure(err)[:2] == (400, "InvalidArgument")


def test_a_delete_leaves_a_marker_that_hides_the_key(s3, versioned):
    data = os.urandom(50_000)
    v1 = put(s3, versioned, "doc.txt", data)

    deleted = s3.delete_object(Bucket=versioned, Key="doc.txt")
    assert deleted["DeleteMarker"] is True
    marker = deleted["VersionId"]
    assert marker and marker != v1

    # GET and HEAD of the key: 404 that says a marker is the newest version.
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket=versioned, Key="doc.txt")
    status, code, headers = failure(err)
    assert (status, code) == (404, "NoSuchKey")
    assert headers["x-amz-delete-marker"] == "true"
    assert headers["x-amz-version-id"] == marker
    with pytest.raises(ClientError) as err:
        s3.head_object(Bucket=versioned, Key="doc.txt")
    status, _, headers = failure(err)
    assert status == 404
    assert headers["x-amz-delete-marker"] == "true"
    assert headers["x-amz-version-id"] == marker

    # GET and HEAD of the marker itself: 405, as S3 answers for a delete marker.
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket=versioned, Key="doc.txt", VersionId=marker)
    status, code, headers = failure(err)
    assert (status, code) == (405, "MethodNotAllowed")
    assert headers["x-amz-delete-marker"] == "true"
    with pytest.raises(ClientError) as err:
        s3.head_object(Bucket=versioned, Key="doc.txt", VersionId=marker)
    assert failure(err)[0] == 405

    # The key is gone from object listings; the old version is still there by id.
    assert s3.list_objects_v2(Bucket=versioned).get("KeyCount") == 0
    assert get(s3, versioned, "doc.txt", v1) == (sha256(data), v1)
    listed = all_versions(s3, versioned)
    assert [(e["VersionId"], e["IsLatest"], e["marker"]) for e in listed] == [
        (v1, False, False),
        (marker, True, True),
    ]

    # Deleting the marker by its id brings the key back.
    undone = s3.delete_object(Bucket=versioned, Key="doc.txt", VersionId=marker)
    assert undone["DeleteMarker"] is True
    assert undone["VersionId"] == marker
    assert get(s3, versioned, "doc.txt") == (sha256(data), v1)

    # Deleting a version by id removes it for good, with no new marker.
    gone = s3.delete_object(Bucket=versioned, Key="doc.txt", VersionId=v1)
    assert gone["VersionId"] == v1
    assert not gone.get("DeleteMarker")
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket=versioned, Key="doc.txt", VersionId=v1)
    assert failure(err)[:2] == (404, "NoSuchVersion")
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket=versioned, Key="doc.txt")
    status, code, headers = failure(err)
    assert (status, code) == (404, "NoSuchKey")
    assert "x-amz-delete-marker" not in headers
    assert all_versions(s3, versioned) == []


def test_list_object_versions_pages_visit_every_version_once(s3, versioned):
    keys = [f"pages/key-{i}" for i in range(5)]
    expected: dict[str, list[tuple[str, bool]]] = {}  # key → [(version id, marker)], newest first
    for key in keys:
        for n in range(3):
            vid = put(s3, versioned, key, f"{key} #{n}".encode())
            expected.setdefault(key, []).insert(0, (vid, False))
    for key in keys[1:3]:
        marker = s3.delete_object(Bucket=versioned, Key=key)["VersionId"]
        expected[key].insert(0, (marker, True))
    total = sum(len(v) for v in expected.values())
    assert total == 17

    pages = list(
        s3.get_paginator("list_object_versions").paginate(
            Bucket=versioned, Prefix="pages/", PaginationConfig={"PageSize": 4}
        )
    )
    assert len(pages) == 5  # 4+4+4+4+1
    seen: list[tuple[str, str, bool, bool]] = []
    for i, page in enumerate(pages):
        entries = [(v, False) for v in page.get("Versions", [])] + [
            (m, True) for m in page.get("DeleteMarkers", [])
        ]
        assert page["MaxKeys"] == 4
        assert len(entries) <= 4
        last = i == len(pages) - 1
        assert page["IsTruncated"] is (not last)
        if not last:
            assert len(entries) == 4
            assert page["NextKeyMarker"] and page["NextVersionIdMarker"]
        seen += [(e["Key"], e["VersionId"], e["IsLatest"], is_marker) for e, is_marker in entries]
    assert len(seen) == total, "an entry came twice or was skipped"
    assert len({(k, v) for k, v, _, _ in seen}) == total

    # Per key: newest first, only the newest is IsLatest (a marker for keys 1 and 2).
    for key in keys:
        ids_in_order = [(v, m) for k, v, _, m in seen if k == key]
        # Within one page boto3 separates Versions from DeleteMarkers, so compare as sets and
        # check the order of the versions alone.
        assert set(ids_in_order) == set(expected[key])
        assert [v for v, m in ids_in_order if not m] == [v for v, m in expected[key] if not m]
        latest = [(v, m) for k, v, is_latest, m in seen if k == key and is_latest]
        assert latest == [expected[key][0]]

    # The markers a page answers resume the listing exactly where it stopped.
    first = s3.list_object_versions(Bucket=versioned, Prefix="pages/", MaxKeys=7)
    rest = s3.list_object_versions(
        Bucket=versioned,
        Prefix="pages/",
        KeyMarker=first["NextKeyMarker"],
        VersionIdMarker=first["NextVersionIdMarker"],
    )
    assert first["IsTruncated"] and not rest["IsTruncated"]

    def ids(page) -> set[str]:
        return {e["VersionId"] for e in page.get("Versions", []) + page.get("DeleteMarkers", [])}

    assert len(ids(first)) == 7 and len(ids(rest)) == total - 7
    assert ids(first) | ids(rest) == {v for _, v, _, _ in seen}


def test_odd_keys_survive_version_pages(s3, versioned):
    """boto3 asks for url-encoded keys and markers and decodes them; the markers it sends back
    must resume the listing exactly."""
    keys = ["odd key+é", "odd key+é/x", "a&b<c>", "tab\tkey", "pct%20x"]
    ids = {(k, put(s3, versioned, k, b"1")) for k in keys} | {
        (k, put(s3, versioned, k, b"2")) for k in keys
    }
    pages = s3.get_paginator("list_object_versions").paginate(
        Bucket=versioned, PaginationConfig={"PageSize": 1}
    )
    got = [(v["Key"], v["VersionId"]) for page in pages for v in page.get("Versions", [])]
    assert sorted(got) == sorted(ids)
    assert [k for k, _ in got] == sorted(keys * 2)


def test_list_object_versions_groups_common_prefixes(s3, versioned):
    for key in ["photos/2024/a.jpg", "photos/2024/b.jpg", "photos/2025/c.jpg", "other.txt"]:
        put(s3, versioned, key, b"x")
    x1 = put(s3, versioned, "photos/x.jpg", b"x1")
    x2 = put(s3, versioned, "photos/x.jpg", b"x2")

    out = s3.list_object_versions(Bucket=versioned, Prefix="photos/", Delimiter="/")
    assert [p["Prefix"] for p in out["CommonPrefixes"]] == ["photos/2024/", "photos/2025/"]
    assert [(v["Key"], v["VersionId"]) for v in out["Versions"]] == [
        ("photos/x.jpg", x2),
        ("photos/x.jpg", x1),
    ]
    assert out["Prefix"] == "photos/" and out["Delimiter"] == "/"
    assert "DeleteMarkers" not in out

    # Paged one entry at a time, a common prefix counts as one entry.
    pages = list(
        s3.get_paginator("list_object_versions").paginate(
            Bucket=versioned, Delimiter="/", PaginationConfig={"PageSize": 1}
        )
    )
    prefixes = [p["Prefix"] for page in pages for p in page.get("CommonPrefixes", [])]
    keys = [v["Key"] for page in pages for v in page.get("Versions", [])]
    assert prefixes == ["photos/"]
    assert keys == ["other.txt"]


def test_a_truncated_version_page_is_never_empty(s3, versioned):
    for key in ["a", "b", "c"]:
        put(s3, versioned, key, b"x")
    pages = list(
        s3.get_paginator("list_object_versions").paginate(
            Bucket=versioned, PaginationConfig={"PageSize": 1}
        )
    )
    assert [[v["Key"] for v in p.get("Versions", [])] for p in pages] == [["a"], ["b"], ["c"]]


def test_delete_objects_takes_version_ids(s3, versioned):
    k1 = put(s3, versioned, "k", b"k1")
    k2 = put(s3, versioned, "k", b"k2")
    k3 = put(s3, versioned, "k", b"k3")
    o1 = put(s3, versioned, "other", b"o1")

    out = s3.delete_objects(
        Bucket=versioned,
        Delete={
            "Objects": [
                {"Key": "k", "VersionId": k1},  # removed for good
                {"Key": "other"},  # a marker on top of o1
                {"Key": "k", "VersionId": "not-a-version"},  # refused, the rest goes on
            ]
        },
    )
    deleted = {(d["Key"], d.get("VersionId")): d for d in out["Deleted"]}
    assert set(deleted) == {("k", k1), ("other", None)}
    assert not deleted[("k", k1)].get("DeleteMarker")
    other = deleted[("other", None)]
    assert other["DeleteMarker"] is True
    other_marker = other["DeleteMarkerVersionId"]
    assert other_marker not in (None, o1)
    assert [(e["Key"], e["VersionId"], e["Code"]) for e in out["Errors"]] == [
        ("k", "not-a-version", "InvalidArgument")
    ]

    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket=versioned, Key="k", VersionId=k1)
    assert failure(err)[:2] == (404, "NoSuchVersion")
    assert [v["VersionId"] for v in all_versions(s3, versioned, "k")] == [k3, k2]

    # Removing the marker by id in a batch: the answer names it as a marker.
    out = s3.delete_objects(
        Bucket=versioned,
        Delete={"Objects": [{"Key": "other", "VersionId": other_marker}, {"Key": "k", "VersionId": k3}]},
    )
    assert "Errors" not in out or not out["Errors"]
    by_key = {d["Key"]: d for d in out["Deleted"]}
    assert by_key["other"]["VersionId"] == other_marker
    assert by_key["other"]["DeleteMarker"] is True
    assert by_key["other"]["DeleteMarkerVersionId"] == other_marker
    assert get(s3, versioned, "other") == (sha256(b"o1"), o1)
    assert get(s3, versioned, "k") == (sha256(b"k2"), k2)


def test_copy_object_reads_the_version_it_names(s3, versioned):
    old = os.urandom(MiB + 5)
    v1 = put(s3, versioned, "src.bin", old)
    v2 = put(s3, versioned, "src.bin", b"newer")

    copied = s3.copy_object(
        Bucket=versioned,
        Key="copy.bin",
        CopySource={"Bucket": versioned, "Key": "src.bin", "VersionId": v1},
    )
    assert copied["CopySourceVersionId"] == v1
    assert copied["VersionId"] not in (None, v1, v2)
    assert get(s3, versioned, "copy.bin") == (sha256(old), copied["VersionId"])

    # Restoring an old version: copy it onto its own key, which makes a new newest version.
    restored = s3.copy_object(
        Bucket=versioned,
        Key="src.bin",
        CopySource={"Bucket": versioned, "Key": "src.bin", "VersionId": v1},
    )
    v3 = restored["VersionId"]
    assert v3 not in (v1, v2)
    assert get(s3, versioned, "src.bin") == (sha256(old), v3)
    assert get(s3, versioned, "src.bin", v2) == (sha256(b"newer"), v2)
    assert [v["VersionId"] for v in all_versions(s3, versioned, "src.bin")] == [v3, v2, v1]

    # A delete marker cannot be copied, a key hidden by one is missing, and so is an unknown
    # version.
    marker = s3.delete_object(Bucket=versioned, Key="src.bin")["VersionId"]
    with pytest.raises(ClientError) as err:
        s3.copy_object(
            Bucket=versioned,
            Key="x",
            CopySource={"Bucket": versioned, "Key": "src.bin", "VersionId": marker},
        )
    assert failure(err)[:2] == (400, "InvalidRequest")
    with pytest.raises(ClientError) as err:
        s3.copy_object(Bucket=versioned, Key="x", CopySource={"Bucket": versioned, "Key": "src.bin"})
    assert failure(err)[:2] == (404, "NoSuchKey")
    with pytest.raises(ClientError) as err:
        s3.copy_object(
            Bucket=versioned,
            Key="x",
            CopySource={"Bucket": versioned, "Key": "src.bin", "VersionId": UNKNOWN_VERSION},
        )
    assert failure(err)[:2] == (404, "NoSuchVersion")


def test_resource_api_object_versions(s3, versioned):
    resource = boto3.session.Session().resource(
        "s3",
        endpoint_url=s3.meta.endpoint_url,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name=REGION,
        config=s3.meta.config,
    )
    bucket = resource.Bucket(versioned)
    datas = {"r/a": [os.urandom(10), os.urandom(20)], "r/b": [os.urandom(30)]}
    ids = {}
    for key, versions in datas.items():
        for data in versions:
            ids[(key, bucket.put_object(Key=key, Body=data).version_id)] = data
    s3.delete_object(Bucket=versioned, Key="r/b")

    everything = list(bucket.object_versions.all())
    assert len(everything) == 4  # three versions and one marker
    versions = [v for v in everything if (v.object_key, v.id) in ids]
    assert len(versions) == 3
    for v in versions:
        data = ids[(v.object_key, v.id)]
        assert v.size == len(data)
        assert sha256(v.get()["Body"].read()) == sha256(data)
        assert v.head()["VersionId"] == v.id
    latest = {(v.object_key, v.is_latest) for v in everything if v.is_latest}
    assert latest == {("r/a", True), ("r/b", True)}

    # ObjectVersion.delete() removes exactly that version.
    oldest_a = next(v for v in versions if v.object_key == "r/a" and not v.is_latest)
    oldest_a.delete()
    left = [(v.object_key, v.id) for v in bucket.object_versions.filter(Prefix="r/a")]
    assert len(left) == 1 and left[0] != ("r/a", oldest_a.id)
    assert sha256(bucket.Object("r/a").get()["Body"].read()) == sha256(datas["r/a"][1])

    # Deleting every version (markers included) through the collection empties the bucket.
    for v in bucket.object_versions.all():
        v.delete()
    assert list(bucket.object_versions.all()) == []
    bucket.delete()
    with pytest.raises(ClientError) as err:
        s3.head_bucket(Bucket=versioned)
    assert failure(err)[0] == 404


def test_the_null_version_before_enabling_and_while_suspended(s3, plain_bucket):
    b = plain_bucket
    assert put(s3, b, "k", b"before") is None  # unversioned: no version id
    set_versioning(s3, b, "Enabled")
    # A key written before enabling is the `null` version.
    assert get(s3, b, "k") == (sha256(b"before"), "null")
    v1 = put(s3, b, "k", b"enabled")
    assert v1 not in (None, "null")
    assert get(s3, b, "k", "null") == (sha256(b"before"), "null")
    assert [(e["VersionId"], e["IsLatest"]) for e in all_versions(s3, b)] == [
        (v1, True),
        ("null", False),
    ]

    # Suspended: a PUT writes the null version (replacing the old one) and answers no id.
    set_versioning(s3, b, "Suspended")
    resp = s3.put_object(Bucket=b, Key="k", Body=b"suspended")
    assert "VersionId" not in resp
    assert "x-amz-version-id" not in resp["ResponseMetadata"]["HTTPHeaders"]
    assert get(s3, b, "k") == (sha256(b"suspended"), "null")
    assert get(s3, b, "k", v1) == (sha256(b"enabled"), v1)
    assert [(e["VersionId"], e["IsLatest"]) for e in all_versions(s3, b)] == [
        ("null", True),
        (v1, False),
    ]

    # A DELETE while suspended puts a marker in the null version's place.
    deleted = s3.delete_object(Bucket=b, Key="k")
    assert (deleted["DeleteMarker"], deleted["VersionId"]) == (True, "null")
    listed = all_versions(s3, b)
    assert sorted((e["VersionId"], e["IsLatest"], e["marker"]) for e in listed) == sorted(
        [("null", True, True), (v1, False, False)]
    )
    with pytest.raises(ClientError) as err:
        s3.get_object(Bucket=b, Key="k")
    status, code, headers = failure(err)
    assert (status, code, headers["x-amz-delete-marker"]) == (404, "NoSuchKey", "true")
    assert get(s3, b, "k", v1) == (sha256(b"enabled"), v1)
    # Removing the null marker leaves v1 the newest.
    s3.delete_object(Bucket=b, Key="k", VersionId="null")
    assert get(s3, b, "k") == (sha256(b"enabled"), v1)


def test_tags_belong_to_one_version(s3, versioned):
    v1 = put(s3, versioned, "t", b"one")
    v2 = put(s3, versioned, "t", b"two")
    out = s3.put_object_tagging(
        Bucket=versioned, Key="t", VersionId=v1, Tagging={"TagSet": [{"Key": "state", "Value": "old"}]}
    )
    assert out["VersionId"] == v1
    got = s3.get_object_tagging(Bucket=versioned, Key="t", VersionId=v1)
    assert (got["VersionId"], got["TagSet"]) == (v1, [{"Key": "state", "Value": "old"}])
    newest = s3.get_object_tagging(Bucket=versioned, Key="t")
    assert (newest["VersionId"], newest["TagSet"]) == (v2, [])
    s3.delete_object_tagging(Bucket=versioned, Key="t", VersionId=v1)
    assert s3.get_object_tagging(Bucket=versioned, Key="t", VersionId=v1)["TagSet"] == []


def test_a_bucket_holding_versions_or_markers_is_not_empty(s3, versioned):
    v1 = put(s3, versioned, "a", b"a1")
    v2 = put(s3, versioned, "a", b"a2")
    marker = s3.delete_object(Bucket=versioned, Key="a")["VersionId"]
    assert s3.list_objects_v2(Bucket=versioned)["KeyCount"] == 0

    def refused():
        with pytest.raises(ClientError) as err:
            s3.delete_bucket(Bucket=versioned)
        assert failure(err)[:2] == (409, "BucketNotEmpty")

    refused()  # two old versions and a marker
    s3.delete_object(Bucket=versioned, Key="a", VersionId=v1)
    s3.delete_object(Bucket=versioned, Key="a", VersionId=v2)
    refused()  # only the marker
    s3.delete_object(Bucket=versioned, Key="a", VersionId=marker)
    assert all_versions(s3, versioned) == []
    s3.delete_bucket(Bucket=versioned)
    with pytest.raises(ClientError) as err:
        s3.head_bucket(Bucket=versioned)
    assert failure(err)[0] == 404


# ---------------------------------------------------------------------------------------
# minio
# ---------------------------------------------------------------------------------------


def test_minio_versions(mc, s3, plain_bucket):
    b = plain_bucket
    assert mc.get_bucket_versioning(b).status is None  # never configured
    mc.set_bucket_versioning(b, VersioningConfig(ENABLED))
    assert mc.get_bucket_versioning(b).status == "Enabled"

    old, new = os.urandom(200_000), os.urandom(70_000)
    v1 = mc.put_object(b, "m/obj", io.BytesIO(old), len(old)).version_id
    v2 = mc.put_object(b, "m/obj", io.BytesIO(new), len(new)).version_id
    assert v1 and v2 and v1 != v2

    listed = list(mc.list_objects(b, prefix="m/", include_version=True))
    assert [(o.object_name, o.version_id, o.is_latest, o.is_delete_marker) for o in listed] == [
        ("m/obj", v2, "true", False),
        ("m/obj", v1, "false", False),
    ]

    for vid, data in ((v1, old), (v2, new)):
        resp = mc.get_object(b, "m/obj", version_id=vid)
        try:
            assert sha256(resp.read()) == sha256(data)
            assert resp.headers["x-amz-version-id"] == vid
        finally:
            resp.close()
            resp.release_conn()
        stat = mc.stat_object(b, "m/obj", version_id=vid)
        assert (stat.version_id, stat.size) == (vid, len(data))

    # remove_object without a version leaves a marker.
    mc.remove_object(b, "m/obj")
    listed = list(mc.list_objects(b, prefix="m/", include_version=True))
    markers = [o for o in listed if o.is_delete_marker]
    assert len(markers) == 1 and markers[0].is_latest == "true"
    assert list(mc.list_objects(b, prefix="m/")) == []
    with pytest.raises(S3Error) as err:
        mc.stat_object(b, "m/obj")
    assert err.value.code == "NoSuchKey"
    assert err.value.response.headers["x-amz-delete-marker"] == "true"
    with pytest.raises(S3Error) as err:
        mc.get_object(b, "m/obj")
    assert err.value.code == "NoSuchKey"

    # Removing the marker and then v2 by id: v1 is the newest again.
    mc.remove_object(b, "m/obj", version_id=markers[0].version_id)
    mc.remove_object(b, "m/obj", version_id=v2)
    assert mc.stat_object(b, "m/obj").version_id == v1
    listed = list(mc.list_objects(b, prefix="m/", include_version=True))
    assert [(o.version_id, o.is_latest) for o in listed] == [(v1, "true")]
    with pytest.raises(S3Error) as err:
        mc.stat_object(b, "m/obj", version_id=v2)
    assert err.value.code == "NoSuchKey"  # the SDK names any 404 on HEAD so

    mc.set_bucket_versioning(b, VersioningConfig(SUSPENDED))
    assert mc.get_bucket_versioning(b).status == "Suspended"


# ---------------------------------------------------------------------------------------
# aws CLI
# ---------------------------------------------------------------------------------------


def test_aws_cli_versions(aws, s3, plain_bucket, tmp_path):
    b = plain_bucket

    def api(*args):
        out = ok(aws("s3api", *args, "--output", "json")).stdout
        return json.loads(out) if out.strip() else {}

    ok(aws("s3api", "put-bucket-versioning", "--bucket", b,
           "--versioning-configuration", "Status=Enabled"))
    assert api("get-bucket-versioning", "--bucket", b) == {"Status": "Enabled"}

    old, new = tmp_path / "old.bin", tmp_path / "new.bin"
    old.write_bytes(os.urandom(3 * MiB + 1))
    new.write_bytes(os.urandom(1000))
    v1 = api("put-object", "--bucket", b, "--key", "cli/f", "--body", str(old))["VersionId"]
    v2 = api("put-object", "--bucket", b, "--key", "cli/f", "--body", str(new))["VersionId"]
    assert v1 != v2

    listed = api("list-object-versions", "--bucket", b, "--prefix", "cli/")
    assert [(v["VersionId"], v["IsLatest"], v["Size"]) for v in listed["Versions"]] == [
        (v2, True, 1000),
        (v1, False, 3 * MiB + 1),
    ]
    assert "DeleteMarkers" not in listed
    # The CLI follows the pages itself and joins them.
    paged = api("list-object-versions", "--bucket", b, "--page-size", "1")
    assert [v["VersionId"] for v in paged["Versions"]] == [v2, v1]

    out = tmp_path / "back.bin"
    got = api("get-object", "--bucket", b, "--key", "cli/f", "--version-id", v1, str(out))
    assert got["VersionId"] == v1
    assert sha256(out.read_bytes()) == sha256(old.read_bytes())

    # `aws s3 rm` on a versioned bucket only hides the key behind a marker.
    assert f"delete: s3://{b}/cli/f" in ok(aws("s3", "rm", f"s3://{b}/cli/f")).stdout
    assert aws("s3", "ls", f"s3://{b}/cli/").stdout.strip() == ""  # exits 1: nothing listed
    listed = api("list-object-versions", "--bucket", b, "--prefix", "cli/")
    assert len(listed["Versions"]) == 2
    [marker] = listed["DeleteMarkers"]
    assert marker["IsLatest"] is True and marker["Key"] == "cli/f"
    missing = aws("s3api", "get-object", "--bucket", b, "--key", "cli/f", str(out))
    assert missing.returncode != 0 and "NoSuchKey" in missing.stderr
    refused = aws("s3api", "get-object", "--bucket", b, "--key", "cli/f",
                  "--version-id", marker["VersionId"], str(out))
    assert refused.returncode != 0 and "MethodNotAllowed" in refused.stderr

    removed = api("delete-object", "--bucket", b, "--key", "cli/f",
                  "--version-id", marker["VersionId"])
    assert removed == {"DeleteMarker": True, "VersionId": marker["VersionId"]}
    shown = ok(aws("s3", "ls", f"s3://{b}/cli/")).stdout
    assert shown.split()[-2:] == ["1000", "f"]

    removed = api("delete-object", "--bucket", b, "--key", "cli/f", "--version-id", v2)
    assert removed == {"VersionId": v2}
    listed = api("list-object-versions", "--bucket", b, "--prefix", "cli/")
    assert [(v["VersionId"], v["IsLatest"]) for v in listed["Versions"]] == [(v1, True)]
    api("get-object", "--bucket", b, "--key", "cli/f", str(out))
    assert sha256(out.read_bytes()) == sha256(old.read_bytes())

    ok(aws("s3api", "put-bucket-versioning", "--bucket", b,
           "--versioning-configuration", "Status=Suspended"))
    assert api("get-bucket-versioning", "--bucket", b) == {"Status": "Suspended"}
