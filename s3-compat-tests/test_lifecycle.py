"""Lifecycle rules as operators write them: the JSON that
`aws s3api put-bucket-lifecycle-configuration --lifecycle-configuration file://rules.json`
takes, read back with the CLI and boto3, and refused as S3 refuses bad rules."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from test_awscli import ok

RULES = {
    "Rules": [
        {
            "ID": "checkpoints",
            "Status": "Enabled",
            "Filter": {"Prefix": "ckpt/"},
            "Transitions": [
                {"Days": 30, "StorageClass": "STANDARD_IA"},
                {"Days": 90, "StorageClass": "GLACIER"},
            ],
            "Expiration": {"Days": 365},
        },
        {
            "ID": "logs",
            "Status": "Enabled",
            "Filter": {"And": {"Prefix": "logs/", "Tags": [{"Key": "keep", "Value": "no"}]}},
            "Expiration": {"Days": 90},
        },
        {
            "ID": "uploads",
            "Status": "Enabled",
            "Filter": {"Prefix": ""},
            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
        },
    ]
}


def test_aws_cli_rules_json_round_trips(aws, s3, bucket, tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(RULES))
    ok(
        aws(
            "s3api",
            "put-bucket-lifecycle-configuration",
            "--bucket",
            bucket,
            "--lifecycle-configuration",
            f"file://{rules}",
        )
    )
    shown = json.loads(
        ok(aws("s3api", "get-bucket-lifecycle-configuration", "--bucket", bucket)).stdout
    )
    by_id = {rule["ID"]: rule for rule in shown["Rules"]}
    assert set(by_id) == {"checkpoints", "logs", "uploads"}
    assert [t["Days"] for t in by_id["checkpoints"]["Transitions"]] == [30, 90]
    assert by_id["checkpoints"]["Expiration"] == {"Days": 365}
    assert by_id["logs"]["Filter"]["And"]["Tags"] == [{"Key": "keep", "Value": "no"}]
    assert by_id["uploads"]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 7}

    # boto3 reads the same rules.
    got = s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert len(got["Rules"]) == 3

    ok(aws("s3api", "delete-bucket-lifecycle", "--bucket", bucket))
    with pytest.raises(ClientError) as err:
        s3.get_bucket_lifecycle_configuration(Bucket=bucket)
    assert err.value.response["Error"]["Code"] == "NoSuchLifecycleConfiguration"


@pytest.mark.parametrize(
    "rules, reason",
    [
        ([{"ID": "a", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 1}}] * 2, "same ID"),
        ([{"ID": "a", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 0}}], "positive"),
        (
            [
                {
                    "ID": "a",
                    "Status": "Enabled",
                    "Filter": {"Prefix": ""},
                    "Transitions": [{"Days": 60, "StorageClass": "GLACIER"}],
                    "Expiration": {"Days": 30},
                }
            ],
            "greater than",
        ),
    ],
)
def test_bad_rules_are_invalid_argument(aws, bucket, tmp_path, rules, reason):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"Rules": rules}))
    out = aws(
        "s3api",
        "put-bucket-lifecycle-configuration",
        "--bucket",
        bucket,
        "--lifecycle-configuration",
        f"file://{path}",
    )
    assert out.returncode != 0
    assert "InvalidArgument" in out.stderr and reason in out.stderr, out.stderr
