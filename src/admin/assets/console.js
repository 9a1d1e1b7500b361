// corral console: reads the admin API, stays live through /api/events. No dependencies.
// Every value from the host goes in through textContent, never as markup.
"use strict";

const state = { csrf: null, view: "tasks", tasks: new Map(), next: null, filter: "", events: null };
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function api(path, options = {}) {
  const init = { credentials: "same-origin", headers: {}, ...options };
  if (init.method && init.method !== "GET") {
    init.headers["content-type"] = "application/json";
    if (state.csrf) init.headers["x-corral-csrf"] = state.csrf;
    if (!init.body) init.body = "{}";
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, "the host did not answer (" + e.message + ")");
  }
  const text = await response.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (_) { body = null; }
  if (!response.ok) {
    const message = body && body.error ? body.error.message : response.status + " " + response.statusText;
    if (response.status === 401 && path !== "/api/login") showSignIn(message);
    throw new ApiError(response.status, message);
  }
  return body;
}

function showError(message) {
  const banner = $("error");
  banner.textContent = message || "";
  banner.hidden = !message;
}

// ---- signing in ------------------------------------------------------------------------------

function showSignIn(message) {
  if (state.events) { state.events.close(); state.events = null; }
  $("app").hidden = true;
  $("who").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = message && !message.startsWith("not signed in") ? message : "";
  setLive("offline", "");
  $("token").focus();
}

async function start() {
  try {
    const session = await api("/api/session");
    signedIn(session);
  } catch (e) {
    if (e.status !== 401) { showSignIn(e.message); }
  }
}

function signedIn(session) {
  state.csrf = session.csrf;
  $("signin").hidden = true;
  $("app").hidden = false;
  $("who").hidden = false;
  $("who-name").textContent = "signed in as " + session.who;
  connect();
  refreshAll();
}

$("signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const token = $("token").value;
  try {
    const session = await api("/api/login", { method: "POST", body: JSON.stringify({ token }) });
    $("token").value = "";
    signedIn(session);
  } catch (e) {
    $("signin-error").textContent = e.message;
  }
});

$("logout").addEventListener("click", async () => {
  try { await api("/api/logout", { method: "POST" }); } catch (_) { /* signed out either way */ }
  state.csrf = null;
  showSignIn("");
});

// ---- live updates ------------------------------------------------------------------------------

function setLive(text, kind) {
  const live = $("live");
  live.textContent = text;
  live.className = "status " + kind;
}

function connect() {
  if (state.events) state.events.close();
  const events = new EventSource("/api/events");
  state.events = events;
  events.addEventListener("hello", () => setLive("live", "live"));
  events.addEventListener("tasks", (e) => {
    const changed = JSON.parse(e.data).data.changed;
    if (state.filter) { loadTasks(); return; }
    for (const row of changed) state.tasks.set(row.id, row);
    renderTasks();
  });
  events.addEventListener("plugins", () => loadPlugins());
  events.addEventListener("figures", (e) => {
    const data = JSON.parse(e.data).data;
    renderTools(data.tools);
    renderSessions(data.sessions);
  });
  events.addEventListener("resync", () => refreshAll());
  events.onerror = async () => {
    setLive("reconnecting…", "down");
    // An event stream refused for a lost sign-in retries forever: ask why once.
    try { await api("/api/session"); } catch (_) { /* showSignIn ran for a 401 */ }
  };
}

function refreshAll() {
  loadTasks();
  loadPlugins();
  loadTools();
  loadReplicas();
  loadSessions();
}

// ---- views -------------------------------------------------------------------------------------

const views = ["tasks", "plugins", "tools", "replicas", "sessions"];

function select(view, focus) {
  state.view = view;
  for (const name of views) {
    const tab = $("tab-" + name);
    const on = name === view;
    tab.setAttribute("aria-selected", on ? "true" : "false");
    tab.tabIndex = on ? 0 : -1;
    $("view-" + name).hidden = !on;
    if (on && focus) tab.focus();
  }
  if (view === "replicas") loadReplicas();
}

document.querySelector("nav").addEventListener("click", (e) => {
  const tab = e.target.closest("[data-view]");
  if (tab) select(tab.dataset.view, false);
});
document.querySelector("nav").addEventListener("keydown", (e) => {
  const i = views.indexOf(state.view);
  if (e.key === "ArrowRight") select(views[(i + 1) % views.length], true);
  else if (e.key === "ArrowLeft") select(views[(i + views.length - 1) % views.length], true);
  else return;
  e.preventDefault();
});
document.addEventListener("keydown", (e) => {
  if ($("app").hidden || e.ctrlKey || e.metaKey || e.altKey) return;
  if (["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName)) return;
  const n = Number(e.key);
  if (n >= 1 && n <= views.length) select(views[n - 1], true);
});

function empty(id, message) {
  const p = $(id + "-empty");
  p.textContent = message || "";
  p.hidden = !message;
  const table = $(id);
  if (table && table.tagName === "TABLE") table.hidden = !!message;
}

function cell(label, ...content) {
  return el("td", { "data-label": label }, ...content);
}

function duration(ms) {
  if (ms === null || ms === undefined) return "–";
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
  if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
  return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
}

function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}

// A latency percentile: the upper bound of its histogram bucket.
function latency(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms >= 1000) return "≤ " + (ms / 1000).toFixed(2) + " s";
  return "≤ " + (ms >= 10 ? ms.toFixed(0) : ms.toFixed(2)) + " ms";
}

