"""The web console in a real browser, as a person uses it: Debian's Chromium driven through
WebDriver (Debian's chromedriver, the `selenium` client). Sign in with the deployment's keys,
create a bucket, upload a file large enough to go in parts and a folder, browse page by page,
download and compare bytes, set a lifecycle rule and read it back with boto3, create a
read-only user and sign in as them to see writes refused, see a removed drive on the
deployment page; names and tags that carry a script are shown as text. A screenshot of each
page is saved under `s3-compat-tests/artifacts/console/`."""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from conftest import ACCESS_KEY, KMS_MASTER_KEY, SECRET_KEY, StrataServer, sha256_file

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts" / "console"
# Chromium as the machine allows it: no sandbox as root, and no calls to Google's services,
# which a closed network refuses.
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
]


def start_console_server(base: Path) -> StrataServer:
    drives = [base / f"d{i}" for i in range(1, 10)]
    for d in drives:
        d.mkdir(parents=True)
    # Buckets counted every second, for the bucket list's objects and sizes; a key service;
    # a tier of six local drives for transition rules.
    env = {"STRATA_USAGE_SCAN_SECS": "1", "STRATA_KMS_SECRET_KEY": KMS_MASTER_KEY}
    tiers = base / "tiers.json"
    warm = [str(base / f"warm{i}") for i in range(1, 7)]
    tiers.write_text(json.dumps({"tiers": [
        {"name": "WARM", "type": "pool", "drives": warm, "data_shards": 4, "parity_shards": 2}
    ]}))
    args = ["--console-address", "127.0.0.1:0", "--tiers", str(tiers)]
    srv = StrataServer(drives, base / "server.log", args, env=env).start()
    log = srv.log_path.read_text(errors="replace")
    line = next((l for l in log.splitlines() if "web console at http://" in l), None)
    assert line, srv.log_tail()
    srv.console_url = line[line.index("http://"):].split()[0]
    return srv


@pytest.fixture(scope="module")
def console_server(tmp_path_factory):
    srv = start_console_server(tmp_path_factory.mktemp("console"))
    yield srv
    srv.stop()


class Browser:
    """One Chromium window and what a person does in it."""

    def __init__(self, downloads: Path):
        assert CHROMIUM.is_file() and CHROMEDRIVER.is_file(), (
            "Debian's chromium and chromium-driver are not installed (scripts/test-all.sh "
            "installs them)"
        )
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for arg in CHROMIUM_ARGS:
            options.add_argument(arg)
        options.add_experimental_option(
            "prefs",
            {"download.default_directory": str(downloads), "download.prompt_for_download": False},
        )
        self.driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        # The page re-renders what it shows: an element read as it is replaced is read again.
        self.wait = WebDriverWait(
            self.driver, 60, ignored_exceptions=[StaleElementReferenceException]
        )
        self.downloads = downloads

    def quit(self):
        self.driver.quit()

    def find(self, css: str):
        return self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))

    def find_xpath(self, xpath: str):
        return self.wait.until(EC.presence_of_element_located((By.XPATH, xpath)))

    def click(self, css: str):
        self.wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, css))).click()

    def click_link(self, within: str, text: str):
        xpath = f"//*[@id='{within}']//a[normalize-space(text())={xpath_string(text)}]"
        self.wait.until(EC.element_to_be_clickable((By.XPATH, xpath))).click()

    def type(self, css: str, text: str):
        field = self.wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, css)))
        field.clear()
        field.send_keys(text)

    def wait_text(self, css: str, text: str):
        self.wait.until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))

    def rows(self, tbody: str) -> int:
        return len(self.driver.find_elements(By.CSS_SELECTOR, f"#{tbody} tr"))

    def wait_rows(self, tbody: str, count: int):
        self.wait.until(lambda _: self.rows(tbody) == count)

    def accept_confirm(self):
        self.wait.until(EC.alert_is_present()).accept()

    def screenshot(self, name: str):
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))

    def sign_in(self, url: str, access_key: str, secret_key: str):
        self.driver.get(url)
        self.type("#sign-in-form input[name=accessKey]", access_key)
        self.type("#sign-in-form input[name=secretKey]", secret_key)
        self.click("#sign-in-form button")
        self.wait_text("#who", access_key)

    def errors(self) -> list[str]:
        """Scripts that threw on the page (Chromium's severe console entries)."""
        logs = self.driver.get_log("browser")
        return [e["message"] for e in logs if e["level"] == "SEVERE" and "Uncaught" in e["message"]]


