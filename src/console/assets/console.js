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
  let code = field("Code");
  let message = field("Message");
  if (!message) {
    try {
      const error = JSON.parse(text).error;
      code = error.code ?? code;
      message = error.message ?? error;
    } catch {
      message = response.statusText;
    }
  }
  return new S3Error(response.status, code, message);
}

// One S3 call (or, under `/admin`, an admin call); answers the response, throws S3Error on
// an error answer.
async function s3(method, path, { body, headers = {}, api = "/s3" } = {}) {
  const response = await fetch(`${api}${path}`, {
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

async function admin(method, path, body) {
  const response = await s3(method, path, { body, api: "/admin" });
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

const first = (node, tag) => node.getElementsByTagName(tag)[0]?.textContent ?? "";
const every = (node, tag) => Array.from(node.getElementsByTagName(tag));

// --- Showing -----------------------------------------------------------------------------

function show(section) {
  for (const id of ["sign-in", "buckets", "objects", "details", "bucket-settings", "users",
    "deployment"]) {
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

// Where the page is: #/ (buckets), #/b/BUCKET/PREFIX (a folder), #/o/BUCKET/KEY (an object),
// #/s/BUCKET/ (a bucket's settings), #/users, #/deployment.
function route() {
  let hash = location.hash.slice(1) || "/";
  try {
    hash = decodeURIComponent(hash);
  } catch {
    // A hand-typed address that is not percent-encoded: taken as it is.
  }
  const [, kind, bucket, ...rest] = hash.split("/");
  return { kind: kind || "", bucket: bucket || "", path: rest.join("/") };
}

function go(kind, bucket, path) {
  location.hash = `#/${kind}/${encodeURIComponent(bucket)}/${encodeURIComponent(path)}`
    .replace(/%2F/g, "/");
}

// --- Session -----------------------------------------------------------------------------

function showSignIn() {
  stopCharts();
  csrf = null;
  $("nav").hidden = true;
  $("who").textContent = "";
  $("sign-out").hidden = true;
  show("sign-in");
}

function signedIn(session) {
  csrf = session.csrf;
  $("nav").hidden = false;
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

// The last background count of each bucket's objects and bytes (the root user's to read);
// null when it cannot be had.
async function bucketUsage() {
  try {
    return await admin("GET", "/usage");
  } catch {
    return null;
  }
}

async function renderBuckets() {
  const [doc, usage] = await Promise.all([s3Xml("GET", "/"), bucketUsage()]);
  const rows = $("bucket-rows");
  rows.replaceChildren();
  const buckets = every(doc, "Bucket");
  $("no-buckets").hidden = buckets.length > 0;
  $("usage-note").textContent = usage
    ? `Objects and sizes as counted at ${when(usage.finished.secs_since_epoch * 1000)}.`
    : "Objects and sizes are counted in the background and shown to the root user.";
  for (const bucket of buckets) {
    const name = first(bucket, "Name");
    const row = rows.insertRow();
    const counted = usage?.buckets?.[name];
    cell(row, link(name, `#/b/${encodeURIComponent(name)}/`));
    cell(row, counted ? String(counted.objects) : "", "size");
    cell(row, counted ? size(counted.bytes) : "", "size");
    cell(row, when(first(bucket, "CreationDate")));
    const actions = cell(row, link("Settings", `#/s/${encodeURIComponent(name)}/`));
    actions.append(" ", button("Delete", () => deleteBucket(name), "danger"));
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
  $("share-link").hidden = true;
  $("share-form").onsubmit = (event) => {
    event.preventDefault();
    share(bucket, key, Number(event.target.expires.value)).catch(report);
  };
  const type = head.headers.get("Content-Type") || "";
  const length = Number(head.headers.get("Content-Length"));
  await Promise.all([
    renderPreview(bucket, key, type, length).catch((error) => {
      $("preview").textContent = `No preview: ${error.message}`;
    }),
    renderVersions(bucket, key).catch((error) => {
      $("version-rows").replaceChildren();
      report(error);
    }),
  ]);
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

// A link anyone may open until it expires, signed with the user's own key on the server.
async function share(bucket, key, expires) {
  const response = await fetch("/api/share", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Strata-Csrf": csrf },
    body: JSON.stringify({ bucket, key, expires }),
    credentials: "same-origin",
  });
  if (!response.ok) throw await failure(response);
  const field = $("share-link");
  field.value = (await response.json()).url;
  field.hidden = false;
  field.select();
}

// The most of an object a preview reads.
const PREVIEW_BYTES = 256 * 1024;
const TEXT_NAME = /\.(txt|log|json|jsonl|ndjson|csv|tsv|md|yaml|yml|toml|cfg|ini|py|sh|xml)$/i;
const IMAGE_NAME = /\.(png|jpe?g|gif|webp|bmp)$/i;

async function renderPreview(bucket, key, type, length) {
  const out = $("preview");
  out.replaceChildren();
  const path = `/${encodeURIComponent(bucket)}/${keyPath(key)}`;
  if (key.toLowerCase().endsWith(".parquet")) {
    out.append(await parquetSchema(path, length));
    return;
  }
  // An image is shown as an image (which runs nothing); SVG, which can carry script, as text.
  if ((type.startsWith("image/") && type !== "image/svg+xml") || IMAGE_NAME.test(key)) {
    const img = document.createElement("img");
    img.alt = key;
    img.src = `/s3${path}`;
    out.append(img);
    return;
  }
  const texty = type.startsWith("text/") || /json|xml|yaml|csv|svg/.test(type) || TEXT_NAME.test(key);
  if (!texty) {
    out.textContent = "No preview for this kind of object: download it.";
    return;
  }
  let text = "";
  if (length > 0) {
    const range = { Range: `bytes=0-${PREVIEW_BYTES - 1}` };
    text = await (await s3("GET", path, { headers: range })).text();
  }
  if (/json/.test(type) || /\.json$/i.test(key)) {
    try { text = JSON.stringify(JSON.parse(text), null, 2); } catch { /* shown as it is */ }
  }
  const pre = document.createElement("pre");
  pre.textContent = length > PREVIEW_BYTES ? `${text}\n… (the first 256 KiB of ${size(length)})` : text;
  out.append(pre);
}

// --- Parquet: the schema, read from the file's footer ---------------------------------------

// A reader of Thrift's compact protocol, enough to walk Parquet's FileMetaData.
class Compact {
  constructor(bytes) {
    this.bytes = bytes;
    this.at = 0;
  }

  byte() {
    if (this.at >= this.bytes.length) throw new Error("the Parquet footer ends early");
    return this.bytes[this.at++];
  }

  varint() {
    let value = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.byte();
      value |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return value;
      shift += 7n;
    }
  }

  zigzag() {
    const v = this.varint();
    return Number((v >> 1n) ^ -(v & 1n));
  }

  binary() {
    const length = Number(this.varint());
    const start = this.at;
    this.at += length;
    return this.bytes.subarray(start, this.at);
  }

  // A value of a compact type: structs as {fieldId: value}, lists as arrays.
  value(type) {
    switch (type) {
      case 1: return true;
      case 2: return false;
      case 3: return this.byte();
      case 4: case 5: case 6: return this.zigzag();
      case 7: this.at += 8; return null;
      case 8: return this.binary();
      case 9: case 10: return this.list();
      case 11: return this.map();
      case 12: return this.struct();
      default: throw new Error(`not a Parquet footer (type ${type})`);
    }
  }

  list() {
    const header = this.byte();
    let count = header >> 4;
    if (count === 15) count = Number(this.varint());
    const type = header & 0x0f;
    const items = [];
    for (let i = 0; i < count; i += 1) {
      items.push(type === 1 || type === 2 ? this.byte() === 1 : this.value(type));
    }
    return items;
  }

  map() {
    const count = Number(this.varint());
    if (count === 0) return {};
    const types = this.byte();
    for (let i = 0; i < count; i += 1) {
      this.value(types >> 4);
      this.value(types & 0x0f);
    }
    return {};
  }

  struct() {
    const fields = {};
    let id = 0;
    for (;;) {
      const header = this.byte();
      if (header === 0) return fields;
      const delta = header >> 4;
      id = delta === 0 ? this.zigzag() : id + delta;
      fields[id] = this.value(header & 0x0f);
    }
  }
}

const PHYSICAL = ["BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
  "FIXED_LEN_BYTE_ARRAY"];
const REPETITION = ["required", "optional", "repeated"];
const CONVERTED = { 0: "UTF8", 1: "MAP", 3: "LIST", 4: "ENUM", 5: "DECIMAL", 6: "DATE",
  9: "TIMESTAMP_MILLIS", 10: "TIMESTAMP_MICROS", 18: "JSON" };

// The columns of a Parquet object, from its footer: two range reads, never the whole file.
async function parquetSchema(path, length) {
  if (length < 12) throw new Error("too short to be Parquet");
  const tail = new Uint8Array(await (await s3("GET", path, { headers: { Range: "bytes=-8" } }))
    .arrayBuffer());
  if (new TextDecoder().decode(tail.subarray(4)) !== "PAR1") throw new Error("not a Parquet file");
  const footerLength = new DataView(tail.buffer).getUint32(0, true);
  const start = length - 8 - footerLength;
  if (start < 4) throw new Error("the Parquet footer is damaged");
  const range = { Range: `bytes=${start}-${length - 9}` };
  const footer = new Uint8Array(await (await s3("GET", path, { headers: range })).arrayBuffer());
  const meta = new Compact(footer).struct();
  const elements = meta[2] || [];
  const decoder = new TextDecoder();
  const lines = [`${meta[3] ?? "?"} rows`];
  let at = 1;
  // Walks the schema tree: each element names how many children follow it.
  function walk(depth, count) {
    for (let i = 0; i < count && at < elements.length; i += 1) {
      const element = elements[at++];
      const name = element[4] ? decoder.decode(element[4]) : "?";
      const children = element[5] || 0;
      const kind = children ? "group" : PHYSICAL[element[1]] ?? `type ${element[1]}`;
      const converted = CONVERTED[element[6]] ? ` (${CONVERTED[element[6]]})` : "";
      const repetition = REPETITION[element[3]] ?? "";
      lines.push(`${"  ".repeat(depth)}${name}: ${kind}${converted} ${repetition}`.trimEnd());
      walk(depth + 1, children);
    }
  }
  walk(0, elements[0]?.[5] ?? 0);
  const pre = document.createElement("pre");
  pre.textContent = lines.join("\n");
  return pre;
}

// --- Versions --------------------------------------------------------------------------------

async function renderVersions(bucket, key) {
  const rows = $("version-rows");
  rows.replaceChildren();
  const params = { versions: "", prefix: key, "max-keys": 100 };
  const doc = await s3Xml("GET", `/${encodeURIComponent(bucket)}?${query(params)}`);
  const path = `/${encodeURIComponent(bucket)}/${keyPath(key)}`;
  for (const node of Array.from(doc.documentElement.children)) {
    if (!["Version", "DeleteMarker"].includes(node.tagName) || first(node, "Key") !== key) continue;
    const id = first(node, "VersionId");
    const latest = first(node, "IsLatest") === "true";
    const marker = node.tagName === "DeleteMarker";
    const row = rows.insertRow();
    cell(row, `${id}${latest ? " (current)" : ""}`);
    cell(row, when(first(node, "LastModified")));
    cell(row, marker ? "delete marker" : size(first(node, "Size")), "size");
    const actions = cell(row, "");
    if (!marker) {
      const versioned = `${downloadUrl(bucket, key)}&${query({ versionId: id })}`;
      actions.append(link("Download", versioned));
    }
    if (!marker && !latest) {
      actions.append(" ", button("Restore", () => restoreVersion(bucket, key, id)));
    }
    actions.append(" ", button("Delete", async () => {
      if (!confirm(`Delete version ${id} of ${key} for good?`)) return;
      try {
        await s3("DELETE", `${path}?${query({ versionId: id })}`);
        await render();
      } catch (error) {
        report(error);
      }
    }, "danger"));
  }
}

// Makes an older version the current one again: a copy of it onto its key, as S3 has it.
async function restoreVersion(bucket, key, id) {
  try {
    const source = `/${encodeURIComponent(bucket)}/${keyPath(key)}?versionId=${encodeURIComponent(id)}`;
    await s3("PUT", `/${encodeURIComponent(bucket)}/${keyPath(key)}`, {
      headers: { "x-amz-copy-source": source },
    });
    await render();
  } catch (error) {
    report(error);
  }
}

// --- A bucket's settings -----------------------------------------------------------------

const XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/";
let settingsBucket = "";

// A text shown as it is, in an XML document.
function escapeXml(text) {
  return String(text).replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function renderSettings(bucket) {
  settingsBucket = bucket;
  const path = `/${encodeURIComponent(bucket)}`;
  $("settings-title").textContent = `${bucket}: settings`;
  $("settings-browse").textContent = bucket;
  $("settings-browse").href = `#/b/${encodeURIComponent(bucket)}/`;
  $("dry-run").replaceChildren();

  const versioning = first(await s3Xml("GET", `${path}?versioning`), "Status");
  $("versioning-state").textContent = `Versioning is ${versioning ? versioning.toLowerCase() : "off"}.`;
  $("versioning-toggle").textContent = versioning === "Enabled" ? "Suspend versioning" : "Enable versioning";
  $("versioning-toggle").onclick = () => setVersioning(bucket, versioning === "Enabled" ? "Suspended" : "Enabled");

  renderRules(await lifecycleRules(bucket));
  // The tiers rules may name, for the root user (others type the tier's name).
  admin("GET", "/tiers").then((names) => {
    $("tier-names").replaceChildren(...names.map((name) => new Option(name, name)));
  }).catch(() => {});
  await Promise.all([renderEncryption(bucket), renderPublicAccess(bucket), renderCors(bucket)]);

  try {
    const policy = await (await s3("GET", `${path}?policy`)).text();
    $("policy-text").value = JSON.stringify(JSON.parse(policy), null, 2);
  } catch (error) {
    if (error.code !== "NoSuchBucketPolicy") throw error;
    $("policy-text").value = "";
  }
  show("bucket-settings");
}

// A settings document read, or null where the bucket has none (S3's 404 of that setting).
async function setting(bucket, name, missing) {
  try {
    return await s3Xml("GET", `/${encodeURIComponent(bucket)}?${name}`);
  } catch (error) {
    if (error.code === missing) return null;
    throw error;
  }
}

async function renderEncryption(bucket) {
  const doc = await setting(bucket, "encryption", "ServerSideEncryptionConfigurationNotFoundError");
  const form = $("encryption-form");
  form.algorithm.value = doc ? first(doc, "SSEAlgorithm") : "";
  form.key.value = doc ? first(doc, "KMSMasterKeyID") : "";
}

$("encryption-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const path = `/${encodeURIComponent(settingsBucket)}?encryption`;
  try {
    if (!form.algorithm.value) {
      await s3("DELETE", path);
    } else {
      const key = form.algorithm.value === "aws:kms" && form.key.value
        ? `<KMSMasterKeyID>${escapeXml(form.key.value)}</KMSMasterKeyID>` : "";
      const body = `<ServerSideEncryptionConfiguration xmlns="${XMLNS}"><Rule>`
        + `<ApplyServerSideEncryptionByDefault><SSEAlgorithm>${form.algorithm.value}</SSEAlgorithm>`
        + `${key}</ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>`;
      await s3("PUT", path, { body, headers: crc32Header(body) });
    }
    report(null);
    await renderSettings(settingsBucket);
  } catch (error) {
    report(error);
  }
});

async function renderCors(bucket) {
  try {
    const text = await (await s3("GET", `/${encodeURIComponent(bucket)}?cors`)).text();
    $("cors-text").value = text.replace(/^<\?xml[^>]*>\s*/, "");
  } catch (error) {
    if (error.code !== "NoSuchCORSConfiguration") throw error;
    $("cors-text").value = "";
  }
}

$("cors-save").addEventListener("click", async () => {
  const body = $("cors-text").value.trim();
  const parsed = new DOMParser().parseFromString(body, "application/xml");
  if (parsed.getElementsByTagName("parsererror").length > 0) {
    report(new Error("The CORS rules are not well-formed XML."));
    return;
  }
  try {
    await s3("PUT", `/${encodeURIComponent(settingsBucket)}?cors`, { body, headers: crc32Header(body) });
    report(null);
    await renderSettings(settingsBucket);
  } catch (error) {
    report(error);
  }
});

$("cors-delete").addEventListener("click", async () => {
  try {
    await s3("DELETE", `/${encodeURIComponent(settingsBucket)}?cors`);
    await renderSettings(settingsBucket);
  } catch (error) {
    report(error);
  }
});

const PUBLIC_ACCESS = ["BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"];

async function renderPublicAccess(bucket) {
  const doc = await setting(bucket, "publicAccessBlock", "NoSuchPublicAccessBlockConfiguration");
  const form = $("public-access-form");
  for (const name of PUBLIC_ACCESS) {
    form[name].checked = doc ? first(doc, name) === "true" : false;
  }
}

$("public-access-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const path = `/${encodeURIComponent(settingsBucket)}?publicAccessBlock`;
  try {
    if (PUBLIC_ACCESS.every((name) => !form[name].checked)) {
      await s3("DELETE", path);
    } else {
      const fields = PUBLIC_ACCESS.map((name) => `<${name}>${form[name].checked}</${name}>`).join("");
      const body = `<PublicAccessBlockConfiguration xmlns="${XMLNS}">${fields}</PublicAccessBlockConfiguration>`;
      await s3("PUT", path, { body, headers: crc32Header(body) });
    }
    report(null);
    await renderSettings(settingsBucket);
  } catch (error) {
    report(error);
  }
});

async function setVersioning(bucket, status) {
  const body = `<VersioningConfiguration xmlns="${XMLNS}"><Status>${status}</Status></VersioningConfiguration>`;
  try {
    await s3("PUT", `/${encodeURIComponent(bucket)}?versioning`, { body });
    await renderSettings(bucket);
  } catch (error) {
    report(error);
  }
}

// The bucket's lifecycle rules as S3 holds them (each kept whole, as XML).
async function lifecycleRules(bucket) {
  try {
    const doc = await s3Xml("GET", `/${encodeURIComponent(bucket)}?lifecycle`);
    return every(doc, "Rule");
  } catch (error) {
    if (error.code === "NoSuchLifecycleConfiguration") return [];
    throw error;
  }
}

function renderRules(rules) {
  const rows = $("rule-rows");
  rows.replaceChildren();
  for (const rule of rules) {
    const row = rows.insertRow();
    const days = (parent, tag) => {
      const node = rule.getElementsByTagName(parent)[0];
      return node ? `${first(node, tag)} days` : "";
    };
    const filter = rule.getElementsByTagName("Filter")[0];
    cell(row, first(rule, "ID"));
    cell(row, filter ? first(filter, "Prefix") : first(rule, "Prefix"));
    cell(row, first(rule, "Status"));
    cell(row, days("Expiration", "Days"));
    const transition = rule.getElementsByTagName("Transition")[0];
    cell(row, transition ? `${first(transition, "StorageClass")} after ${first(transition, "Days")} days` : "");
    cell(row, days("NoncurrentVersionExpiration", "NoncurrentDays"));
    cell(row, days("AbortIncompleteMultipartUpload", "DaysAfterInitiation"));
    cell(row, button("Delete", () => deleteRule(first(rule, "ID")), "danger"));
  }
}

// The rule the form describes, as S3's XML.
function ruleFromForm(form) {
  const parts = [`<ID>${escapeXml(form.id.value)}</ID>`,
    `<Filter><Prefix>${escapeXml(form.prefix.value)}</Prefix></Filter>`, "<Status>Enabled</Status>"];
  if (form.days.value) parts.push(`<Expiration><Days>${Number(form.days.value)}</Days></Expiration>`);
  if (form.tier.value) {
    parts.push(`<Transition><Days>${Number(form.tierDays.value || 0)}</Days>`
      + `<StorageClass>${escapeXml(form.tier.value)}</StorageClass></Transition>`);
  }
  if (form.noncurrent.value) {
    parts.push(`<NoncurrentVersionExpiration><NoncurrentDays>${Number(form.noncurrent.value)}`
      + "</NoncurrentDays></NoncurrentVersionExpiration>");
  }
  if (form.abort.value) {
    parts.push("<AbortIncompleteMultipartUpload><DaysAfterInitiation>"
      + `${Number(form.abort.value)}</DaysAfterInitiation></AbortIncompleteMultipartUpload>`);
  }
  return `<Rule>${parts.join("")}</Rule>`;
}

function lifecycleXml(rules) {
  const serializer = new XMLSerializer();
  const kept = rules.map((rule) => (typeof rule === "string" ? rule
    : serializer.serializeToString(rule).replace(/ xmlns="[^"]*"/, "")));
  return `<LifecycleConfiguration xmlns="${XMLNS}">${kept.join("")}</LifecycleConfiguration>`;
}

// The CRC32 of a text's UTF-8 bytes, as `x-amz-checksum-crc32` carries it: S3 takes some
// configurations only with a digest of their body (a browser has no MD5 of its own).
function crc32Header(text) {
  let crc = 0xffffffff;
  for (const byte of new TextEncoder().encode(text)) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit += 1) {
      crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
    }
  }
  crc = (crc ^ 0xffffffff) >>> 0;
  const bytes = [crc >>> 24, (crc >>> 16) & 0xff, (crc >>> 8) & 0xff, crc & 0xff];
  return { "x-amz-checksum-crc32": btoa(String.fromCharCode(...bytes)) };
}

async function putRules(bucket, rules) {
  const path = `/${encodeURIComponent(bucket)}?lifecycle`;
  if (rules.length === 0) {
    await s3("DELETE", path);
  } else {
    const body = lifecycleXml(rules);
    await s3("PUT", path, { body, headers: crc32Header(body) });
  }
}

$("rule-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  try {
    const rules = (await lifecycleRules(settingsBucket))
      .filter((rule) => first(rule, "ID") !== form.id.value);
    await putRules(settingsBucket, [...rules, ruleFromForm(form)]);
    form.reset();
    report(null);
    await renderSettings(settingsBucket);
  } catch (error) {
    report(error);
  }
});

async function deleteRule(id) {
  try {
    const rules = (await lifecycleRules(settingsBucket)).filter((rule) => first(rule, "ID") !== id);
    await putRules(settingsBucket, rules);
    await renderSettings(settingsBucket);
  } catch (error) {
    report(error);
  }
}

// What the bucket's rules with the form's would do now and next (the root user's dry run).
$("rule-dry-run").addEventListener("click", async () => {
  const form = $("rule-form");
  const out = $("dry-run");
  out.replaceChildren();
  try {
    const rules = (await lifecycleRules(settingsBucket))
      .filter((rule) => first(rule, "ID") !== form.id.value);
    const plan = await admin("POST", `/lifecycle/dry-run?${query({ bucket: settingsBucket })}`,
      lifecycleXml([...rules, ruleFromForm(form)]));
    const summary = document.createElement("p");
    summary.textContent = `Of ${plan.objects_looked_at} objects looked at, ${plan.due_now_count}`
      + ` would be acted on at the next pass${plan.truncated ? " (at least)" : ""}.`;
    const list = document.createElement("ul");
    for (const item of [...plan.due_now, ...plan.upcoming].slice(0, 20)) {
      const li = document.createElement("li");
      li.textContent = `${item.key}: ${item.action} (rule ${item.rule}, due ${when(item.due_ms)})`;
      list.append(li);
    }
    out.append(summary, list);
  } catch (error) {
    out.textContent = error.status === 403
      ? "Only the root user may run a dry run." : String(error.message);
  }
});

$("policy-save").addEventListener("click", async () => {
  const text = $("policy-text").value;
  try {
    JSON.parse(text);
  } catch (error) {
    report(new Error(`The policy is not JSON: ${error.message}`));
    return;
  }
  try {
    await s3("PUT", `/${encodeURIComponent(settingsBucket)}?policy`, { body: text });
    report(null);
    await renderSettings(settingsBucket);
  } catch (error) {
    report(error);
  }
});

$("policy-delete").addEventListener("click", async () => {
  if (!confirm(`Delete the policy of ${settingsBucket}?`)) return;
  try {
    await s3("DELETE", `/${encodeURIComponent(settingsBucket)}?policy`);
    await renderSettings(settingsBucket);
  } catch (error) {
    report(error);
  }
});

// --- Users and policies (the root user's) ----------------------------------------------

async function renderUsers() {
  $("new-secret").hidden = true;
  show("users");
  let users;
  let policies;
  try {
    [users, policies] = await Promise.all([admin("GET", "/users"), admin("GET", "/policies")]);
  } catch (error) {
    if (error.status === 403) {
      throw new Error("Only the root user manages users and policies.");
    }
    throw error;
  }
  const rows = $("user-rows");
  rows.replaceChildren();
  for (const user of users) {
    const row = rows.insertRow();
    cell(row, user.name);
    cell(row, user.enabled ? "enabled" : "disabled");
    // Each policy with a way to detach it, then a way to attach another.
    const attached = cell(row, "");
    for (const policy of user.policies) {
      attached.append(policy, " ", button("Detach", () => userCall(
        "POST", `/users/detach?${query({ name: user.name, policy })}`)), " ");
    }
    const others = policies.filter((p) => !user.policies.includes(p.name));
    if (others.length > 0) {
      const pick = document.createElement("select");
      pick.setAttribute("aria-label", `A policy to attach to ${user.name}`);
      pick.append(...others.map((p) => new Option(p.name, p.name)));
      attached.append(pick, " ", button("Attach", () => userCall(
        "POST", `/users/attach?${query({ name: user.name, policy: pick.value })}`)));
    }
    const actions = cell(row, button(user.enabled ? "Disable" : "Enable", () => userCall(
      "POST", `/users/${user.enabled ? "disable" : "enable"}?${query({ name: user.name })}`)));
    actions.append(" ", button("Remove", () => {
      if (confirm(`Remove the user ${user.name}?`)) {
        userCall("DELETE", `/users?${query({ name: user.name })}`);
      }
    }, "danger"));
  }
  await renderKeys();
  const select = $("user-form").policy;
  select.replaceChildren(new Option("none", ""));
  const policyRows = $("policy-rows");
  policyRows.replaceChildren();
  for (const policy of policies) {
    select.append(new Option(policy.name, policy.name));
    const row = policyRows.insertRow();
    cell(row, policy.name);
    cell(row, button("Edit", async () => {
      const form = $("policy-form");
      form.name.value = policy.name;
      const document = await admin("GET", `/policies?${query({ name: policy.name })}`);
      form.document.value = JSON.stringify(document, null, 2);
    }));
  }
}

// The built-in key service's keys (when the server runs one).
async function renderKeys() {
  const rows = $("kms-rows");
  rows.replaceChildren();
  let keys;
  try {
    keys = await admin("GET", "/kms/keys");
  } catch (error) {
    $("kms-note").textContent = error.code === "KmsNotConfigured"
      ? "This server runs no key service (STRATA_KMS_SECRET_KEY): SSE-S3 and SSE-KMS are off."
      : String(error.message);
    $("kms-form").hidden = true;
    return;
  }
  $("kms-note").textContent = "Keys of the built-in key service; SSE-KMS names one, SSE-S3 uses the default.";
  $("kms-form").hidden = false;
  for (const key of keys) {
    const row = rows.insertRow();
    cell(row, `${key.name}${key.default ? " (default)" : ""}`);
    cell(row, key.enabled ? "enabled" : "disabled");
    cell(row, when(key.created_ms));
    cell(row, button(key.enabled ? "Disable" : "Enable", () => userCall(
      "POST", `/kms/keys/${key.enabled ? "disable" : "enable"}?${query({ name: key.name })}`)));
  }
}

$("kms-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  try {
    await admin("POST", `/kms/keys?${query({ name: form.name.value })}`);
    form.reset();
    await renderUsers();
  } catch (error) {
    report(error);
  }
});

async function userCall(method, path) {
  try {
    await admin(method, path);
    await renderUsers();
  } catch (error) {
    report(error);
  }
}

$("user-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  try {
    const policies = form.policy.value ? [form.policy.value] : [];
    const added = await admin("POST", `/users?${query({ name: form.name.value })}`,
      JSON.stringify({ policies }));
    form.reset();
    report(null);
    await renderUsers();
    // Shown once: the server keeps only what opens it.
    const notice = $("new-secret");
    notice.textContent = `User ${added.name} created. Its secret key, shown this once: ${added.secret}`;
    notice.hidden = false;
  } catch (error) {
    report(error);
  }
});

