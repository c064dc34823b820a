"""The web console in a real Chromium (Debian's, driven by Playwright), as a person uses it:
sign in with the deployment's keys, create a bucket, upload files (one large enough to go in
parts) with their progress, browse folders page by page, open an object's details, download
and delete it, sign out; and a read-only user who sees what they may read and is told when an
upload is refused."""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from conftest import ACCESS_KEY, SECRET_KEY, StrataServer, sha256, sha256_file
from test_iam import admin

CHROMIUM = Path("/usr/bin/chromium")
# Chromium as the machine allows it: no sandbox as root, and no calls to Google's services,
# which a closed network refuses.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
_CONSOLE_RE = re.compile(r"web console at (http://\S+)")


@pytest.fixture(scope="module")
def console_server(tmp_path_factory):
    base = tmp_path_factory.mktemp("console")
    drives = [base / f"d{i}" for i in range(1, 10)]
    for d in drives:
        d.mkdir()
    srv = StrataServer(drives, base / "server.log", ["--console-address", "127.0.0.1:0"]).start()
    match = _CONSOLE_RE.search(srv.log_path.read_text(errors="replace"))
    assert match, srv.log_tail()
    srv.console_url = match.group(1)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def browser():
    assert CHROMIUM.is_file(), "Debian's chromium is not installed (scripts/test-all.sh installs it)"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, tmp_path):
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"the page threw: {errors}"


def sign_in(page, url: str, access_key: str, secret_key: str) -> None:
    page.goto(url)
    page.fill("input[name=accessKey]", access_key)
    page.fill("input[name=secretKey]", secret_key)
    page.click("#sign-in-form button")
    expect(page.locator("#who")).to_have_text(access_key)


def test_a_person_uploads_browses_downloads_and_deletes(console_server, page, tmp_path):
    s3 = console_server.boto3_client()
    sign_in(page, console_server.console_url, ACCESS_KEY, SECRET_KEY)
    # The secret is nowhere the page can reach.
    assert SECRET_KEY not in page.content()
    assert all(SECRET_KEY not in c["value"] for c in page.context.cookies())
    assert all(c["httpOnly"] for c in page.context.cookies())

    bucket = f"console-{uuid.uuid4().hex[:8]}"
    page.fill("#create-bucket input[name=name]", bucket)
    page.check("#create-bucket input[name=versioning]")
    page.click("#create-bucket button")
    page.click(f"#bucket-rows >> text={bucket}")
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"

    # Two files at once; the large one goes in parts, each shows its progress.
    notes = tmp_path / "notes.txt"
    notes.write_text("a small note")
    shard = tmp_path / "shard-0001.bin"
    shard.write_bytes(os.urandom(17 * 1024 * 1024 + 5))
    page.set_input_files("#pick-files", [str(notes), str(shard)])
    expect(page.locator("#uploads li")).to_have_count(2)
    expect(page.locator("#uploads")).to_contain_text("shard-0001.bin: uploaded", timeout=60_000)
    expect(page.locator("#uploads")).to_contain_text("notes.txt: uploaded")
    head = s3.head_object(Bucket=bucket, Key="shard-0001.bin")
    assert head["ContentLength"] == shard.stat().st_size
    assert head["ETag"].endswith('-2"'), "uploaded in two parts"
    got = s3.get_object(Bucket=bucket, Key="shard-0001.bin")["Body"].read()
    assert sha256(got) == sha256_file(shard)

    # Folders, and a listing that comes a page at a time.
    for i in range(130):
        s3.put_object(Bucket=bucket, Key=f"runs/7/step-{i:04d}.json", Body=b"{}")
    page.reload()
    page.click("#object-rows >> text=runs/")
    page.click("#object-rows >> text=7/")
    expect(page.locator("#object-rows tr")).to_have_count(100)
    page.click("#more")
    expect(page.locator("#object-rows tr")).to_have_count(130)
    expect(page.locator("#crumbs")).to_contain_text("runs")
    page.fill("#search input[name=prefix]", "step-012")
    page.click("#search button")
    expect(page.locator("#object-rows tr")).to_have_count(10)

    # An object's details, its download, its deletion.
    page.click(f"#crumbs >> text={bucket}")
    page.click("#object-rows >> text=notes.txt")
    expect(page.locator("#details-key")).to_have_text("notes.txt")
    expect(page.locator("#details-list")).to_contain_text("12 B")
    with page.expect_download() as download:
        page.click("#details-download")
    saved = tmp_path / "downloaded"
    download.value.save_as(saved)
    assert saved.read_text() == "a small note"
    assert download.value.suggested_filename == "notes.txt"
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#details-delete")
    expect(page.locator("#objects")).to_be_visible()
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="notes.txt")
    assert listed.get("KeyCount") == 0

    page.click("#sign-out")
    expect(page.locator("#sign-in")).to_be_visible()
    page.goto(console_server.console_url + f"#/b/{bucket}/")
    expect(page.locator("#sign-in")).to_be_visible()


def test_a_read_only_user_sees_what_they_may_and_is_told_what_they_may_not(
    console_server, page, tmp_path
):
    s3 = console_server.boto3_client()
    bucket = f"console-ro-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="dataset/part-0.parquet", Body=b"PAR1")
    user, secret = f"reader-{uuid.uuid4().hex[:6]}", "reader-secret-0123456789"
    document = tmp_path / "policy.json"
    document.write_text(
        json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": ["s3:ListAllMyBuckets", "s3:ListBucket", "s3:GetObject"],
                        "Resource": ["arn:aws:s3:::*"],
                    }
                ],
            }
        )
    )
    admin(console_server, "policy", "add", f"{user}-read", str(document))
    admin(console_server, "user", "add", user, "--secret", secret, "--policy", f"{user}-read")

    sign_in(page, console_server.console_url, user, secret)
    page.click(f"#bucket-rows >> text={bucket}")
    page.click("#object-rows >> text=dataset/")
    expect(page.locator("#object-rows")).to_contain_text("part-0.parquet")
    upload = tmp_path / "mine.txt"
    upload.write_text("not allowed")
    page.set_input_files("#pick-files", str(upload))
    expect(page.locator("#uploads")).to_contain_text("AccessDenied")
    with pytest.raises(Exception):
        s3.head_object(Bucket=bucket, Key="dataset/mine.txt")