def xpath_string(text: str) -> str:
    return f'"{text}"' if '"' not in text else f"'{text}'"


@pytest.fixture
def browser(tmp_path):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    opened = Browser(downloads)
    yield opened
    try:
        assert not opened.errors(), "the page threw"
    finally:
        opened.quit()


def assert_absent(s3, bucket: str, key: str) -> None:
    """The key does not exist: HEAD answers 404 (not an error of any other kind)."""
    with pytest.raises(ClientError) as refused:
        s3.head_object(Bucket=bucket, Key=key)
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def wait_for_download(folder: Path, name: str, timeout: float = 60) -> Path:
    deadline = time.monotonic() + timeout
    target = folder / name
    while time.monotonic() < deadline:
        if target.exists() and not list(folder.glob("*.crdownload")):
            return target
        time.sleep(0.2)
    raise AssertionError(f"{name} was not downloaded: {list(folder.iterdir())}")


def test_a_person_uploads_browses_downloads_and_sets_a_rule(console_server, browser, tmp_path):
    s3 = console_server.boto3_client()
    browser.sign_in(console_server.console_url, ACCESS_KEY, SECRET_KEY)
    cookies = browser.driver.get_cookies()
    assert cookies and all(c["httpOnly"] for c in cookies)
    assert all(SECRET_KEY not in c["value"] for c in cookies)
    assert SECRET_KEY not in browser.driver.page_source
    browser.screenshot("buckets")

    bucket = f"console-{uuid.uuid4().hex[:8]}"
    browser.type("#create-bucket input[name=name]", bucket)
    browser.click("#create-bucket input[name=versioning]")
    browser.click("#create-bucket button")
    browser.click_link("bucket-rows", bucket)
    browser.find("#objects:not([hidden])")
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"

    # A 20 MiB file goes in two parts; a folder keeps its paths.
    shard = tmp_path / "shard-0001.bin"
    shard.write_bytes(os.urandom(20 * 1024 * 1024))
    browser.find("#pick-files").send_keys(str(shard))
    browser.wait_text("#uploads", "shard-0001.bin: uploaded")
    head = s3.head_object(Bucket=bucket, Key="shard-0001.bin")
    assert head["ContentLength"] == shard.stat().st_size
    assert head["ETag"].endswith('-2"'), "uploaded in parts"
    folder = tmp_path / "run-3"
    (folder / "logs").mkdir(parents=True)
    (folder / "config.json").write_text('{"lr": 0.001}')
    (folder / "logs" / "train.log").write_text("step 1 loss 2.3\n")
    browser.find("#pick-folder").send_keys(str(folder))
    browser.wait_text("#uploads", "run-3/logs/train.log: uploaded")
    got = s3.get_object(Bucket=bucket, Key="run-3/logs/train.log")["Body"].read()
    assert got == b"step 1 loss 2.3\n"
    browser.screenshot("objects")

    # Folders, and a listing that comes a page at a time.
    for i in range(130):
        s3.put_object(Bucket=bucket, Key=f"steps/step-{i:04d}.json", Body=b"{}")
    browser.driver.refresh()
    browser.click_link("object-rows", "steps/")
    browser.wait_rows("object-rows", 100)
    browser.click("#more")
    browser.wait_rows("object-rows", 130)
    browser.type("#search input[name=prefix]", "step-012")
    browser.click("#search button")
    browser.wait_rows("object-rows", 10)

    # Download the large file from its details and compare bytes.
    browser.driver.get(f"{console_server.console_url}#/o/{bucket}/shard-0001.bin")
    browser.wait_text("#details-key", "shard-0001.bin")
    browser.wait_text("#details-list", "20.0 MiB")
    browser.screenshot("details")
    browser.click("#details-download")
    saved = wait_for_download(browser.downloads, "shard-0001.bin")
    assert sha256_file(saved) == sha256_file(shard)

    # A lifecycle rule set in the form is the bucket's, as boto3 reads it.
    browser.driver.get(f"{console_server.console_url}#/s/{bucket}/")
    browser.type("#rule-form input[name=id]", "expire-steps")
    browser.type("#rule-form input[name=prefix]", "steps/")
    browser.type("#rule-form input[name=days]", "30")
    browser.type("#rule-form input[name=noncurrent]", "7")
    browser.find("#tier-names option[value=WARM]")
    browser.type("#rule-form input[name=tier]", "WARM")
    browser.type("#rule-form input[name=tierDays]", "10")
    browser.click("#rule-dry-run")
    browser.wait_text("#dry-run", "objects looked at")
    browser.click("#rule-form button[type=submit]")
    browser.wait_text("#rule-rows", "expire-steps")
    browser.screenshot("bucket-settings")
    rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert len(rules) == 1
    assert rules[0]["ID"] == "expire-steps"
    assert rules[0]["Filter"]["Prefix"] == "steps/"
    assert rules[0]["Expiration"]["Days"] == 30
    assert rules[0]["NoncurrentVersionExpiration"]["NoncurrentDays"] == 7
    assert rules[0]["Transitions"] == [{"Days": 10, "StorageClass": "WARM"}]

    # Deleting an object from its details.
    browser.driver.get(f"{console_server.console_url}#/o/{bucket}/run-3/config.json")
    browser.wait_text("#details-key", "run-3/config.json")
    browser.click("#details-delete")
    browser.accept_confirm()
    browser.find("#objects:not([hidden])")
    assert s3.list_objects_v2(Bucket=bucket, Prefix="run-3/config.json")["KeyCount"] == 0

    # The bucket list counts its objects and bytes (in the background).
    xpath = f"//tbody[@id='bucket-rows']/tr[td[1]/a[text()='{bucket}']]"
    deadline = time.monotonic() + 60
    browser.driver.get(f"{console_server.console_url}#/")
    while "132" not in browser.find_xpath(xpath).text:
        assert time.monotonic() < deadline, browser.find_xpath(xpath).text
        time.sleep(1)
        browser.driver.refresh()
    assert "20.0 MiB" in browser.find_xpath(xpath).text

    browser.click("#sign-out")
    browser.find("#sign-in:not([hidden])")
    browser.driver.get(f"{console_server.console_url}#/b/{bucket}/")
    browser.find("#sign-in:not([hidden])")