$("policy-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  try {
    JSON.parse(form.document.value);
  } catch (error) {
    report(new Error(`The policy is not JSON: ${error.message}`));
    return;
  }
  try {
    await admin("PUT", `/policies?${query({ name: form.name.value })}`, form.document.value);
    form.reset();
    report(null);
    await renderUsers();
  } catch (error) {
    report(error);
  }
});

// --- The deployment (the root user's) ----------------------------------------------------

/** The server pools: one line each, with its sets, what it holds and its space. */
function renderPools(pools) {
  const rows = $("pool-rows");
  rows.replaceChildren();
  for (const pool of pools) {
    const row = rows.insertRow();
    cell(row, String(pool.index + 1));
    cell(row, pool.id);
    cell(row, pool.state, `state-${pool.state}`);
    cell(row, pool.sets.map((s) => s + 1).join(", "));
    cell(row, pool.holds ? String(pool.holds.keys) : "–", "size");
    cell(row, pool.holds ? size(pool.holds.bytes) : "–", "size");
    cell(row, size(pool.free_bytes), "size");
    cell(row, size(pool.total_bytes), "size");
  }
}

async function renderDeployment() {
  show("deployment");
  let info;
  let jobs;
  try {
    [info, jobs] = await Promise.all([admin("GET", "/info"), admin("GET", "/jobs")]);
  } catch (error) {
    if (error.status === 403) throw new Error("Only the root user sees the deployment.");
    throw error;
  }
  $("deployment-state").textContent = info.ready
    ? "Ready: every erasure set can take writes."
    : "Not ready: an erasure set is below its write quorum; writes to it are refused.";
  renderPools(info.pools || []);
  const sets = $("sets");
  sets.replaceChildren();
  for (const set of info.sets) {
    const heading = document.createElement("h2");
    const pool = (info.pools || []).find((p) => p.sets.includes(set.index));
    const inPool = pool && info.pools.length > 1 ? ` (pool ${pool.index + 1})` : "";
    heading.textContent = `Set ${set.index + 1}${inPool}: ${set.data_shards}+${set.parity_shards}, `
      + `${set.online} of ${set.drives.length} drives online (writes need ${set.write_quorum})`;
    const table = document.createElement("table");
    const head = table.createTHead().insertRow();
    for (const title of ["Drive", "State", "Used", "Free", "Total"]) {
      const th = document.createElement("th");
      th.textContent = title;
      head.append(th);
    }
    const body = table.createTBody();
    for (const drive of set.drives) {
      const row = body.insertRow();
      cell(row, drive.path);
      cell(row, drive.state, `state-${drive.state}`);
      const bytes = (n) => (n === null || n === undefined ? "" : size(n));
      cell(row, bytes(drive.used_bytes), "size");
      cell(row, bytes(drive.free_bytes), "size");
      cell(row, bytes(drive.total_bytes), "size");
    }
    sets.append(heading, table);
  }
  renderNodes(info.cluster);
  if (chartTimer === null) startCharts();
  const jobRows = $("job-rows");
  jobRows.replaceChildren();
  for (const job of jobs) {
    const row = jobRows.insertRow();
    cell(row, job.name);
    cell(row, job.interval_secs ? `${job.interval_secs} s` : "");
    cell(row, String(job.passes), "size");
    cell(row, String(job.failures), "size");
    cell(row, job.running ? "running now" : when(job.last_finished_ms));
    cell(row, job.last_outcome ?? "");
  }
  const heal = info.heal;
  // A pass is a heal or a scrub (its reason says which), of everything or of one drive.
  const running = heal.running
    ? `A ${heal.running.reason} pass is running over ${heal.running.scope}: `
      + `${heal.running.report.objects_checked} of ${heal.running.objects_total} objects checked, `
      + `${heal.running.report.objects_healed} healed.`
    : "No heal or scrub pass is running.";
  const last = heal.last
    ? ` The last (${heal.last.reason}) finished ${when(heal.last.finished_ms)}: `
      + `${heal.last.report.objects_checked} objects checked, ${heal.last.report.objects_healed} healed`
      + `${heal.last.error ? `, and it failed: ${heal.last.error}` : ""}.`
    : "";
  $("healing").textContent = `${heal.objects_to_heal} objects wait to be healed. ${running}${last}`;
}

