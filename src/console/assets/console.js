// The Strata console's page. Every call is an S3 request to /s3/... on this origin, which the
// server makes as the signed-in user; nothing here holds a secret, and nothing a bucket holds
// is ever put into the page as HTML (text only).
"use strict";

const PAGE_SIZE = 100;
// Files larger than this are uploaded in parts of this size.
const PART_SIZE = 16 * 1024 * 1024;

let csrf = null;

const $ = (id) => document.getElementById(id);

// --- Calls -------------------------------------------------------------------------------

// The path of an object key: each segment encoded, slashes kept.
function keyPath(key) {
  return key.split("/").map(encodeURIComponent).join("/");
}

function query(params) {
  const pairs = Object.entries(params).filter(([, v]) => v !== undefined && v !== null);
  return pairs.map(([k, v]) => (v === "" ? encodeURIComponent(k)
    : `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)).join("&");
}

class S3Error extends Error {
  constructor(status, code, message) {
    super(`${code || status}: ${message || "the request failed"}`);
    this.status = status;
    this.code = code;
  }
}

async function failure(response) {
  const text = await response.text();
  const doc = text ? new DOMParser().parseFromString(text, "application/xml") : null;
  const field = (tag) => doc?.getElementsByTagName(tag)[0]?.textContent;
  if (response.status === 401) {
    showSignIn();
  }
  let message = field("Message");
  if (!message) {
    try { message = JSON.parse(text).error; } catch { message = response.statusText; }
  }
  return new S3Error(response.status, field("Code"), message);
}

// One S3 call; answers the response, throws S3Error on an error answer.
async function s3(method, path, { body, headers = {} } = {}) {
  const response = await fetch(`/s3${path}`, {
    method,
    body,
    headers: { ...headers, "X-Strata-Csrf": csrf },
    credentials: "same-origin",
  });
  if (!response.ok) {
    throw await failure(response);
  }
  return response;
}

async function s3Xml(method, path, options) {
  const text = await (await s3(method, path, options)).text();
  return new DOMParser().parseFromString(text, "application/xml");
}

const first = (node, tag) => node.getElementsByTagName(tag)[0]?.textContent ?? "";
const every = (node, tag) => Array.from(node.getElementsByTagName(tag));

// --- Showing -----------------------------------------------------------------------------

function show(section) {
  for (const id of ["sign-in", "buckets", "objects", "details"]) {
    $(id).hidden = id !== section;
  }
}

function report(error) {
  $("error").textContent = error ? String(error.message || error) : "";
  $("error").hidden = !error;
}

function cell(row, content, className) {
  const td = row.insertCell();
  if (content instanceof Node) {
    td.append(content);
  } else {
    td.textContent = content;
  }
  if (className) td.className = className;
  return td;
}

function link(text, href) {
  const a = document.createElement("a");
  a.textContent = text;
  a.href = href;
  return a;
}

function button(text, onClick, className) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  if (className) b.className = className;
  b.addEventListener("click", onClick);
  return b;
}

function size(bytes) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let n = Number(bytes);
  let unit = 0;
  while (n >= 1024 && unit < units.length - 1) {
    n /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? n : n.toFixed(1)} ${units[unit]}`;
}

const when = (iso) => (iso ? new Date(iso).toLocaleString() : "");

// Where the page is: #/ (buckets), #/b/BUCKET/PREFIX (a folder), #/o/BUCKET/KEY (an object).
function route() {
  const hash = decodeURIComponent(location.hash.slice(1) || "/");
  const [, kind, bucket, ...rest] = hash.split("/");
  return { kind: kind || "", bucket: bucket || "", path: rest.join("/") };
}

function go(kind, bucket, path) {
  location.hash = `#/${kind}/${encodeURIComponent(bucket)}/${encodeURIComponent(path)}`
    .replace(/%2F/g, "/");
}

// --- Session -----------------------------------------------------------------------------

function showSignIn() {
  csrf = null;
  $("who").textContent = "";
  $("sign-out").hidden = true;
  show("sign-in");
}

function signedIn(session) {
  csrf = session.csrf;
  $("who").textContent = session.user;
  $("sign-out").hidden = false;
  render();
}

$("sign-in-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const response = await fetch("/api/session", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      accessKey: form.accessKey.value,
      secretKey: form.secretKey.value,
    }),
    credentials: "same-origin",
  });
  form.secretKey.value = "";
  if (!response.ok) {
    report(await failure(response));
    show("sign-in");
    return;
  }
  report(null);
  signedIn(await response.json());
});