def test_a_user_made_in_the_console_sees_writes_refused(console_server, browser, tmp_path):
    s3 = console_server.boto3_client()
    bucket = f"console-ro-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="dataset/part-0.parquet", Body=b"PAR1")

    browser.sign_in(console_server.console_url, ACCESS_KEY, SECRET_KEY)
    browser.driver.get(f"{console_server.console_url}#/users")
    policy = f"read-all-{uuid.uuid4().hex[:6]}"
    browser.type("#policy-form input[name=name]", policy)
    browser.type(
        "#policy-form textarea[name=document]",
        '{"Version":"2012-10-17","Statement":[{"Effect":"Allow",'
        '"Action":["s3:ListAllMyBuckets","s3:ListBucket","s3:GetObject"],'
        '"Resource":["arn:aws:s3:::*"]}]}',
    )
    browser.click("#policy-form button")
    browser.wait_text("#policy-rows", policy)
    # The user is made without a policy, then given the read-only one.
    user = f"reader-{uuid.uuid4().hex[:6]}"
    browser.type("#user-form input[name=name]", user)
    browser.click("#user-form button")
    browser.wait_text("#new-secret", "shown this once")
    browser.screenshot("users")
    notice = browser.find("#new-secret").text
    secret = notice.rsplit(": ", 1)[1].strip()
    browser.wait_text("#user-rows", user)
    row = f"//tbody[@id='user-rows']/tr[td[1][text()='{user}']]"
    browser.find_xpath(f"{row}//option[@value='{policy}']").click()
    browser.find_xpath(f"{row}//button[text()='Attach']").click()
    browser.wait.until(lambda _: policy in browser.find_xpath(f"{row}/td[3]").text
                       and "Detach" in browser.find_xpath(f"{row}/td[3]").text)
    # A key of the key service made here encrypts what names it.
    key_name = f"team-{uuid.uuid4().hex[:6]}"
    browser.type("#kms-form input[name=name]", key_name)
    browser.click("#kms-form button")
    browser.wait_text("#kms-rows", key_name)
    s3.put_object(Bucket=bucket, Key="sealed", Body=b"x", ServerSideEncryption="aws:kms",
                  SSEKMSKeyId=key_name)
    assert s3.head_object(Bucket=bucket, Key="sealed")["SSEKMSKeyId"].endswith(key_name)
    browser.click("#sign-out")
    browser.find("#sign-in:not([hidden])")

    browser.sign_in(console_server.console_url, user, secret)
    browser.click_link("bucket-rows", bucket)
    browser.click_link("object-rows", "dataset/")
    browser.wait_text("#object-rows", "part-0.parquet")
    upload = tmp_path / "mine.txt"
    upload.write_text("not allowed")
    browser.find("#pick-files").send_keys(str(upload))
    browser.wait_text("#uploads", "AccessDenied")
    assert_absent(s3, bucket, "dataset/mine.txt")
    # The admin screens are the root user's: refused, and said so.
    browser.driver.get(f"{console_server.console_url}#/users")
    browser.wait_text("#error", "Only the root user")


