// The admin console in a real browser: Debian's Chromium, headless, driven by Playwright
// (playwright-core, pinned in package-lock.json) against a live `corral serve --admin`.
//
//   node console.test.mjs CORRAL_BIN PLUGIN_DIST SCREENSHOT_DIR
//
// The host serves the example plugins `ticker` (progress) and `hash` (a CPU-bound hash chain)
// from a directory of its own, plus a copy of `text` that the test "rebuilds" on disk. Each
// step waits for what the page shows (Playwright's auto-waiting locators), never for a time.
// That a cancelled spinning task stopped is read from the host's CPU time in /proc, not from
// how long anything took.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const [corral, dist, shots] = process.argv.slice(2);
if (!corral || !dist || !shots) {
  console.error("usage: node console.test.mjs CORRAL_BIN PLUGIN_DIST SCREENSHOT_DIR");
  process.exit(2);
}
mkdirSync(shots, { recursive: true });
const TOKEN = "console-test-" + createHash("sha256").update(String(process.pid)).digest("hex").slice(0, 24);
const TIMEOUT = 60_000;

function log(...what) {
  console.log("[console]", ...what);
}

// ---- the host -------------------------------------------------------------------------------

const work = mkdtempSync(join(tmpdir(), "corral-console-"));
const plugins = join(work, "plugins");
mkdirSync(plugins);
for (const name of ["ticker", "hash", "text"]) copyFileSync(join(dist, name + ".wasm"), join(plugins, name + ".wasm"));
// The hash chain may spin for minutes: enough fuel and time that only a cancel stops it.
writeFileSync(join(plugins, "hash.toml"), '[limits]\nfuel = 1000000000000000\ntimeout = "10m"\ntask-timeout = "10m"\n');
writeFileSync(join(work, "admin-tokens"), `ops ${TOKEN}\n`);

const host = spawn(corral, [
  "serve", "--plugins", plugins, "--http", "127.0.0.1:0", "--db", join(work, "tasks.db"),
  "--admin", "127.0.0.1:0", "--admin-tokens-file", join(work, "admin-tokens"),
], { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, NO_COLOR: "1", RUST_LOG: "info" } });
let stderr = "";
const ready = new Promise((resolve, reject) => {
  const found = {};
  host.stderr.on("data", (chunk) => {
    stderr += chunk;
    const mcp = /serving MCP over HTTP at (\S+)/.exec(stderr);
    const admin = /serving the admin console at (\S+)/.exec(stderr);
    if (mcp && admin && !found.done) {
      found.done = true;
      resolve({ mcp: mcp[1], admin: admin[1].replace(/\/$/, "") });
    }
  });
  host.on("exit", (code) => reject(new Error(`corral exited (${code}) before listening:\n${stderr}`)));
});
const { mcp, admin } = await ready;
log("host", host.pid, "MCP at", mcp, "console at", admin);

// ---- a minimal MCP client over Streamable HTTP ---------------------------------------------------