$("sign-out").addEventListener("click", async () => {
  await fetch("/api/session", {
    method: "DELETE",
    headers: { "X-Strata-Csrf": csrf },
    credentials: "same-origin",
  });
  showSignIn();
});

// --- Buckets -----------------------------------------------------------------------------

async function renderBuckets() {
  const doc = await s3Xml("GET", "/");
  const rows = $("bucket-rows");
  rows.replaceChildren();
  for (const bucket of every(doc, "Bucket")) {
    const name = first(bucket, "Name");
    const row = rows.insertRow();
    cell(row, link(name, `#/b/${encodeURIComponent(name)}/`));
    cell(row, when(first(bucket, "CreationDate")));
    cell(row, button("Delete", () => deleteBucket(name), "danger"));
  }
  show("buckets");
}

$("create-bucket").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const name = form.name.value.trim();
  try {
    const headers = form.lock.checked ? { "x-amz-bucket-object-lock-enabled": "true" } : {};
    await s3("PUT", `/${encodeURIComponent(name)}`, { headers });
    if (form.versioning.checked && !form.lock.checked) {
      const body = '<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        + "<Status>Enabled</Status></VersioningConfiguration>";
      await s3("PUT", `/${encodeURIComponent(name)}?versioning`, { body });
    }
    form.reset();
    report(null);
    await renderBuckets();
  } catch (error) {
    report(error);
  }
});

async function deleteBucket(name) {
  if (!confirm(`Delete the bucket ${name}? It must be empty.`)) return;
  try {
    await s3("DELETE", `/${encodeURIComponent(name)}`);
    report(null);
    await renderBuckets();
  } catch (error) {
    report(error);
  }
}

// --- Objects -----------------------------------------------------------------------------

// The listing shown: its bucket, folder, the prefix searched within it, and the next page.
const listing = { bucket: "", folder: "", search: "", next: null };

function renderCrumbs(bucket, folder) {
  const crumbs = $("crumbs");
  crumbs.replaceChildren(link("Buckets", "#/"), document.createTextNode(" / "));
  crumbs.append(link(bucket, `#/b/${encodeURIComponent(bucket)}/`));
  let path = "";
  for (const part of folder.split("/").filter(Boolean)) {
    path += `${part}/`;
    crumbs.append(document.createTextNode(" / "));
    const a = document.createElement("a");
    a.textContent = part;
    const target = path;
    a.href = "#";
    a.addEventListener("click", (event) => {
      event.preventDefault();
      go("b", bucket, target);
    });
    crumbs.append(a);
  }
}

async function renderObjects(bucket, folder) {
  Object.assign(listing, { bucket, folder, search: "", next: null });
  $("search").prefix.value = "";
  renderCrumbs(bucket, folder);
  $("object-rows").replaceChildren();
  show("objects");
  await listPage();
}

// Appends the next page of the listing: at most PAGE_SIZE entries, never the whole bucket.
async function listPage() {
  const { bucket, folder, search, next } = listing;
  const params = {
    "list-type": "2",
    delimiter: "/",
    prefix: folder + search,
    "max-keys": PAGE_SIZE,
    "continuation-token": next ?? undefined,
  };
  const doc = await s3Xml("GET", `/${encodeURIComponent(bucket)}?${query(params)}`);
  const rows = $("object-rows");
  for (const prefix of every(doc, "CommonPrefixes")) {
    const name = first(prefix, "Prefix");
    const row = rows.insertRow();
    const a = link(`${name.slice(folder.length)}`, "#");
    a.addEventListener("click", (event) => {
      event.preventDefault();
      go("b", bucket, name);
    });
    cell(row, a);
    cell(row, "folder", "size");
    cell(row, "");
    cell(row, "");
  }
  for (const object of every(doc, "Contents")) {
    const key = first(object, "Key");
    const row = rows.insertRow();
    const a = link(key.slice(folder.length) || key, "#");
    a.addEventListener("click", (event) => {
      event.preventDefault();
      go("o", bucket, key);
    });
    cell(row, a);
    cell(row, size(first(object, "Size")), "size");
    cell(row, when(first(object, "LastModified")));
    cell(row, link("Download", downloadUrl(bucket, key)));
  }
  const truncated = first(doc, "IsTruncated") === "true";
  listing.next = truncated ? first(doc, "NextContinuationToken") : null;
  $("more").hidden = !truncated;
}

