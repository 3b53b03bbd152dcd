// The console's behaviour: reads /titles (and /ui/api/inspect) with the key the user gives, follows
// running titles live over /titles/{id}/stream, and shows client and upstream bodies side by side.
// Every value from the server is set as text, never as HTML.
"use strict";

const REFRESH_MS = 2000;
const rows = new Map(); // conversation id → { tr, following }
let key = "";
let selected = null;

function $(id) { return document.getElementById(id); }

function headers() {
  return key ? { Authorization: "Bearer " + key } : {};
}

async function api(path) {
  const response = await fetch(path, { headers: headers(), cache: "no-store" });
  if (!response.ok) throw new Error(path + " answered " + response.status);
  return response.json();
}

function cell(tr, cls, text) {
  const td = document.createElement("td");
  td.className = cls;
  td.textContent = text;
  tr.appendChild(td);
  return td;
}

function setStatus(entry, status, error) {
  entry.tr.className = status;
  const badge = entry.tr.querySelector(".status .badge");
  badge.className = "badge " + status;
  badge.textContent = status;
  badge.title = error || "";
}

function upsert(record) {
  let entry = rows.get(record.id);
  if (!entry) {
    const tr = document.createElement("tr");
    tr.dataset.conversation = record.id;
    cell(tr, "title", "");
    const status = cell(tr, "status", "");
    const badge = document.createElement("span");
    badge.className = "badge";
    status.appendChild(badge);
    cell(tr, "harness", record.harness);
    cell(tr, "protocol", record.protocol || "chat");
    cell(tr, "model muted", record.model);
    cell(tr, "created muted", new Date(record.created_at).toLocaleString());
    entry = { tr, following: false, live: "" };
    rows.set(record.id, entry);
  }
  // A title being followed shows its live text until the stream says it is done.
  if (!(entry.following && record.status === "pending")) {
    entry.tr.querySelector(".title").textContent = record.title || (record.status === "failed" ? "(no title)" : entry.live);
    setStatus(entry, record.status, record.error);
  }
  if (record.status === "pending" && !entry.following) follow(record.id, entry);
  return entry.tr;
}

// Reads the title's SSE stream: `delta` events append text, `done` / `error` settle the row.
async function follow(id, entry) {
  entry.following = true;
  entry.live = ""; // the stream replays what was already streamed
  setStatus(entry, "pending");
  try {
    const response = await fetch("/titles/" + encodeURIComponent(id) + "/stream", { headers: headers() });
    if (!response.ok || !response.body) throw new Error("stream answered " + response.status);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        handleEvent(entry, buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  } catch (err) {
    $("status-line").textContent = String(err);
  } finally {
    entry.following = false;
  }
}

function handleEvent(entry, block) {
  let name = "message";
  let data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data += line.slice(5).trim();
  }
  const payload = data ? JSON.parse(data) : {};
  const title = entry.tr.querySelector(".title");
  if (name === "delta") {
    entry.live += payload.text || "";
    title.textContent = entry.live;
  } else if (name === "done") {
    title.textContent = payload.title;
    setStatus(entry, "done");
  } else if (name === "error") {
    title.textContent = "(no title)";
    setStatus(entry, "failed", payload.error);
  }
}

async function refreshConversations() {
  const list = await api("/titles?limit=100");
  const body = $("conversation-rows");
  const order = list.data.map(upsert);
  order.forEach((tr) => body.appendChild(tr)); // newest first, as listed
  $("no-conversations").hidden = order.length > 0;
}

function pretty(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (_) { return text; }
}

function showDetail(entry) {
  selected = entry.id;
  for (const li of $("requests").children) li.classList.toggle("selected", li.dataset.request === entry.id);
  for (const side of ["client", "upstream"]) {
    const part = entry[side];
    $(side + "-path").textContent = part.path;
    $(side + "-headers").textContent = part.headers.map(([k, v]) => k + ": " + v).join("\n");
    $(side + "-body").textContent = pretty(part.body) + (part.truncated ? "\n… (cut at inspect.max_body_bytes)" : "");
  }
  // What the harness did with the client's tools, as the response headers name them.
  const tools = [["dropped tools", entry.dropped_tools], ["passed-through tools", entry.passthrough_tools]]
    .filter(([, names]) => names && names.length)
    .map(([what, names]) => "(" + what + ") " + names.join(", "));
  if (tools.length) $("upstream-headers").textContent += "\n" + tools.join("\n");
  $("detail").hidden = false;
}

async function refreshRequests() {
  const list = await api("/ui/api/inspect");
  $("inspect-off").hidden = list.enabled;
  const ol = $("requests");
  ol.replaceChildren();
  for (const entry of list.data) {
    const li = document.createElement("li");
    li.dataset.request = entry.id;
    li.textContent = new Date(entry.at).toLocaleTimeString() + "  " + entry.protocol + " → " + entry.harness +
      "  " + entry.conversation_id;
    li.addEventListener("click", () => showDetail(entry));
    ol.appendChild(li);
    if (entry.id === selected) li.classList.add("selected");
  }
  if (!selected && list.data.length > 0) showDetail(list.data[0]);
}

async function refresh() {
  try {
    await Promise.all([refreshConversations(), refreshRequests()]);
    $("status-line").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (err) {
    $("status-line").textContent = String(err);
  }
}

function start() {
  // `/ui#key=…` hands the key over without sending it anywhere; it is then taken off the URL.
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("key");
  if (fromHash) {
    sessionStorage.setItem("harness-proxy-key", fromHash);
    history.replaceState(null, "", location.pathname);
  }
  key = sessionStorage.getItem("harness-proxy-key") || "";
  $("key").value = key;
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    key = $("key").value.trim();
    sessionStorage.setItem("harness-proxy-key", key);
    rows.clear();
    $("conversation-rows").replaceChildren();
    selected = null;
    $("detail").hidden = true;
    refresh();
  });
  refresh();
  setInterval(refresh, REFRESH_MS);
}

start();