// --- Live request charts: differences of the server's totals, sampled every 2 s ----------

const SAMPLE_EVERY_MS = 2000;
const CHART_POINTS = 60;
let chartTimer = null;
const samples = [];

const CHARTS = [
  { id: "rate", title: "Requests per second", unit: (v) => v.toFixed(1),
    of: (a, b, seconds) => (b.requests - a.requests) / seconds },
  { id: "latency", title: "Mean latency", unit: (v) => `${v.toFixed(1)} ms`,
    of: (a, b) => (b.requests > a.requests ? (b.micros - a.micros) / (b.requests - a.requests) / 1000 : 0) },
  { id: "throughput", title: "Throughput (in + out)", unit: (v) => `${size(v)}/s`,
    of: (a, b, seconds) => (b.received_bytes - a.received_bytes + b.sent_bytes - a.sent_bytes) / seconds },
  { id: "errors", title: "Server errors per second", unit: (v) => v.toFixed(2),
    of: (a, b, seconds) => (b.server_errors - a.server_errors) / seconds },
];

function startCharts() {
  stopCharts();
  samples.length = 0;
  const out = $("charts");
  out.replaceChildren();
  for (const chart of CHARTS) {
    const box = document.createElement("figure");
    box.className = "chart";
    box.id = `chart-${chart.id}`;
    const caption = document.createElement("figcaption");
    caption.textContent = chart.title;
    const value = document.createElement("span");
    value.className = "value";
    value.textContent = "…";
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("width", "260");
    svg.setAttribute("height", "70");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", chart.title);
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    line.setAttribute("fill", "none");
    line.setAttribute("stroke", "#1f5fbf");
    line.setAttribute("stroke-width", "2");
    svg.append(line);
    box.append(caption, value, svg);
    out.append(box);
  }
  sampleRequests();
  chartTimer = setInterval(sampleRequests, SAMPLE_EVERY_MS);
}