$("more").addEventListener("click", () => listPage().catch(report));

$("search").addEventListener("submit", async (event) => {
  event.preventDefault();
  listing.search = event.target.prefix.value;
  listing.next = null;
  $("object-rows").replaceChildren();
  await listPage().catch(report);
});

function downloadUrl(bucket, key) {
  const name = key.split("/").pop() || "download";
  const disposition = `attachment; filename*=UTF-8''${encodeURIComponent(name)}`;
  return `/s3/${encodeURIComponent(bucket)}/${keyPath(key)}?${query({
    "response-content-disposition": disposition,
  })}`;
}

// --- Uploads -----------------------------------------------------------------------------

// Sends one request with upload progress; answers the response headers' ETag.
function send(method, path, body, onProgress, uploadState) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    uploadState.xhr = xhr;
    xhr.open(method, `/s3${path}`);
    xhr.setRequestHeader("X-Strata-Csrf", csrf);
    xhr.upload.addEventListener("progress", (event) => onProgress(event.loaded));
    xhr.addEventListener("load", () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        resolve(xhr.getResponseHeader("ETag"));
      } else {
        const doc = new DOMParser().parseFromString(xhr.responseText, "application/xml");
        reject(new S3Error(xhr.status, first(doc, "Code"), first(doc, "Message")));
      }
    });
    xhr.addEventListener("error", () => reject(new Error("the connection failed")));
    xhr.addEventListener("abort", () => reject(new Error("cancelled")));
    xhr.send(body);
  });
}

async function upload(bucket, key, file) {
  const item = document.createElement("li");
  const label = document.createElement("span");
  label.textContent = key;
  const bar = document.createElement("progress");
  bar.max = file.size || 1;
  bar.value = 0;
  const state = { xhr: null, cancelled: false, uploadId: null };
  const cancel = button("Cancel", () => {
    state.cancelled = true;
    state.xhr?.abort();
  });
  item.append(label, bar, cancel);
  $("uploads").append(item);
  const path = `/${encodeURIComponent(bucket)}/${keyPath(key)}`;
  try {
    if (file.size <= PART_SIZE) {
      await send("PUT", path, file, (sent) => { bar.value = sent; }, state);
    } else {
      const created = await s3Xml("POST", `${path}?uploads`);
      state.uploadId = first(created, "UploadId");
      const parts = [];
      for (let offset = 0, number = 1; offset < file.size; offset += PART_SIZE, number += 1) {
        if (state.cancelled) throw new Error("cancelled");
        const partPath = `${path}?${query({ partNumber: number, uploadId: state.uploadId })}`;
        const etag = await send("PUT", partPath, file.slice(offset, offset + PART_SIZE),
          (sent) => { bar.value = offset + sent; }, state);
        parts.push(`<Part><PartNumber>${number}</PartNumber><ETag>${etag}</ETag></Part>`);
      }
      const body = `<CompleteMultipartUpload>${parts.join("")}</CompleteMultipartUpload>`;
      await s3("POST", `${path}?${query({ uploadId: state.uploadId })}`, { body });
    }
    bar.value = bar.max;
    cancel.remove();
    label.textContent = `${key}: uploaded`;
  } catch (error) {
    if (state.uploadId) {
      await s3("DELETE", `${path}?${query({ uploadId: state.uploadId })}`).catch(() => {});
    }
    cancel.remove();
    label.textContent = `${key}: ${error.message}`;
    label.className = "error";
  }
}

async function uploadAll(files) {
  const { bucket, folder } = listing;
  // One file at a time: a folder of thousands of files does not open thousands of requests.
  for (const file of files) {
    await upload(bucket, folder + (file.webkitRelativePath || file.name), file);
  }
  $("object-rows").replaceChildren();
  listing.next = null;
  await listPage().catch(report);
}

