// The dashboard end to end (run by tests/cli/dashboard.sh): snd on
// 127.0.0.1 with examples/h100-superpod-4su.yaml (4 supernodes, 128 servers,
// 1,024 GPUs), one simulated agent, a cordoned GPU and pending jobs; the
// page must show 4 supernode tiles whose GPUs add up to the cluster's, the
// right counts, the zoomed-in supernode's servers and GPUs, and a clicked
// GPU's findings and telemetry. Every process is stopped by its pid.
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const bin = path.resolve(process.argv[2]);
const spec = "examples/h100-superpod-4su.yaml";
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sn-dash-"));
const procs = [];

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
  console.log("ok - " + what);
}

function startSnd() {
  const ready = path.join(dir, "ready");
  const fd = fs.openSync(ready, "w");
  const p = spawn(path.join(bin, "snd"), ["--cluster", spec, "--state", path.join(dir, "state"),
    "--listen", "127.0.0.1:0", "--ready-fd", "3", "--set", "health_interval_ms=200"], { stdio: ["ignore", "ignore", "ignore", fd] });
  fs.closeSync(fd);
  procs.push(p);
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const poll = () => {
      const text = fs.readFileSync(ready, "utf8");
      if (text.endsWith("\n")) return resolve(Number(text.trim()));
      if (Date.now() - t0 > 10000) return reject(new Error("snd did not start"));
      setTimeout(poll, 50);
    };
    poll();
  });
}