function stopCharts() {
  if (chartTimer !== null) clearInterval(chartTimer);
  chartTimer = null;
}

async function sampleRequests() {
  let totals;
  try {
    const response = await fetch("/api/requests", { credentials: "same-origin" });
    if (!response.ok) {
      stopCharts();
      $("charts").textContent = "Request charts are the root user's.";
      return;
    }
    totals = await response.json();
  } catch {
    return;
  }
  samples.push({ at: Date.now(), totals });
  if (samples.length > CHART_POINTS + 1) samples.shift();
  if (samples.length < 2) return;
  for (const chart of CHARTS) {
    const values = [];
    for (let i = 1; i < samples.length; i += 1) {
      const seconds = Math.max((samples[i].at - samples[i - 1].at) / 1000, 0.001);
      values.push(Math.max(chart.of(samples[i - 1].totals, samples[i].totals, seconds), 0));
    }
    const box = $(`chart-${chart.id}`);
    if (!box) return;
    box.querySelector(".value").textContent = chart.unit(values[values.length - 1]);
    const top = Math.max(...values, 1e-9);
    const points = values.map((v, i) => `${(i / (CHART_POINTS - 1)) * 258 + 1},${68 - (v / top) * 64}`);
    box.querySelector("polyline").setAttribute("points", points.join(" "));
  }
}