function number(n) {
  return n === null || n === undefined ? "–" : Math.round(n).toLocaleString("en");
}

// Tasks

function filterQuery() {
  const form = new FormData($("filters"));
  const params = new URLSearchParams();
  for (const [k, v] of form.entries()) if (String(v).trim()) params.set(k, String(v).trim());
  return params.toString();
}

async function loadTasks(more) {
  state.filter = filterQuery();
  const params = new URLSearchParams(state.filter);
  if (more && state.next !== null) params.set("before", state.next);
  try {
    const page = await api("/api/tasks" + (params.toString() ? "?" + params : ""));
    if (!more) state.tasks.clear();
    for (const row of page.tasks) state.tasks.set(row.id, row);
    state.next = page.next;
    showError("");
    renderTasks();
  } catch (e) {
    if (e.status !== 401) showError("Tasks: " + e.message);
  }
}

$("filters").addEventListener("submit", (e) => { e.preventDefault(); loadTasks(); });
$("filters").addEventListener("reset", () => setTimeout(() => loadTasks(), 0));
$("more").addEventListener("click", () => loadTasks(true));

function progressCell(row) {
  const parts = [];
  if (row.progress && row.progress.total) {
    const label = Math.round(row.progress.progress) + " of " + Math.round(row.progress.total);
    parts.push(el("progress", { value: row.progress.progress, max: row.progress.total, "aria-label": label }), " ", el("span", { class: "mono" }, label));
  } else if (row.progress) {
    parts.push(el("progress", { "aria-label": "working" }), " ", el("span", { class: "mono" }, number(row.progress.progress)));
  } else if (row.status === "working") {
    parts.push(el("progress", { "aria-label": "working" }));
  } else if (row.status === "completed") {
    parts.push(el("progress", { value: 1, max: 1, "aria-label": "done" }));
  }
  if (row.message) parts.push(el("span", { class: "message" }, row.message));
  if (row.failure) parts.push(el("span", { class: "message error" }, "failure: " + row.failure));
  return parts;
}

function renderTasks() {
  const rows = [...state.tasks.values()].sort((a, b) => b.seq - a.seq);
  const tbody = $("tasks").querySelector("tbody");
  tbody.replaceChildren(...rows.map((row) => {
    const unfinished = row.status === "working" || row.status === "input_required";
    const questions = (row.questions || []).map((q) => el("span", { class: "message" }, q));
    return el("tr", { "data-task-id": row.id, "data-status": row.status },
      cell("Status", el("span", { class: "badge " + row.status }, row.status.replace("_", " "))),
      cell("Progress", ...progressCell(row)),
      cell("Tool", el("span", { class: "mono" }, row.tool)),
      cell("Plugin", row.plugin || "–"),
      cell("Owner", el("span", { class: "mono" }, row.owner)),
      cell("Age", duration(row.age_ms)),
      cell("Duration", duration(row.duration_ms)),
      cell("Attempts", String(row.attempts)),
      cell("Checkpoint", row.checkpoint ? "#" + row.checkpoint + (row.resumed_from ? " (resumed from #" + row.resumed_from + ")" : "") : "–"),
      cell("Questions", questions.length ? questions : (row.status === "input_required" ? "waiting" : "–")),
      cell("Actions", unfinished ? el("button", { type: "button", class: "danger", "data-cancel": row.id, "aria-label": "Cancel task " + row.id + " (" + row.tool + ")", onclick: () => cancelTask(row.id) }, "Cancel") : ""));
  }));
  $("more").hidden = state.next === null || state.next === undefined;
  empty("tasks", rows.length ? "" : state.filter ? "No task matches these filters." : "No tasks yet: tasks appear here when a client calls a tool as a task.");
}

async function cancelTask(id) {
  const button = document.querySelector('[data-cancel="' + CSS.escape(id) + '"]');
  if (button) button.disabled = true;
  try {
    const reason = $("cancel-reason").value.trim();
    const body = JSON.stringify(reason ? { reason } : {});
    const row = await api("/api/tasks/" + encodeURIComponent(id) + "/cancel", { method: "POST", body });
    state.tasks.set(row.id, row);
    showError("");
    renderTasks();
  } catch (e) {
    showError("Cancel: " + e.message);
    if (button) button.disabled = false;
  }
}

// Plugins

async function loadPlugins() {
  try {
    const body = await api("/api/plugins");
    renderPlugins(body);
  } catch (e) {
    if (e.status !== 401) empty("plugins", "Plugins could not be read: " + e.message);
  }
}