async function main() {
  const port = await startSnd();
  const base = "http://127.0.0.1:" + port;
  const admin = fs.readFileSync(path.join(dir, "state", "admin.token"), "utf8").trim();
  const api = async (method, p, body) => {
    const r = await fetch(base + p, { method, headers: { Authorization: "Bearer " + admin },
      body: body ? JSON.stringify(body) : undefined });
    const j = await r.json();
    if (!r.ok) throw new Error(method + " " + p + ": " + r.status + " " + JSON.stringify(j));
    return j;
  };
  const cluster = await api("GET", "/v1/cluster");
  const topo = (await api("GET", "/v1/cluster/topology")).items;
  const sn = topo[1];
  const node = (await api("GET", "/v1/nodes?limit=1&after=" + sn.first_server)).items[0];
  const gpuName = (i) => node.name + "-gpu" + i;
  await api("POST", "/v1/tenants", { name: "acme", prefix: "/data/acme" });
  for (let i = 0; i < 3; i++)
    await api("POST", "/v1/jobs", { name: "train-" + i, gpus: 8 * (i + 1), tenant: "acme" });
  /* The whole cluster: it must wait while the others run, so the queue has a row. */
  await api("POST", "/v1/jobs", { name: "whole-cluster", gpus: cluster.gpus, tenant: "acme",
    group_gpus: 8 });
  await api("POST", "/v1/gpus/" + gpuName(2) + "/cordon", { reason: "fan noise reported by ops" });
  const tok = await api("POST", "/v1/tokens", { kind: "agent", subject: node.name,
    scopes: "telemetry:write,cluster:read", ttl_s: 3600 });
  fs.writeFileSync(path.join(dir, "agent.token"), tok.token + "\n", { mode: 0o600 });
  const agent = spawn(path.join(bin, "sn-agent"), ["--server", base, "--token",
    path.join(dir, "agent.token"), "--node", node.name, "--backend", "sim", "--cluster", spec,
    "--interval", "0.2", "--fault", "hot-gpu=1", "--work-dir", path.join(dir, "work")],
    { stdio: ["ignore", "ignore", "ignore"] });
  procs.push(agent);
  for (let i = 0; ; i++) {
    const a = await api("GET", "/v1/agents/" + node.name);
    if (a.batches >= 2) break;
    if (i > 200) throw new Error("no telemetry from the agent");
    await new Promise((r) => setTimeout(r, 50));
  }

  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--headless",
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--no-first-run", "--disable-sync", "--disable-quic"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(base + "/#token=" + encodeURIComponent(admin));
    await page.waitForSelector("body[data-ready='1']", { timeout: 10000 });
    const tiles = await page.$$eval(".sn", (ts) => ts.map((t) => Number(t.dataset.gpus)));
    check(tiles.length === cluster.supernodes, "map shows " + cluster.supernodes + " supernode tiles");
    check(tiles.reduce((a, b) => a + b, 0) === cluster.gpus, "supernode tiles hold " + cluster.gpus + " GPUs");
    const count = (k) => page.$eval("[data-count='" + k + "'] b", (b) => Number(b.textContent));
    check(await count("gpus") === cluster.gpus, "GPU count " + cluster.gpus);
    /* The scheduler places what fits: the page must agree with the API. */
    const sum = await api("GET", "/v1/dashboard/summary");
    const jobs = (await api("GET", "/v1/jobs")).items;
    const inState = (st) => jobs.filter((j) => j.state === st).length;
    check(inState("running") + inState("pending") === 4, "4 jobs submitted, running or pending");
    check(inState("pending") >= 1, "the whole-cluster job waits");
    check(await count("running") === inState("running"), inState("running") + " running jobs counted");
    check(await count("pending") === inState("pending"), inState("pending") + " pending jobs counted");
    check(await count("allocated") === sum.allocated, sum.allocated + " allocated GPUs counted");
    check(await count("agents-up") === 1, "1 agent up");
    check(await page.$$eval("#queue tbody tr", (r) => r.length) === inState("pending"),
      "queue lists the " + inState("pending") + " pending jobs");
    const pending = (await api("GET", "/v1/jobs?state=pending")).items;
    const rows = await page.$$eval("#queue tbody tr", (rs) => rs.map((r) => r.textContent));
    check(pending.every((j) => j.pending_reason && rows.some((r) =>
      r.startsWith(String(j.id)) && r.includes(j.pending_reason))), "queue shows each job's pending reason");
    check(pending.every((j) => j.shape && rows.some((r) => r.startsWith(String(j.id)) &&
      r.includes(j.shape))) && rows.some((r) => r.includes("in groups of 8")),
      "queue shows each job's shape (the whole-cluster job in groups of 8)");
    await page.click(".sn[data-name='" + sn.name + "']");
    await page.waitForSelector(".gpu[data-gpu='" + gpuName(2) + "']", { timeout: 10000 });
    check(await page.$$eval(".server", (s) => s.length) === sn.servers, sn.name + " shows " + sn.servers + " servers");
    check(await page.$$eval(".gpu", (g) => g.length) === sn.gpus, sn.name + " shows " + sn.gpus + " GPU tiles");
    await page.click(".gpu[data-gpu='" + gpuName(2) + "']");
    await page.waitForSelector("#findings li.finding", { timeout: 10000 });
    check((await page.textContent("#findings")).includes("fan noise reported by ops"),
      "clicked GPU shows its cordon finding");
    await page.click(".gpu[data-gpu='" + gpuName(1) + "']");
    await page.waitForFunction((n) => document.querySelector("#detail h2") &&
      document.querySelector("#detail h2").textContent === "GPU " + n, gpuName(1));
    check((await page.textContent("#detail")).includes("92 C"), "hot GPU shows its 92 C reading");
    await page.waitForFunction(() => document.querySelector("#findings") &&
      document.querySelector("#findings").textContent.includes("clock-event"), null, { timeout: 10000 });
    check(true, "hot GPU shows the engine's clock-event finding");
    // Health colours come from the health engine's scores: the hot GPU's
    // clock event (sw thermal slowdown, weight 15 in include/sn/health.h)
    // scores 85, below 90: a warning.
    await page.selectOption("#mode", "health");
    await page.waitForFunction((n) => {
      const t = document.querySelector(".gpu[data-gpu='" + n + "']");
      return t && getComputedStyle(t).backgroundColor === "rgb(224, 160, 48)";
    }, gpuName(1));
    const hot = await api("GET", "/v1/gpus/" + gpuName(1));
    check(hot.health_score === 85 && hot.findings.some((f) => f.detector === "clock-event"),
      "health mode colours the hot GPU (engine score 85, clock-event) as a warning");
    const shot = path.join(bin, "dashboard.png");
    await page.screenshot({ path: shot, fullPage: true });
    check(fs.statSync(shot).size > 10000, "screenshot saved to " + shot);
    check(errors.length === 0, "no page errors " + errors.join("; "));
  } finally {
    await browser.close();
  }
}

main().then(() => 0, (e) => { console.error("dashboard: " + e.message); return 1; }).then((rc) => {
  for (const p of procs) if (p.exitCode === null) process.kill(p.pid, "SIGTERM");
  fs.rmSync(dir, { recursive: true, force: true });
  process.exitCode = rc;
});