// The nodes of a cluster, as its control plane knows them (nothing for a single server).
function renderNodes(cluster) {
  const out = $("nodes");
  out.replaceChildren();
  if (!cluster) return;
  const heading = document.createElement("h2");
  heading.textContent = `Nodes (answered by ${cluster.this_node})`;
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const title of ["Node", "State", "Version", "Started"]) {
    const th = document.createElement("th");
    th.textContent = title;
    head.append(th);
  }
  const body = table.createTBody();
  for (const node of cluster.nodes) {
    const row = body.insertRow();
    cell(row, node.node);
    cell(row, node.state, `state-${node.state === "up" ? "online" : "offline"}`);
    cell(row, node.version ?? "");
    cell(row, node.started ? when(node.started * 1000) : "");
  }
  out.append(heading, table);
  if (cluster.etcd_reachable === false) {
    const warning = document.createElement("p");
    warning.className = "error";
    warning.textContent = "This node does not reach etcd: node states are unknown.";
    out.append(warning);
  }
}

// --- Start -------------------------------------------------------------------------------

async function render() {
  if (!csrf) return;
  const { kind, bucket, path } = route();
  report(null);
  if (kind !== "deployment") stopCharts();
  try {
    if (kind === "b" && bucket) {
      await renderObjects(bucket, path);
    } else if (kind === "o" && bucket) {
      await renderDetails(bucket, path);
    } else if (kind === "s" && bucket) {
      await renderSettings(bucket);
    } else if (kind === "users") {
      await renderUsers();
    } else if (kind === "deployment") {
      await renderDeployment();
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