function dl(pairs) {
  return el("dl", {}, pairs.filter((p) => p).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

function renderPlugins(body) {
  const cards = body.plugins.map((p) => el("article", { class: "card", "data-plugin": p.name, "data-digest": p.digest || "" },
    el("h3", {}, p.name, " ", el("span", { class: "badge " + (p.state === "loaded" ? "completed" : "failed") }, p.state)),
    dl([
      ["Source", p.source.kind === "oci" ? el("span", { class: "mono" }, p.source.reference) : el("span", { class: "mono" }, p.source.directory)],
      ["Digest", el("span", { class: "mono digest" }, p.digest || "–")],
      p.source.kind === "oci" ? ["Signature", p.source.signed ? el("span", { class: "mono" }, "verified, key " + p.source.key) : "unsigned"] : null,
      ["Contract", p.contract || "–"],
      ["Compiled in", p.compile_ms === null ? "–" : p.compile_ms.toFixed(1) + " ms"],
      p.grants ? ["Grants", [p.grants.dirs.length ? "dirs " + p.grants.dirs.join(", ") : "", p.grants.env.length ? "env " + p.grants.env.join(", ") : "", p.grants.network.length ? "network " + p.grants.network.join(", ") : ""].filter(Boolean).join("; ") || "none"] : null,
      p.limits ? ["Limits", "timeout " + duration(p.limits.timeout_ms) + ", task " + duration(p.limits.task_timeout_ms) + ", fuel " + number(p.limits.fuel) + ", memory " + bytes(p.limits.memory) + ", " + p.limits.max_concurrency + " at once"] : null,
      ["Tools", p.tools.length ? p.tools.join(", ") : "none"],
      p.refusal ? ["Refused", el("span", { class: "error" }, p.refusal.kind + ": " + p.refusal.message)] : null,
    ])));
  $("plugins").replaceChildren(...cards);
  empty("plugins", cards.length ? "" : body.loaded ? "No plugins: put .wasm files in the plugin directory and reload." : "The plugins are still loading…");
}

$("reload").addEventListener("click", async () => {
  const button = $("reload");
  button.disabled = true;
  $("reload-status").textContent = "reloading…";
  try {
    const body = await api("/api/plugins/reload", { method: "POST" });
    renderPlugins({ loaded: true, plugins: body.plugins });
    $("reload-status").textContent = body.changed ? "reloaded: what is served changed" : "reloaded: nothing changed";
  } catch (e) {
    $("reload-status").textContent = "reload failed: " + e.message;
  } finally {
    button.disabled = false;
  }
});

// Tools

async function loadTools() {
  try { renderTools((await api("/api/tools")).tools); } catch (e) { if (e.status !== 401) empty("tools", "Tools could not be read: " + e.message); }
}

function renderTools(tools) {
  $("tools").querySelector("tbody").replaceChildren(...tools.map((t) => el("tr", { "data-tool": t.name },
    cell("Tool", el("span", { class: "mono" }, t.name)),
    cell("Plugin", t.plugin || "(no longer served)"),
    cell("Calls", number(t.calls)),
    cell("Errors", Object.keys(t.errors).length ? Object.entries(t.errors).map(([k, n]) => k + " " + n).join(", ") : "none"),
    cell("p50", latency(t.p50_ms)),
    cell("p99", latency(t.p99_ms)),
    cell("Fuel", t.fuel_consumed === null ? "–" : number(t.fuel_consumed)),
    cell("Peak memory", bytes(t.peak_memory)))));
  empty("tools", tools.length ? "" : "No tools are served and none has been called.");
}

// Replicas

async function loadReplicas() {
  try {
    const body = await api("/api/replicas");
    $("replicas").querySelector("tbody").replaceChildren(...body.replicas.map((r) => el("tr", {},
      cell("Replica", el("span", { class: "mono" }, r.id + (r.id === body.this ? " (this host)" : ""))),
      cell("Heartbeat age", duration(r.heartbeat_age_ms)),
      cell("Up", duration(r.up_ms)),
      cell("Tasks held", String(r.tasks_held)))));
    empty("replicas", !body.shared ? "This host keeps its tasks in SQLite: there are no replicas to show (they share a PostgreSQL store)." : body.replicas.length ? "" : "No replica is registered.");
  } catch (e) {
    if (e.status !== 401) empty("replicas", "Replicas could not be read: " + e.message);
  }
}

// Sessions

async function loadSessions() {
  try { renderSessions((await api("/api/sessions")).sessions); } catch (e) { if (e.status !== 401) empty("sessions", "Sessions could not be read: " + e.message); }
}

function renderSessions(sessions) {
  const now = Date.now();
  $("sessions").querySelector("tbody").replaceChildren(...sessions.map((s) => el("tr", {},
    cell("Principal", el("span", { class: "mono" }, s.principal)),
    cell("Client", s.client || "(not initialized)"),
    cell("Protocol", s.protocol_version || "–"),
    cell("Open for", duration(now - s.opened_at)),
    cell("In flight", String(s.in_flight)))));
  empty("sessions", sessions.length ? "" : "No MCP session is open (2026-07-28 clients make none: each request stands alone).");
}

start();
