"""Subresources and object attributes as real clients use them: object and bucket tagging,
bucket CORS with a browser's unsigned preflight, and the REDUCED_REDUNDANCY storage class,
through boto3, the aws CLI and the minio SDK."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request

import pytest
from botocore.exceptions import ClientError
from minio.commonconfig import Tags

from test_awscli import ok

APP = "https://app.example.com"


def error_of(excinfo) -> tuple[str, int]:
    """(S3 error code, HTTP status) of a botocore ClientError."""
    resp = excinfo.value.response
    return resp["Error"]["Code"], resp["ResponseMetadata"]["HTTPStatusCode"]


def pairs(tag_set) -> list[tuple[str, str]]:
    return sorted((t["Key"], t["Value"]) for t in tag_set)


def tag_set(d: dict) -> dict:
    return {"TagSet": [{"Key": k, "Value": v} for k, v in d.items()]}


def preflight(endpoint, bucket, key, origin, method, request_headers=None):
    """An unsigned browser preflight; returns (status, headers, body)."""
    headers = {"Origin": origin, "Access-Control-Request-Method": method}
    if request_headers:
        headers["Access-Control-Request-Headers"] = request_headers
    req = urllib.request.Request(f"{endpoint}/{bucket}/{key}", method="OPTIONS", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def header_list(value) -> list[str]:
    return [v.strip().lower() for v in (value or "").split(",") if v.strip()]


# boto3


def test_boto3_object_tagging(s3, bucket):
    put = s3.put_object(
        Bucket=bucket, Key="k", Body=b"tagged data", Tagging="team=ml&stage=raw%20data"
    )
    assert pairs(s3.get_object_tagging(Bucket=bucket, Key="k")["TagSet"]) == [
        ("stage", "raw data"),
        ("team", "ml"),
    ]
    assert s3.get_object(Bucket=bucket, Key="k")["TagCount"] == 2
    before = s3.head_object(Bucket=bucket, Key="k")

    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tag_set({"owner": "infra"}))
    assert pairs(s3.get_object_tagging(Bucket=bucket, Key="k")["TagSet"]) == [("owner", "infra")]
    after = s3.head_object(Bucket=bucket, Key="k")
    assert after["ETag"] == before["ETag"] == put["ETag"]
    assert after["LastModified"] == before["LastModified"]
    got = s3.get_object(Bucket=bucket, Key="k")
    assert got["Body"].read() == b"tagged data"
    assert got["TagCount"] == 1

    s3.delete_object_tagging(Bucket=bucket, Key="k")
    assert s3.get_object_tagging(Bucket=bucket, Key="k")["TagSet"] == []
    assert "TagCount" not in s3.get_object(Bucket=bucket, Key="k")

    eleven = {f"k{i}": "v" for i in range(11)}
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tag_set(eleven))
    assert error_of(e) == ("InvalidTag", 400)
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="k", Tagging=tag_set({"x" * 129: "v"}))
    assert error_of(e) == ("InvalidTag", 400)
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=bucket, Key="missing")
    assert error_of(e) == ("NoSuchKey", 404)


def test_boto3_bucket_tagging(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=bucket)
    assert error_of(e) == ("NoSuchTagSet", 404)

    s3.put_bucket_tagging(Bucket=bucket, Tagging=tag_set({"env": "prod", "cost-center": "42"}))
    assert pairs(s3.get_bucket_tagging(Bucket=bucket)["TagSet"]) == [
        ("cost-center", "42"),
        ("env", "prod"),
    ]
    fifty = {f"k{i:02d}": f"v{i}" for i in range(50)}
    s3.put_bucket_tagging(Bucket=bucket, Tagging=tag_set(fifty))
    assert len(s3.get_bucket_tagging(Bucket=bucket)["TagSet"]) == 50
    with pytest.raises(ClientError) as e:
        s3.put_bucket_tagging(Bucket=bucket, Tagging=tag_set({**fifty, "one-more": "v"}))
    assert error_of(e) == ("InvalidTag", 400)
    assert len(s3.get_bucket_tagging(Bucket=bucket)["TagSet"]) == 50

    s3.delete_bucket_tagging(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=bucket)
    assert error_of(e) == ("NoSuchTagSet", 404)


def test_boto3_bucket_cors_and_browser_preflight(s3, bucket, endpoint):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert error_of(e) == ("NoSuchCORSConfiguration", 404)
    status, _, _ = preflight(endpoint, bucket, "k", APP, "GET")
    assert status == 403, "preflight to a bucket without CORS"

    rule = {
        "ID": "app",
        "AllowedOrigins": [APP],
        "AllowedMethods": ["GET", "PUT"],
        "AllowedHeaders": ["*"],
        "ExposeHeaders": ["ETag"],
        "MaxAgeSeconds": 600,
    }
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [rule]})
    assert s3.get_bucket_cors(Bucket=bucket)["CORSRules"] == [rule]

    status, headers, body = preflight(
        endpoint, bucket, "uploads/file.bin", APP, "PUT", "content-type, x-amz-meta-owner"
    )
    assert status == 200, body
    assert headers["Access-Control-Allow-Origin"] == APP
    assert "put" in header_list(headers["Access-Control-Allow-Methods"])
    assert {"content-type", "x-amz-meta-owner"} <= set(
        header_list(headers["Access-Control-Allow-Headers"])
    )
    assert headers["Access-Control-Max-Age"] == "600"
    assert header_list(headers["Access-Control-Expose-Headers"]) == ["etag"]

    for origin, method in [("https://evil.example.org", "GET"), (APP, "DELETE")]:
        status, headers, body = preflight(endpoint, bucket, "k", origin, method)
        assert status == 403, (origin, method)
        assert b"<Code>AccessForbidden</Code>" in body
        assert "Access-Control-Allow-Origin" not in headers

    bad = {**rule, "AllowedMethods": ["PATCH"]}
    with pytest.raises(ClientError) as e:
        s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [bad]})
    assert error_of(e) == ("InvalidRequest", 400)

    s3.delete_bucket_cors(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert error_of(e) == ("NoSuchCORSConfiguration", 404)
    status, _, _ = preflight(endpoint, bucket, "k", APP, "GET")
    assert status == 403, "preflight after DeleteBucketCors"


def test_boto3_reduced_redundancy_storage_class(s3, bucket):
    s3.put_object(Bucket=bucket, Key="rrs", Body=b"r" * 1000, StorageClass="REDUCED_REDUNDANCY")
    s3.put_object(Bucket=bucket, Key="std", Body=b"s")
    assert s3.head_object(Bucket=bucket, Key="rrs")["StorageClass"] == "REDUCED_REDUNDANCY"
    assert s3.get_object(Bucket=bucket, Key="rrs")["StorageClass"] == "REDUCED_REDUNDANCY"
    assert "StorageClass" not in s3.head_object(Bucket=bucket, Key="std")
    listed = {o["Key"]: o["StorageClass"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert listed == {"rrs": "REDUCED_REDUNDANCY", "std": "STANDARD"}
    for cls in ["GLACIER", "GLACIER_XYZ"]:
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=bucket, Key="bad", Body=b"x", StorageClass=cls)
        assert error_of(e) == ("InvalidStorageClass", 400), cls


# aws CLI


def test_awscli_tagging_and_cors(aws, s3, bucket, endpoint, tmp_path):
    s3.put_object(Bucket=bucket, Key="cli-object", Body=b"cli")
    ok(
        aws(
            "s3api", "put-object-tagging", "--bucket", bucket, "--key", "cli-object",
            "--tagging", json.dumps(tag_set({"project": "strata", "via": "cli"})),
        )
    )
    out = json.loads(
        ok(aws("s3api", "get-object-tagging", "--bucket", bucket, "--key", "cli-object")).stdout
    )
    assert pairs(out["TagSet"]) == [("project", "strata"), ("via", "cli")]

    missing = aws("s3api", "get-bucket-tagging", "--bucket", bucket)
    assert missing.returncode != 0
    assert "NoSuchTagSet" in missing.stderr
    ok(
        aws(
            "s3api", "put-bucket-tagging", "--bucket", bucket,
            "--tagging", "TagSet=[{Key=env,Value=ci}]",
        )
    )
    out = json.loads(ok(aws("s3api", "get-bucket-tagging", "--bucket", bucket)).stdout)
    assert pairs(out["TagSet"]) == [("env", "ci")]

    cors = {
        "CORSRules": [
            {
                "AllowedOrigins": ["*"],
                "AllowedMethods": ["GET", "HEAD"],
                "AllowedHeaders": ["Authorization"],
                "MaxAgeSeconds": 120,
            }
        ]
    }
    path = tmp_path / "cors.json"
    path.write_text(json.dumps(cors))
    ok(
        aws(
            "s3api", "put-bucket-cors", "--bucket", bucket,
            "--cors-configuration", f"file://{path}",
        )
    )
    out = json.loads(ok(aws("s3api", "get-bucket-cors", "--bucket", bucket)).stdout)
    assert out["CORSRules"] == cors["CORSRules"]
    status, headers, _ = preflight(endpoint, bucket, "cli-object", APP, "GET", "authorization")
    assert status == 200
    assert headers["Access-Control-Allow-Origin"] == "*"
    assert headers["Access-Control-Max-Age"] == "120"


# minio


def test_minio_object_and_bucket_tags(mc, s3, bucket):
    mc.put_object(bucket, "m", io.BytesIO(b"minio"), 5)
    assert mc.get_object_tags(bucket, "m") is None
    tags = Tags.new_object_tags()
    tags["team"] = "ml"
    tags["stage"] = "raw data"
    mc.set_object_tags(bucket, "m", tags)
    assert dict(mc.get_object_tags(bucket, "m")) == {"team": "ml", "stage": "raw data"}
    assert s3.get_object(Bucket=bucket, Key="m")["TagCount"] == 2
    mc.delete_object_tags(bucket, "m")
    assert mc.get_object_tags(bucket, "m") is None

    assert mc.get_bucket_tags(bucket) is None
    btags = Tags.new_bucket_tags()
    btags["env"] = "prod"
    mc.set_bucket_tags(bucket, btags)
    assert dict(mc.get_bucket_tags(bucket)) == {"env": "prod"}
    mc.delete_bucket_tags(bucket)
    assert mc.get_bucket_tags(bucket) is None
