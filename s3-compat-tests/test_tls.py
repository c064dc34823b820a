"""HTTPS with each client: a server of its own with `--certs-dir` (MinIO's `public.crt` and
`private.key`), certificates from a test CA made with the `openssl` command, and boto3
(`verify=ca.pem`), the aws CLI (`--ca-bundle`) and the minio SDK (`secure=True` over a
`urllib3.PoolManager(ca_certs=...)`) each round-tripping objects, single and multipart, checked
by sha256. A client without the CA is refused, and plain HTTP gets no S3 answer on that port."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import boto3
import botocore.config
import pytest
import requests
import urllib3
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import SSLError
from minio import Minio

from conftest import ACCESS_KEY, REGION, SECRET_KEY, AwsCli, MiB, sha256, unique_name, write_random_file

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def openssl(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, f"openssl {' '.join(args)}:\n{proc.stderr}"


def make_certs(root: Path) -> tuple[Path, Path]:
    """A CA, and a server certificate it signs for localhost and 127.0.0.1 laid out as MinIO's
    certs folder. Returns (certs folder, CA file)."""
    root.mkdir(parents=True, exist_ok=True)
    certs = root / "certs"
    certs.mkdir()
    (root / "ca.ext").write_text(
        "basicConstraints = critical, CA:TRUE\n"
        "keyUsage = critical, keyCertSign, cRLSign\n"
        "subjectKeyIdentifier = hash\n"
    )
    (root / "server.ext").write_text(
        "basicConstraints = critical, CA:FALSE\n"
        "keyUsage = critical, digitalSignature, keyEncipherment\n"
        "extendedKeyUsage = serverAuth\n"
        "subjectAltName = DNS:localhost, IP:127.0.0.1\n"
        "subjectKeyIdentifier = hash\n"
        "authorityKeyIdentifier = keyid\n"
    )
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ca.key", cwd=root)
    openssl("req", "-new", "-key", "ca.key", "-subj", "/CN=strata compat test CA", "-out", "ca.csr", cwd=root)
    openssl(
        "x509", "-req", "-in", "ca.csr", "-signkey", "ca.key", "-days", "2",
        "-extfile", "ca.ext", "-out", "ca.pem", cwd=root,
    )
    # An RSA key in PKCS#1 form for the server (the ECDSA CA covers the other key type).
    openssl("genrsa", "-traditional", "-out", "certs/private.key", "2048", cwd=root)
    openssl("req", "-new", "-key", "certs/private.key", "-subj", "/CN=localhost", "-out", "server.csr", cwd=root)
    openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "2", "-extfile", "server.ext", "-out", "certs/public.crt", cwd=root,
    )
    return certs, root / "ca.pem"


@pytest.fixture
def tls_server(start_server, tmp_path):
    certs, ca = make_certs(tmp_path / "pki")
    drives = [tmp_path / f"d{i}" for i in range(1, 10)]
    for d in drives:
        d.mkdir()
    srv = start_server(drives, extra_args=["--certs-dir", str(certs)])
    assert srv.endpoint.startswith("https://"), srv.endpoint
    return srv, ca


def boto3_client(endpoint: str, verify):
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name=REGION,
        verify=verify,
        config=botocore.config.Config(
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            retries={"max_attempts": 1, "mode": "standard"},
            connect_timeout=10,
            read_timeout=120,
        ),
    )


def test_boto3_over_https(tls_server):
    srv, ca = tls_server
    s3 = boto3_client(srv.endpoint, str(ca))
    bucket = unique_name("tls-boto3")
    s3.create_bucket(Bucket=bucket)
    small = os.urandom(300 * 1024)
    # Over HTTPS botocore sends its CRC32 as an aws-chunked trailer.
    s3.put_object(Bucket=bucket, Key="small", Body=small)
    assert sha256(s3.get_object(Bucket=bucket, Key="small")["Body"].read()) == sha256(small)

    big = os.urandom(12 * MiB + 5)
    s3.upload_fileobj(
        io.BytesIO(big),
        bucket,
        "multipart",
        Config=TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB),
    )
    head = s3.head_object(Bucket=bucket, Key="multipart")
    assert head["ContentLength"] == len(big)
    assert head["ETag"].endswith('-3"'), head["ETag"]
    assert sha256(s3.get_object(Bucket=bucket, Key="multipart")["Body"].read()) == sha256(big)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["multipart", "small"]


def test_a_client_without_the_ca_is_refused(tls_server):
    srv, _ = tls_server
    with pytest.raises(SSLError):
        boto3_client(srv.endpoint, True).list_buckets()
    # Plain HTTP on the HTTPS port gets a 400 saying so, never an S3 answer.
    plain = requests.get(srv.endpoint.replace("https://", "http://") + "/", timeout=10)
    assert plain.status_code == 400
    assert "HTTP request to an HTTPS server" in plain.text


def test_aws_cli_over_https(tls_server, tmp_path):
    srv, ca = tls_server
    home = tmp_path / "aws-home"
    home.mkdir()
    config = home / "config"
    config.write_text(f"[default]\nregion = {REGION}\ns3 =\n    addressing_style = path\n")
    credentials = home / "credentials"
    credentials.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_DEFAULT_REGION=REGION,
        AWS_CONFIG_FILE=str(config),
        AWS_SHARED_CREDENTIALS_FILE=str(credentials),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_PAGER="",
        HOME=str(home),
    )
    aws = AwsCli(srv.endpoint, env)
    bucket = unique_name("tls-cli")
    aws("--ca-bundle", ca, "s3", "mb", f"s3://{bucket}", check=True)

    # 20 MiB: the CLI uploads and downloads it in parts.
    src = tmp_path / "upload.bin"
    digest = write_random_file(src, 20 * MiB + 3)
    aws("--ca-bundle", ca, "s3", "cp", src, f"s3://{bucket}/dir/upload.bin", check=True)
    dst = tmp_path / "download.bin"
    aws("--ca-bundle", ca, "s3", "cp", f"s3://{bucket}/dir/upload.bin", dst, check=True)
    assert sha256(dst.read_bytes()) == digest

    listing = aws("--ca-bundle", ca, "s3", "ls", f"s3://{bucket}/dir/", check=True)
    assert "upload.bin" in listing.stdout

    # Without the CA bundle the CLI refuses the certificate.
    refused = aws("s3", "ls", f"s3://{bucket}/", env={"AWS_MAX_ATTEMPTS": "1"})
    assert refused.returncode != 0
    assert "SSL" in refused.stderr or "certificate" in refused.stderr, refused.stderr


def test_minio_over_https(tls_server):
    srv, ca = tls_server
    http = urllib3.PoolManager(
        cert_reqs="CERT_REQUIRED",
        ca_certs=str(ca),
        timeout=urllib3.Timeout(connect=10, read=120),
        retries=urllib3.Retry(total=0, raise_on_status=False, raise_on_redirect=False),
    )
    mc = Minio(
        f"{srv.host}:{srv.port}",
        access_key=ACCESS_KEY,
        secret_key=SECRET_KEY,
        secure=True,
        region=REGION,
        http_client=http,
    )
    bucket = unique_name("tls-minio")
    mc.make_bucket(bucket)
    assert mc.bucket_exists(bucket)

    small = os.urandom(64 * 1024)
    mc.put_object(bucket, "small", io.BytesIO(small), len(small))
    # Unknown length: the SDK sends it as a multipart upload of 5 MiB parts.
    big = os.urandom(11 * MiB + 1)
    mc.put_object(bucket, "multipart", io.BytesIO(big), -1, part_size=5 * MiB)
    for key, data in (("small", small), ("multipart", big)):
        resp = mc.get_object(bucket, key)
        try:
            assert sha256(resp.read()) == sha256(data), key
        finally:
            resp.close()
            resp.release_conn()
    assert sorted(o.object_name for o in mc.list_objects(bucket)) == ["multipart", "small"]
