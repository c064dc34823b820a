"""ACLs, Object Ownership and Block Public Access as boto3 (at its defaults) and the aws CLI
use them: canned ACLs and grants on buckets and objects, the AccessControlPolicy document
boto3 renders, what grants let a second user and anonymous callers do, and the Block Public
Access switches with GetBucketPolicyStatus."""

from __future__ import annotations

import hashlib
import json
import uuid

import botocore
import pytest
from botocore.exceptions import ClientError

from conftest import unique_name
from test_iam import admin, error_of, http

ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"


def canonical_id(name: str) -> str:
    """A user's canonical ID, as grants name it."""
    return hashlib.sha256(name.encode()).hexdigest()


@pytest.fixture
def acl_bucket(s3):
    """A bucket whose ACLs count (Object Ownership ObjectWriter)."""
    name = unique_name("acl")
    s3.create_bucket(Bucket=name, ObjectOwnership="ObjectWriter")
    yield name
    s3.delete_public_access_block(Bucket=name)
    s3.delete_bucket_policy(Bucket=name)
    for obj in s3.list_objects_v2(Bucket=name).get("Contents", []):
        s3.delete_object(Bucket=name, Key=obj["Key"])
    s3.delete_bucket(Bucket=name)


@pytest.fixture
def second_user(server):
    """A user with no policy of its own: (name, boto3 client)."""
    name = f"acl-user-{uuid.uuid4().hex[:8]}"
    secret = "acl-user-secret-0123456789"
    admin(server, "user", "add", name, "--secret", secret)
    yield name, server.boto3_client(access_key=name, secret_key=secret)
    admin(server, "user", "remove", name)


def test_boto3_acls_are_off_by_default(s3, bucket):
    assert (
        s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"][0][
            "ObjectOwnership"
        ]
        == "BucketOwnerEnforced"
    )
    acl = s3.get_bucket_acl(Bucket=bucket)
    assert acl["Owner"]["ID"] == s3.list_buckets()["Owner"]["ID"]
    assert [g["Permission"] for g in acl["Grants"]] == ["FULL_CONTROL"]
    with pytest.raises(ClientError) as e:
        s3.put_bucket_acl(Bucket=bucket, ACL="public-read")
    assert error_of(e) == ("AccessControlListNotSupported", 400)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k", Body=b"x", ACL="public-read")
    assert error_of(e) == ("AccessControlListNotSupported", 400)
    s3.put_object(Bucket=bucket, Key="k", Body=b"x", ACL="bucket-owner-full-control")


def test_boto3_grants_open_a_bucket_to_a_user_and_to_everyone(
    s3, server, acl_bucket, second_user
):
    name, user = second_user
    s3.put_object(Bucket=acl_bucket, Key="data/a", Body=b"shared bytes")
    anonymous = server.boto3_client(signature_version=botocore.UNSIGNED)
    with pytest.raises(ClientError) as e:
        user.list_objects_v2(Bucket=acl_bucket)
    assert error_of(e) == ("AccessDenied", 403)

    # The document boto3 renders, granting the user READ on the bucket.
    owner = s3.get_bucket_acl(Bucket=acl_bucket)["Owner"]
    s3.put_bucket_acl(
        Bucket=acl_bucket,
        AccessControlPolicy={
            "Owner": owner,
            "Grants": [
                {
                    "Grantee": {"Type": "CanonicalUser", "ID": owner["ID"]},
                    "Permission": "FULL_CONTROL",
                },
                {
                    "Grantee": {"Type": "CanonicalUser", "ID": canonical_id(name)},
                    "Permission": "READ",
                },
            ],
        },
    )
    listed = user.list_objects_v2(Bucket=acl_bucket)["Contents"]
    assert [o["Key"] for o in listed] == ["data/a"]
    grants = s3.get_bucket_acl(Bucket=acl_bucket)["Grants"]
    assert {
        "Grantee": {"Type": "CanonicalUser", "ID": canonical_id(name), "DisplayName": name},
        "Permission": "READ",
    } in grants
    with pytest.raises(ClientError) as e:
        user.put_object(Bucket=acl_bucket, Key="data/b", Body=b"x")
    assert error_of(e) == ("AccessDenied", 403)

    # A canned ACL on the object: anyone reads it, unsigned clients and plain HTTP alike.
    s3.put_object_acl(Bucket=acl_bucket, Key="data/a", ACL="public-read")
    body = anonymous.get_object(Bucket=acl_bucket, Key="data/a")["Body"].read()
    assert body == b"shared bytes"
    assert http("GET", f"{server.endpoint}/{acl_bucket}/data/a") == (200, b"shared bytes")
    grants = s3.get_object_acl(Bucket=acl_bucket, Key="data/a")["Grants"]
    assert {"Grantee": {"Type": "Group", "URI": ALL_USERS}, "Permission": "READ"} in grants
    with pytest.raises(ClientError) as e:
        anonymous.list_objects_v2(Bucket=acl_bucket)
    assert error_of(e) == ("AccessDenied", 403)

    # Grant headers, and S3's errors.
    s3.put_bucket_acl(Bucket=acl_bucket, GrantWrite=f'id="{canonical_id(name)}"')
    user.put_object(Bucket=acl_bucket, Key="data/b", Body=b"from the user")
    assert s3.get_object_acl(Bucket=acl_bucket, Key="data/b")["Owner"]["ID"] == canonical_id(
        name
    )
    with pytest.raises(ClientError) as e:
        s3.put_bucket_acl(Bucket=acl_bucket, GrantRead='emailAddress="someone@example.com"')
    assert error_of(e) == ("UnresolvableGrantByEmailAddress", 400)
    with pytest.raises(ClientError) as e:
        s3.put_bucket_acl(Bucket=acl_bucket, GrantRead='id="not-a-known-id"')
    assert error_of(e) == ("InvalidArgument", 400)


