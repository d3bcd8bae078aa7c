// The dashboard end to end (run by tests/cli/dashboard.sh), at 128 GPUs
// (examples/demo-cluster.yaml) and at 131,072 GPUs (examples/large-100k.yaml):
// snd on 127.0.0.1, jobs, a cordoned GPU, and one simulated agent (a hot GPU)
// on a server that runs a job. In headless Chromium the page must: raise no
// error; fill the viewport with a canvas map that draws every GPU; find a GPU
// and a job by search; on a GPU click show its job and five time series with
// axes; on a job click highlight exactly its GPUs; colour the hot GPU by the
// health engine's score; list the queue with reasons; on a pending job's click
// show its pending span with the reason snd recorded, and a running job's
// goodput to 0.1 %. Screenshots go to the
// build directory (dashboard-128.png, dashboard-131072.png, ...), which
// docs/dashboard.md uses. Every process is stopped by its pid.
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { chromium } = require("playwright-core");

const bin = path.resolve(process.argv[2]);
const procs = [];
const dirs = [];

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
  console.log("ok - " + what);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* page.waitForFunction evaluates a string inside the page, which the page's
 * Content-Security-Policy (no 'unsafe-eval') forbids: poll with
 * page.evaluate, so the page runs under its real policy. */
async function waitIn(page, fn, arg, ms) {
  const t0 = Date.now();
  for (;;) {
    if (await page.evaluate(fn, arg)) return;
    if (Date.now() - t0 > (ms || 30000)) throw new Error("timed out waiting for " + fn);
    await sleep(100);
  }
}

function startSnd(dir, spec) {
  const ready = path.join(dir, "ready");
  const fd = fs.openSync(ready, "w");
  const p = spawn(path.join(bin, "snd"), ["--cluster", spec, "--state", path.join(dir, "state"),
    "--listen", "127.0.0.1:0", "--ready-fd", "3", "--set", "health_interval_ms=200",
    "--set", "gpu_history_step_s=1", "--set", "sched_event_delay_ms=0"],
  { stdio: ["ignore", "ignore", "ignore", fd] });
  fs.closeSync(fd);
  procs.push(p);
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const poll = () => {
      const text = fs.readFileSync(ready, "utf8");
      if (text.endsWith("\n")) return resolve(Number(text.trim()));
      if (Date.now() - t0 > 60000) return reject(new Error("snd did not start"));
      setTimeout(poll, 50);
    };
    poll();
  });
}

async function until(what, fn, ms) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > (ms || 30000)) throw new Error("timed out waiting for " + what);
    await sleep(100);
  }
}