def test_names_and_tags_are_shown_as_text(console_server, browser):
    s3 = console_server.boto3_client()
    bucket = f"console-xss-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    key = "<img src=x onerror=document.title=1>.txt"
    s3.put_object(
        Bucket=bucket,
        Key=key,
        Body=b"x",
        Tagging="note=%3Cscript%3Edocument.title%3D%27pwned%27%3C%2Fscript%3E",
        Metadata={"comment": "<b>bold</b>"},
    )
    browser.sign_in(console_server.console_url, ACCESS_KEY, SECRET_KEY)
    browser.click_link("bucket-rows", bucket)
    browser.click_link("object-rows", key)
    browser.wait_text("#details-key", key)
    browser.wait_text("#details-list", "<script>document.title='pwned'</script>")
    browser.wait_text("#details-list", "<b>bold</b>")
    assert browser.driver.title == "Strata console"
    assert not browser.driver.find_elements(By.CSS_SELECTOR, "#details img, #object-rows img")


def test_the_deployment_page_shows_a_removed_drive(browser, tmp_path):
    srv = start_console_server(tmp_path / "server")
    try:
        browser.sign_in(srv.console_url, ACCESS_KEY, SECRET_KEY)
        browser.driver.get(f"{srv.console_url}#/deployment")
        browser.wait_text("#deployment-state", "Ready")
        assert "9 of 9 drives online" in browser.find("#sets").text
        browser.wait_text("#pool-rows", "active")
        browser.wait_text("#job-rows", "usage-scanner")
        shutil.rmtree(srv.drives[0])
        deadline = time.monotonic() + 60
        while "8 of 9 drives online" not in browser.find("#sets").text:
            assert time.monotonic() < deadline, browser.find("#sets").text
            time.sleep(1)
            browser.driver.refresh()
        assert "offline" in browser.find("#sets").text
        # The live charts follow the server's own counts.
        s3 = srv.boto3_client()
        for _ in range(40):
            s3.list_buckets()
        browser.wait.until(
            lambda _: browser.find("#chart-rate .value").text not in ("…", "0.0")
        )
        browser.screenshot("deployment")
    finally:
        srv.stop()