$("pick-files").addEventListener("change", (event) => uploadAll(Array.from(event.target.files)));
$("pick-folder").addEventListener("change", (event) => uploadAll(Array.from(event.target.files)));

const drop = $("drop");
drop.addEventListener("dragover", (event) => {
  event.preventDefault();
  drop.classList.add("over");
});
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", async (event) => {
  event.preventDefault();
  drop.classList.remove("over");
  const files = await droppedFiles(event.dataTransfer);
  await uploadAll(files);
});

// The files dropped, folders walked, each carrying its path below the drop.
async function droppedFiles(transfer) {
  const entries = Array.from(transfer.items || [])
    .map((item) => item.webkitGetAsEntry?.())
    .filter(Boolean);
  if (entries.length === 0) return Array.from(transfer.files);
  const files = [];
  async function walk(entry, path) {
    if (entry.isFile) {
      const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
      files.push(new File([file], file.name, { type: file.type }));
      Object.defineProperty(files[files.length - 1], "webkitRelativePath", { value: path + file.name });
    } else if (entry.isDirectory) {
      const reader = entry.createReader();
      for (;;) {
        const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
        if (batch.length === 0) break;
        for (const child of batch) await walk(child, `${path}${entry.name}/`);
      }
    }
  }
  for (const entry of entries) await walk(entry, "");
  return files;
}

// --- One object --------------------------------------------------------------------------

async function renderDetails(bucket, key) {
  const path = `/${encodeURIComponent(bucket)}/${keyPath(key)}`;
  const head = await s3("HEAD", path);
  $("details-key").textContent = key;
  const list = $("details-list");
  list.replaceChildren();
  const add = (name, value) => {
    if (!value) return;
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = value;
    list.append(dt, dd);
  };
  add("Bucket", bucket);
  add("Size", size(head.headers.get("Content-Length")));
  add("Type", head.headers.get("Content-Type"));
  add("Modified", when(head.headers.get("Last-Modified")));
  add("ETag", head.headers.get("ETag"));
  add("Version", head.headers.get("x-amz-version-id"));
  add("Storage class", head.headers.get("x-amz-storage-class") || "STANDARD");
  add("Encryption", head.headers.get("x-amz-server-side-encryption"));
  add("Retention", head.headers.get("x-amz-object-lock-mode"));
  add("Retain until", head.headers.get("x-amz-object-lock-retain-until-date"));
  add("Legal hold", head.headers.get("x-amz-object-lock-legal-hold"));
  for (const [name, value] of head.headers) {
    if (name.startsWith("x-amz-meta-")) add(name.slice("x-amz-meta-".length), value);
  }
  try {
    const tags = await s3Xml("GET", `${path}?tagging`);
    const pairs = every(tags, "Tag").map((t) => `${first(t, "Key")}=${first(t, "Value")}`);
    add("Tags", pairs.join(", "));
  } catch {
    // Reading tags needs s3:GetObjectTagging: without it the details go on without them.
  }
  $("details-download").href = downloadUrl(bucket, key);
  $("details-delete").onclick = async () => {
    if (!confirm(`Delete ${key}?`)) return;
    try {
      await s3("DELETE", path);
      const folder = key.includes("/") ? key.slice(0, key.lastIndexOf("/") + 1) : "";
      go("b", bucket, folder);
    } catch (error) {
      report(error);
    }
  };
  show("details");
}

// --- Start -------------------------------------------------------------------------------

async function render() {
  if (!csrf) return;
  const { kind, bucket, path } = route();
  report(null);
  try {
    if (kind === "b" && bucket) {
      await renderObjects(bucket, path);
    } else if (kind === "o" && bucket) {
      await renderDetails(bucket, path);
    } else {
      await renderBuckets();
    }
  } catch (error) {
    report(error);
  }
}

window.addEventListener("hashchange", render);

(async () => {
  const response = await fetch("/api/session", { credentials: "same-origin" });
  if (response.ok) {
    signedIn(await response.json());
  } else {
    showSignIn();
  }
})();