let session = null;
let nextId = 1;
async function rpc(method, params) {
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  if (session) {
    headers["mcp-session-id"] = session;
    headers["mcp-protocol-version"] = "2025-11-25";
  }
  const id = nextId++;
  const response = await fetch(mcp, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id, method, params }) });
  session = response.headers.get("mcp-session-id") || session;
  const text = await response.text();
  // A JSON body, or an SSE stream whose `data:` lines hold the answer.
  const messages = text.startsWith("{") ? [JSON.parse(text)] : text.split("\n").filter((l) => l.startsWith("data:")).map((l) => JSON.parse(l.slice(5)));
  const answer = messages.find((m) => m.id === id);
  assert.ok(answer && answer.result, `${method}: ${text}`);
  return answer.result;
}
async function notify(method) {
  await fetch(mcp, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }, body: JSON.stringify({ jsonrpc: "2.0", method }) });
}
await rpc("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "console-test", version: "1" } });
await notify("notifications/initialized");
async function startTask(name, args) {
  const created = await rpc("tools/call", { name, arguments: args, task: { ttl: 600000 } });
  return created.task.taskId;
}

// The host's CPU time so far, in clock ticks (utime + stime of /proc/PID/stat).
function cpuTicks() {
  const stat = readFileSync(`/proc/${host.pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}
// CPU ticks the host spends while `ms` pass.
async function cpuOver(ms) {
  const before = cpuTicks();
  await new Promise((r) => setTimeout(r, ms));
  return cpuTicks() - before;
}

// ---- the browser -------------------------------------------------------------------------------

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let failed = false;
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "light" });
  context.setDefaultTimeout(TIMEOUT);
  const page = await context.newPage();
  page.on("pageerror", (e) => { failed = true; console.error("[console] page error:", e.message); });
  // Nothing but the host itself is ever asked (no CDN, no fonts).
  const foreign = [];
  page.on("request", (r) => { if (!r.url().startsWith(admin)) foreign.push(r.url()); });

  // 1. An unauthenticated visit is refused: 401, the sign-in form, no data.
  const visit = await page.goto(admin + "/");
  assert.equal(visit.status(), 401, "the console page answers 401 without a sign-in");
  await page.getByLabel("Admin token").waitFor();
  assert.equal(await page.locator("#app").isHidden(), true);
  const api = await page.evaluate(async () => (await fetch("/api/tasks")).status);
  assert.equal(api, 401, "the API refuses the page without a sign-in");
  await page.screenshot({ path: join(shots, "signin.png") });
  // A wrong token is refused on the page.
  await page.getByLabel("Admin token").fill("not-the-token");
  await page.getByLabel("Admin token").press("Enter");
  await page.getByText("invalid admin token").waitFor();
  log("1. unauthenticated visit refused");

  // 2. Signing in with the keyboard; the page goes live.
  await page.getByLabel("Admin token").fill(TOKEN);
  await page.getByLabel("Admin token").press("Enter");
  await page.locator("#live").filter({ hasText: "live" }).waitFor();
  await page.locator("#tasks-empty").filter({ hasText: "No tasks yet" }).waitFor();
  log("2. signed in");

  // 3. A task's progress moves, then it turns completed.
  const tick = await startTask("tick", { count: 12, interval_ms: 250 });
  const tickRow = page.locator(`tr[data-task-id="${tick}"]`);
  const bar = tickRow.locator("progress");
  await tickRow.locator(".badge", { hasText: "working" }).waitFor();
  await page.waitForFunction((id) => Number(document.querySelector(`tr[data-task-id="${id}"] progress`)?.getAttribute("value")) >= 2, tick);
  const first = Number(await bar.getAttribute("value"));
  await page.waitForFunction(([id, v]) => Number(document.querySelector(`tr[data-task-id="${id}"] progress`)?.getAttribute("value")) > v, [tick, first]);
  const later = Number(await bar.getAttribute("value"));
  assert.ok(later > first, `progress moved: ${first} → ${later}`);
  assert.equal(await bar.getAttribute("max"), "12");
  await tickRow.locator(".message", { hasText: /tick \d+\/12/ }).first().waitFor();
  await page.screenshot({ path: join(shots, "progress.png") });
  await tickRow.locator(".badge", { hasText: "completed" }).waitFor();
  assert.equal(await tickRow.locator("[data-label=Tool]").innerText().then((t) => t.includes("tick")), true);
  assert.match(await tickRow.locator("[data-label=Plugin]").innerText(), /ticker/);
  log("3. progress", first, "→", later, "then completed");

  // 4. A spinning task cancelled from the console stops: the host's CPU falls.
  const spin = await startTask("hash_chain", { input: "spin", rounds: 100000000 });
  const spinRow = page.locator(`tr[data-task-id="${spin}"]`);
  await spinRow.locator(".badge", { hasText: "working" }).waitFor();
  const spinning = await cpuOver(1500);
  await page.screenshot({ path: join(shots, "console.png") });
  // With the keyboard: a reason, then focus the row's Cancel button and press Enter.
  await page.getByLabel("Reason for a cancel").fill("spinning in the console test");
  await spinRow.getByRole("button", { name: /Cancel task/ }).focus();
  await page.keyboard.press("Enter");
  await spinRow.locator(".badge", { hasText: "cancelled" }).waitFor();
  // The engine has stopped the guest once the task is stored cancelled and the worker is
  // free; give it the same window to show.
  const stopped = await cpuOver(1500);
  log("4. CPU ticks over the same window: spinning", spinning, "after cancel", stopped);
  assert.ok(spinning >= 20, `the spinning guest kept the host busy (${spinning} ticks)`);
  assert.ok(stopped * 4 < spinning, `the host's CPU fell after the cancel (${spinning} → ${stopped} ticks)`);
  const stored = await rpc("tasks/get", { taskId: spin });
  assert.equal(stored.status, "cancelled");
  // Its client is told who cancelled it and why, not that it cancelled it itself.
  assert.equal(stored.statusMessage, "cancelled by operator ops from the console: spinning in the console test");

  // 5. A plugin rebuilt on disk shows its new digest after a reload.
  await page.keyboard.press("2");
  const card = page.locator('article[data-plugin="text"]');
  await card.waitFor();
  const oldDigest = await card.getAttribute("data-digest");
  const original = readFileSync(join(plugins, "text.wasm"));
  assert.equal(oldDigest, "sha256:" + createHash("sha256").update(original).digest("hex"));
  // "Rebuilt": the same component with a build-id custom section appended (id 0, a name, a payload).
  const name = Buffer.from("corral-console-test-build");
  const payload = Buffer.from(String(Date.now()));
  const body = Buffer.concat([Buffer.from([name.length]), name, payload]);
  const rebuilt = Buffer.concat([original, Buffer.from([0, body.length]), body]);
  writeFileSync(join(plugins, "text.wasm"), rebuilt);
  const newDigest = "sha256:" + createHash("sha256").update(rebuilt).digest("hex");
  await page.getByRole("button", { name: "Reload plugins" }).click();
  await page.waitForFunction((d) => document.querySelector('article[data-plugin="text"]')?.dataset.digest === d, newDigest);
  await page.locator("#reload-status", { hasText: "reloaded" }).waitFor();
  await page.screenshot({ path: join(shots, "plugins.png") });
  log("5. digest", oldDigest.slice(0, 19), "→", newDigest.slice(0, 19));

  // The other views, and a narrow screen.
  await page.keyboard.press("3");
  await page.locator('tr[data-tool="tick"]').waitFor();
  await page.screenshot({ path: join(shots, "tools.png") });
  await page.keyboard.press("4");
  await page.getByText("keeps its tasks in SQLite").waitFor();
  await page.keyboard.press("5");
  await page.locator("#sessions tbody tr").first().waitFor();
  await page.keyboard.press("1");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(shots, "narrow.png"), fullPage: true });
  assert.deepEqual(foreign, [], "the console asked nothing but its host");
  assert.equal(failed, false, "no script error on the page");
  log("passed; screenshots in", shots);
} catch (e) {
  failed = true;
  console.error("[console] FAILED:", e);
  console.error("[console] host stderr:\n" + stderr.split("\n").slice(-40).join("\n"));
} finally {
  await browser.close();
  host.kill("SIGTERM");
}
process.exit(failed ? 1 : 0);