def test_boto3_block_public_access_and_policy_status(s3, server, acl_bucket):
    s3.put_object(Bucket=acl_bucket, Key="open", Body=b"public")
    url = f"{server.endpoint}/{acl_bucket}/open"
    with pytest.raises(ClientError) as e:
        s3.get_public_access_block(Bucket=acl_bucket)
    assert error_of(e) == ("NoSuchPublicAccessBlockConfiguration", 404)

    def block(**switches):
        config = {
            "BlockPublicAcls": False,
            "IgnorePublicAcls": False,
            "BlockPublicPolicy": False,
            "RestrictPublicBuckets": False,
        }
        config.update(switches)
        s3.put_public_access_block(Bucket=acl_bucket, PublicAccessBlockConfiguration=config)
        return config

    config = block(BlockPublicAcls=True)
    assert s3.get_public_access_block(Bucket=acl_bucket)["PublicAccessBlockConfiguration"] == config
    with pytest.raises(ClientError) as e:
        s3.put_object_acl(Bucket=acl_bucket, Key="open", ACL="public-read")
    assert error_of(e) == ("AccessDenied", 403)
    s3.delete_public_access_block(Bucket=acl_bucket)
    s3.put_object_acl(Bucket=acl_bucket, Key="open", ACL="public-read")
    assert http("GET", url)[0] == 200
    block(IgnorePublicAcls=True)
    assert http("GET", url)[0] == 403
    s3.delete_public_access_block(Bucket=acl_bucket)

    public = json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": "*",
                    "Action": "s3:GetObject",
                    "Resource": f"arn:aws:s3:::{acl_bucket}/*",
                }
            ],
        }
    )
    block(BlockPublicPolicy=True)
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=acl_bucket, Policy=public)
    assert error_of(e) == ("AccessDenied", 403)
    s3.delete_public_access_block(Bucket=acl_bucket)
    s3.put_bucket_policy(Bucket=acl_bucket, Policy=public)
    assert s3.get_bucket_policy_status(Bucket=acl_bucket)["PolicyStatus"]["IsPublic"] is True
    s3.put_object_acl(Bucket=acl_bucket, Key="open", ACL="private")
    assert http("GET", url)[0] == 200
    block(RestrictPublicBuckets=True)
    assert http("GET", url)[0] == 403


def test_awscli_acls_and_public_access(aws, s3, server, tmp_path):
    name = unique_name("acl-cli")
    aws("s3api", "create-bucket", "--bucket", name, "--object-ownership", "ObjectWriter", check=True)
    try:
        src = tmp_path / "f.txt"
        src.write_bytes(b"cli bytes")
        aws("s3", "cp", str(src), f"s3://{name}/f.txt", "--acl", "public-read", check=True)
        assert http("GET", f"{server.endpoint}/{name}/f.txt") == (200, b"cli bytes")
        acl = json.loads(aws("s3api", "get-object-acl", "--bucket", name, "--key", "f.txt", check=True).stdout)
        assert {"Grantee": {"Type": "Group", "URI": ALL_USERS}, "Permission": "READ"} in acl[
            "Grants"
        ]
        aws("s3api", "put-object-acl", "--bucket", name, "--key", "f.txt", "--acl", "private", check=True)
        assert http("GET", f"{server.endpoint}/{name}/f.txt")[0] == 403
        controls = json.loads(aws("s3api", "get-bucket-ownership-controls", "--bucket", name, check=True).stdout)
        assert controls["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "ObjectWriter"}]
        aws(
            "s3api",
            "put-public-access-block",
            "--bucket",
            name,
            "--public-access-block-configuration",
            "BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true",
            check=True,
        )
        got = json.loads(aws("s3api", "get-public-access-block", "--bucket", name, check=True).stdout)
        assert all(got["PublicAccessBlockConfiguration"].values())
        refused = aws(
            "s3api", "put-object-acl", "--bucket", name, "--key", "f.txt", "--acl", "public-read"
        )
        assert refused.returncode != 0 and "AccessDenied" in refused.stderr
    finally:
        s3.delete_object(Bucket=name, Key="f.txt")
        s3.delete_bucket(Bucket=name)


def test_boto3_presigned_post_sets_a_canned_acl(s3, server, acl_bucket):
    from test_post_object import post

    presigned = s3.generate_presigned_post(
        Bucket=acl_bucket,
        Key="form.txt",
        Fields={"acl": "public-read"},
        Conditions=[{"acl": "public-read"}],
        ExpiresIn=600,
    )
    assert post(presigned, b"posted").status_code == 204
    assert http("GET", f"{server.endpoint}/{acl_bucket}/form.txt") == (200, b"posted")
    grants = s3.get_object_acl(Bucket=acl_bucket, Key="form.txt")["Grants"]
    assert {"Grantee": {"Type": "Group", "URI": ALL_USERS}, "Permission": "READ"} in grants


def test_boto3_an_explicit_deny_beats_an_acl_grant(s3, server, acl_bucket):
    s3.put_object(Bucket=acl_bucket, Key="secret/x", Body=b"x", ACL="public-read")
    url = f"{server.endpoint}/{acl_bucket}/secret/x"
    assert http("HEAD", url)[0] == 200
    deny = json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3:GetObject",
                    "Resource": f"arn:aws:s3:::{acl_bucket}/secret/*",
                }
            ],
        }
    )
    s3.put_bucket_policy(Bucket=acl_bucket, Policy=deny)
    assert http("GET", url)[0] == 403