def thrift_compact_parquet_footer() -> bytes:
    """The FileMetaData of a two-column Parquet file (`id` INT64 required, `text` UTF8
    optional, 42 rows), in Thrift's compact protocol, as a Parquet writer puts it last."""

    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            byte, n = n & 0x7F, n >> 7
            out.append(byte | (0x80 if n else 0))
            if not n:
                return bytes(out)

    def zigzag(n: int) -> bytes:
        return varint((n << 1) ^ (n >> 63))

    def name(delta: int, text: str) -> bytes:
        return bytes([delta << 4 | 8]) + varint(len(text)) + text.encode()

    root = name(4, "schema") + bytes([0x15]) + zigzag(2) + b"\x00"
    id_column = bytes([0x15]) + zigzag(2) + bytes([0x25]) + zigzag(0) + name(1, "id") + b"\x00"
    text_column = (
        bytes([0x15]) + zigzag(6) + bytes([0x25]) + zigzag(1) + name(1, "text")
        + bytes([0x25]) + zigzag(0) + b"\x00"
    )
    return (
        bytes([0x15]) + zigzag(1)  # version
        + bytes([0x19, 3 << 4 | 12]) + root + id_column + text_column  # schema
        + bytes([0x16]) + zigzag(42)  # num_rows
        + bytes([0x19, 0x0C])  # no row groups
        + b"\x00"
    )


def test_previews_versions_and_share_links(console_server, browser):
    s3 = console_server.boto3_client()
    bucket = f"console-v-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=bucket, Key="config.json", Body=b'{"lr":0.1}', ContentType="application/json")
    s3.put_object(Bucket=bucket, Key="config.json", Body=b'{"lr":0.01}', ContentType="application/json")
    footer = thrift_compact_parquet_footer()
    parquet = b"PAR1" + os.urandom(1000) + footer + len(footer).to_bytes(4, "little") + b"PAR1"
    s3.put_object(Bucket=bucket, Key="train/part-0.parquet", Body=parquet)

    browser.sign_in(console_server.console_url, ACCESS_KEY, SECRET_KEY)
    browser.driver.get(f"{console_server.console_url}#/o/{bucket}/config.json")
    browser.wait_text("#preview", '"lr": 0.01')
    browser.wait_rows("version-rows", 2)
    browser.screenshot("versions")
    # Restore the first version: it is the object again, as a new version.
    restore = browser.driver.find_element(By.XPATH, "//tbody[@id='version-rows']//button[text()='Restore']")
    restore.click()
    browser.wait_rows("version-rows", 3)
    assert s3.get_object(Bucket=bucket, Key="config.json")["Body"].read() == b'{"lr":0.1}'

    # A share link opens the object for anyone, signed to expire.
    browser.click("#share-form button")
    link = browser.wait.until(lambda d: d.find_element(By.ID, "share-link").get_attribute("value"))
    assert "X-Amz-Expires=3600" in link and "X-Amz-Signature=" in link
    with urllib.request.urlopen(link, timeout=30) as response:
        assert response.read() == b'{"lr":0.1}'

    browser.driver.get(f"{console_server.console_url}#/o/{bucket}/train/part-0.parquet")
    browser.wait_text("#preview", "42 rows")
    browser.wait_text("#preview", "id: INT64 required")
    browser.wait_text("#preview", "text: BYTE_ARRAY (UTF8) optional")
    browser.screenshot("parquet")