async function scenario(browser, spec, jobs) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sn-dash-"));
  dirs.push(dir);
  const port = await startSnd(dir, spec);
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
  await api("POST", "/v1/tenants", { name: "acme", prefix: "/data/acme" });
  for (const [name, gpus] of jobs) await api("POST", "/v1/jobs", { name, gpus, tenant: "acme" });
  /* The whole cluster: it must wait while the others run, so the queue has a row. */
  await api("POST", "/v1/jobs", { name: "whole-cluster", gpus: cluster.gpus, tenant: "acme",
    group_gpus: 8 });
  const running = await until("a running job", async () => {
    const r = (await api("GET", "/v1/jobs?state=running")).items;
    return r.length === jobs.length ? r : null;
  });
  /* The agent runs on the first server of the first running job. */
  const layout = await api("GET", "/v1/dashboard/layout");
  let map = await api("GET", "/v1/dashboard/gpus");
  const jobGpu = map.job.findIndex((j) => j === running[0].id);
  let server = 0;
  while (server + 1 < layout.servers.first_gpu.length && layout.servers.first_gpu[server + 1] <= jobGpu) server++;
  const node = layout.servers.name[server], g0 = layout.servers.first_gpu[server];
  const gpuName = (i) => node + "-gpu" + i;
  await api("POST", "/v1/gpus/" + gpuName(2) + "/cordon", { reason: "fan noise reported by ops" });
  const tok = await api("POST", "/v1/tokens", { kind: "agent", subject: node,
    scopes: "telemetry:write,cluster:read", ttl_s: 3600 });
  fs.writeFileSync(path.join(dir, "agent.token"), tok.token + "\n", { mode: 0o600 });
  const agent = spawn(path.join(bin, "sn-agent"), ["--server", base, "--token",
    path.join(dir, "agent.token"), "--node", node, "--backend", "sim", "--cluster", spec,
    "--interval", "0.2", "--fault", "hot-gpu=1", "--work-dir", path.join(dir, "work"),
    "--unsafe-jobs-as-agent-user", "--cgroup-root", "none"],
  { stdio: ["ignore", "ignore", "ignore"] });
  procs.push(agent);
  await until("three telemetry samples", async () =>
    (await api("GET", "/v1/telemetry/gpus/" + gpuName(1) + "/history")).time_s.length >= 3);
  await until("a health score", async () => (await api("GET", "/v1/gpus/" + gpuName(1))).health_score !== null);

  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  const tag = String(cluster.gpus);
  try {
    await page.goto(base + "/#token=" + encodeURIComponent(admin));
    await page.waitForSelector("body[data-ready='1']", { timeout: 60000 });
    const count = (k) => page.$eval("[data-count='" + k + "'] b", (b) => b.textContent);
    check(Number(await count("gpus")) === cluster.gpus, tag + ": GPU count " + cluster.gpus);
    const stateSum = await page.$$eval("[data-count^='gpus-'] b", (bs) => bs.reduce((a, b) => a + Number(b.textContent), 0));
    check(stateSum === cluster.gpus, tag + ": the header's GPU states sum to " + cluster.gpus + " (got " + stateSum + ")");
    check(Number(await page.$eval("#map", (c) => c.dataset.gpusDrawn)) === cluster.gpus,
      tag + ": the map draws all " + cluster.gpus + " GPUs");
    const fill = await page.evaluate(() => {
      const c = document.getElementById("map").getBoundingClientRect();
      const b = document.getElementById("map-box").getBoundingClientRect();
      return { w: c.width / b.width, h: c.height / b.height, top: b.top, bottom: b.bottom, vh: innerHeight };
    });
    check(fill.w > 0.97 && fill.h > 0.97 && fill.bottom > fill.vh * 0.9,
      tag + ": the map fills the viewport (" + (fill.w * 100).toFixed(0) + "% x " + (fill.h * 100).toFixed(0) + "% of its area, to " + fill.bottom.toFixed(0) + " of " + fill.vh + " px)");
    await page.screenshot({ path: path.join(bin, "dashboard-" + tag + ".png") });

    /* The queue lists every pending job with its reason, expandable. */
    const pending = (await api("GET", "/v1/jobs?state=pending")).items;
    const rows = await page.$$eval("#queue tbody tr.job-row", (rs) => rs.map((r) => r.textContent));
    check(pending.length >= 1 && pending.every((j) => rows.some((r) => r.startsWith(String(j.id)) && r.includes(j.pending_reason))),
      tag + ": the queue shows each pending job with its reason");
    check(pending.every((j) => j.shape && rows.some((r) => r.startsWith(String(j.id)) &&
      r.includes(j.shape))) && rows.some((r) => r.includes("in groups of 8")),
      tag + ": the queue shows each job's shape (the whole-cluster job in groups of 8)");
    await page.click("#queue tbody tr.job-row details summary");
    check((await page.textContent("#queue tbody tr.job-row .reason")).length > 20, tag + ": a pending reason expands");

    /* Click a pending job: its timeline shows its pending span with the reason
     * snd recorded (a `pending` event), and a running job shows its goodput. */
    const held = pending[0];
    await until("a pending event of job " + held.id, async () =>
      (await api("GET", "/v1/jobs/" + held.id + "/events?limit=200")).items.some((e) => e.kind === "pending"));
    await page.click("#queue tbody tr.job-row[data-job='" + held.id + "'] td");
    await waitIn(page, (id) => document.querySelector("#detail").dataset.job === String(id) &&
      document.querySelector("#timeline"), held.id);
    const spans = await page.$$eval("#timeline .pending-span", (r) => r.map((x) => x.dataset.reason));
    check(spans.length >= 1 && spans[spans.length - 1] === held.pending_reason,
      tag + ": job " + held.id + "'s timeline shows a pending span with its reason '" + held.pending_reason + "' (" + spans.join(",") + ")");
    check((await page.textContent("#job-events")).includes("pending: " + held.pending_reason),
      tag + ": the job's events list its pending reason");

    /* Search a GPU: it is selected, with its job and five time series with axes. */
    await page.fill("#search", gpuName(1));
    await page.press("#search", "Enter");
    await waitIn(page, (n) => document.querySelector("#detail h2") &&
      document.querySelector("#detail h2").textContent === "GPU " + n && document.querySelector("#gpu-charts"), gpuName(1));
    check(true, tag + ": search finds GPU " + gpuName(1));
    const det = await page.textContent("#detail");
    check(det.includes("job " + running[0].id), tag + ": the GPU panel names its job " + running[0].id);
    check(det.includes("92 °C") || det.includes("92 C"), tag + ": the hot GPU shows its 92 °C reading");
    const charts = await page.$$eval("#gpu-charts svg", (ss) => ss.map((s) => ({
      title: s.querySelector(".chart-title").textContent,
      ticks: s.querySelectorAll(".tick-label").length,
      axes: s.querySelectorAll(".axis-title").length,
      line: (s.querySelector("path.series").getAttribute("d") || "").length })));
    check(charts.length === 5 && charts.every((c) => c.ticks >= 4 && c.axes === 2 && c.line > 10),
      tag + ": five time series with ticks and axis titles (" + charts.map((c) => c.title).join(", ") + ")");
    if (cluster.gpus > 2000)
      check((await page.textContent("#crumbs")).includes(layout.supernodes.name[layout.supernodes.first_server.findIndex((f, s) =>
        server >= f && server < f + layout.supernodes.servers[s])]), tag + ": search zooms into the GPU's supernode");

    /* Click another GPU on the canvas: the panel follows. */
    const rect = await page.evaluate((g) => { const r = gpuRect(g); return r && { x: r.x + r.c / 2, y: r.y + r.c / 2 }; }, g0 + 3);
    const box = await page.$eval("#map", (c) => { const b = c.getBoundingClientRect(); return { x: b.left, y: b.top }; });
    await page.mouse.click(box.x + rect.x, box.y + rect.y);
    await waitIn(page, (n) => document.querySelector("#detail h2") &&
      document.querySelector("#detail h2").textContent === "GPU " + n, gpuName(3));
    check(true, tag + ": clicking a GPU on the map opens " + gpuName(3));

    /* Click its job: exactly the job's GPUs are highlighted. */
    await page.click("#detail button.job");
    await waitIn(page, (id) => document.querySelector("#detail").dataset.job === String(id) &&
      document.querySelector("#timeline"), running[0].id);
    map = await api("GET", "/v1/dashboard/gpus");
    const want = map.job.filter((j) => j === running[0].id).length;
    const lit = Number(await page.$eval("#map", (c) => c.dataset.highlighted));
    check(want === running[0].gpus && lit === want, tag + ": job " + running[0].id + " highlights its " + want + " GPUs");
    check(await page.$$eval("#timeline .event-mark", (m) => m.length) >= 2, tag + ": the job's timeline marks its events");
    check(/goodput\s*100\.0 %/.test(await page.textContent("#detail")), tag + ": job " + running[0].id + " shows its goodput to 0.1 % (100.0 %)");

    /* Search a job by id. */
    const other = running[running.length - 1];
    await page.fill("#search", "job " + other.id);
    await page.press("#search", "Enter");
    await waitIn(page, (id) => document.querySelector("#detail").dataset.job === String(id), other.id);
    check(Number(await page.$eval("#map", (c) => c.dataset.highlighted)) === other.gpus,
      tag + ": search finds job " + other.id + " and highlights its " + other.gpus + " GPUs");
    await page.screenshot({ path: path.join(bin, "dashboard-" + tag + "-job.png") });

    /* Health mode: the hot GPU is drawn in the colour of its engine score. */
    await page.fill("#search", "");
    await page.press("#search", "Enter");
    await page.selectOption("#mode", "health");
    await waitIn(page, () => document.querySelector("#legend").textContent.includes("health score"));
    const hot = await api("GET", "/v1/gpus/" + gpuName(1));
    const px = await page.evaluate((g) => {
      const r = gpuRect(g), c = document.getElementById("map"), k = c.width / c.clientWidth;
      const d = c.getContext("2d").getImageData(Math.floor((r.x + 0.5) * k), Math.floor((r.y + 0.5) * k), 1, 1).data;
      const want = healthColour(view.gpus.health[g]).match(/\d+/g).map(Number);
      return { got: [d[0], d[1], d[2]], want, score: view.gpus.health[g] };
    }, g0 + 1);
    check(px.score === Math.floor(hot.health_score) && px.got.every((v, i) => Math.abs(v - px.want[i]) <= 2),
      tag + ": health mode draws the hot GPU (score " + px.score + ") in its score's colour");
    await page.selectOption("#mode", "temp");
    await waitIn(page, () => document.querySelector("#legend .tick-label"));
    check(true, tag + ": temperature mode has a scale legend with ticks");
    /* A down GPU shows no temperature: its last reading is not current. */
    const before = await api("GET", "/v1/dashboard/gpus?metric=temp");
    check(before.values[g0 + 1] !== null, tag + ": the hot GPU has a temperature while up");
    await api("POST", "/v1/gpus/" + gpuName(1) + "/fail", { reason: "test: powered off" });
    const after = await api("GET", "/v1/dashboard/gpus?metric=temp");
    check(after.state[g0 + 1] === 4 && after.values[g0 + 1] === null,
      tag + ": failed, it is down with no temperature (state " + after.state[g0 + 1] + ", value " + after.values[g0 + 1] + ")");
    check(errors.length === 0, tag + ": no page or console errors " + errors.join("; "));
  } finally {
    await page.close();
  }
}

async function main() {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--headless",
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--no-first-run", "--disable-sync", "--disable-quic"] });
  try {
    await scenario(browser, "examples/demo-cluster.yaml", [["train-0", 8], ["train-1", 16], ["train-2", 24]]);
    await scenario(browser, "examples/large-100k.yaml", [["train-big", 1024], ["train-8", 8]]);
  } finally {
    await browser.close();
  }
}

main().then(() => 0, (e) => { console.error("dashboard: " + e.message); return 1; }).then((rc) => {
  for (const p of procs) if (p.exitCode === null) process.kill(p.pid, "SIGTERM");
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  process.exitCode = rc;
});