def test_default_encryption_and_block_public_access_are_set_from_the_settings(
    console_server, browser
):
    s3 = console_server.boto3_client()
    bucket = f"console-set-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    browser.sign_in(console_server.console_url, ACCESS_KEY, SECRET_KEY)
    browser.driver.get(f"{console_server.console_url}#/s/{bucket}/")
    browser.wait_text("#versioning-state", "Versioning is off")
    browser.find("#encryption-form option[value='AES256']").click()
    browser.click("#encryption-form button")
    browser.click("#public-access-form input[name=BlockPublicPolicy]")
    browser.click("#public-access-form button")
    def policy_blocked(_):
        try:
            got = s3.get_public_access_block(Bucket=bucket)
        except s3.exceptions.ClientError:
            return False
        return got["PublicAccessBlockConfiguration"]["BlockPublicPolicy"]

    browser.wait.until(policy_blocked)
    rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rules[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    s3.put_object(Bucket=bucket, Key="encrypted", Body=b"x")
    assert s3.head_object(Bucket=bucket, Key="encrypted")["ServerSideEncryption"] == "AES256"
    # A public policy is now refused, and the page says so.
    browser.driver.refresh()
    browser.find("#public-access-form input[name=BlockPublicPolicy]:checked")
    public = (
        '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*",'
        f'"Action":"s3:GetObject","Resource":"arn:aws:s3:::{bucket}/*"}}]}}'
    )
    browser.type("#policy-text", public)
    browser.click("#policy-save")
    browser.wait_text("#error", "AccessDenied")
    browser.screenshot("bucket-settings-refused")
    # CORS rules, as S3's XML, are the bucket's.
    cors = (
        "<CORSConfiguration><CORSRule><AllowedOrigin>https://notebook.example</AllowedOrigin>"
        "<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>"
    )
    browser.type("#cors-text", cors)
    browser.click("#cors-save")

    def cors_set(_):
        try:
            return s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
        except s3.exceptions.ClientError:
            return False

    rules = browser.wait.until(cors_set)
    assert rules[0]["AllowedOrigins"] == ["https://notebook.example"]
    assert rules[0]["AllowedMethods"] == ["GET"]


def test_files_dropped_on_the_page_upload_and_an_upload_can_be_cancelled(
    console_server, browser, tmp_path
):
    s3 = console_server.boto3_client()
    bucket = f"console-drop-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    browser.sign_in(console_server.console_url, ACCESS_KEY, SECRET_KEY)
    browser.click_link("bucket-rows", bucket)
    browser.find("#objects:not([hidden])")
    # A file dropped on the drop zone, as a browser delivers it.
    browser.driver.execute_script(
        """
        const transfer = new DataTransfer();
        transfer.items.add(new File(["dropped bytes"], "dropped.txt", { type: "text/plain" }));
        const zone = document.getElementById("drop");
        zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: transfer, bubbles: true, cancelable: true }));
        zone.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
        """
    )
    browser.wait_text("#uploads", "dropped.txt: uploaded")
    assert s3.get_object(Bucket=bucket, Key="dropped.txt")["Body"].read() == b"dropped bytes"

    # A slow link, a large file in parts, and Cancel: nothing is left, not even the upload.
    browser.driver.set_network_conditions(
        offline=False, latency=5, download_throughput=50 * 1024 * 1024, upload_throughput=1024 * 1024
    )
    big = tmp_path / "checkpoint.bin"
    big.write_bytes(os.urandom(40 * 1024 * 1024))
    browser.find("#pick-files").send_keys(str(big))
    browser.wait.until(lambda _: float(browser.find("#uploads li:last-child progress").get_attribute("value")) > 0)
    browser.click("#uploads li:last-child button")
    browser.wait_text("#uploads li:last-child", "checkpoint.bin: cancelled")
    browser.driver.delete_network_conditions()
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    assert_absent(s3, bucket, "checkpoint.bin")


# Every field of the page named for a screen reader: inside its label, labelled by one, or
# with an aria-label.
UNLABELLED_FIELDS = """
return Array.from(document.querySelectorAll("input, select, textarea"))
  .filter((field) => !(field.closest("label") || field.getAttribute("aria-label")
    || (field.id && document.querySelector(`label[for="${field.id}"]`))))
  .map((field) => field.outerHTML);
"""


def test_the_console_works_from_the_keyboard_and_names_its_fields(console_server, browser):
    from selenium.webdriver.common.keys import Keys

    browser.driver.get(console_server.console_url)
    access = browser.find("#sign-in-form input[name=accessKey]")
    browser.wait.until(EC.element_to_be_clickable(access))
    access.click()
    access.send_keys(ACCESS_KEY, Keys.TAB, SECRET_KEY, Keys.ENTER)
    browser.wait_text("#who", ACCESS_KEY)
    assert browser.driver.execute_script(UNLABELLED_FIELDS) == []
    # The file pickers are in the tab order, not only reachable by mouse.
    for picker in ("pick-files", "pick-folder"):
        reachable = browser.driver.execute_script(
            f"const f = document.getElementById('{picker}'); return f.tabIndex >= 0 && !f.hidden"
        )
        assert reachable, picker
