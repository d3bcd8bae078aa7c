/*
 * Supernode dashboard: polls snd's /v1/dashboard/* reads and draws the
 * supernode map, the GPU detail, the queue, recent events and the
 * utilisation history. Zoomed out it draws one tile per supernode
 * (aggregates from the server), so the page stays small at 100,000 GPUs;
 * zooming into a supernode fetches that supernode's servers and GPUs only.
 * No build step: plain ES2017, served from the snd binary.
 */
"use strict";

const POLL_MS = 2000;
const STATE_COLOURS = ["#3b4650", "#e0a030", "#b070e0", "#8a5cc0", "#ff6b6b"];
const HEALTH_COLOURS = { "-1": "#3b4650", "0": "#3fbf6f", "1": "#e0a030", "2": "#ff4d4d" };
const HEALTH_NAMES = { "-1": "no telemetry", "0": "no findings", "1": "warning", "2": "critical" };

const view = { token: null, mode: "job", supernode: null, selected: null, map: null, timer: null };

function $(id) { return document.getElementById(id); }

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

async function api(path) {
  const r = await fetch(path, { headers: { Authorization: "Bearer " + view.token } });
  const body = await r.json().catch(() => null);
  if (!r.ok) {
    const msg = body && body.error ? body.error.message : r.statusText;
    const err = new Error(r.status + " " + msg);
    err.status = r.status;
    throw err;
  }
  return body;
}

function hue(n) { return "hsl(" + ((n * 137.508) % 360).toFixed(0) + ",65%,55%)"; }

/* Colour of GPU i of the zoomed-in supernode in the current mode. */
function gpuColour(g, i) {
  switch (view.mode) {
  case "job":
    return g.job[i] > 0 ? hue(g.job[i]) : g.job[i] < 0 ? "#6b7580" : "#28313a";
  case "tenant":
    return g.tenant[i] >= 0 ? hue(g.tenant[i] + 3) : g.job[i] ? "#6b7580" : "#28313a";
  case "health":
    return HEALTH_COLOURS[String(g.health[i])];
  default:
    return STATE_COLOURS[g.state[i]] || "#ff6b6b";
  }
}

/* Colour of a supernode tile: a mix by how allocated or how healthy it is. */
function snColour(s) {
  if (view.mode === "health")
    return s.critical ? "#ff4d4d" : s.warning ? "#e0a030" : s.reporting ? "#3fbf6f" : "#6b7580";
  if (view.mode === "state")
    return s.not_up ? "#e0a030" : "#9fb3c8";
  const f = s.gpus ? s.allocated / s.gpus : 0;
  return "hsl(210,70%," + (80 - 45 * f).toFixed(0) + "%)";
}

function legend() {
  const box = $("legend");
  box.textContent = "";
  const add = (colour, text) => {
    const s = el("span");
    const sw = el("span", { class: "swatch" });
    sw.style.background = colour;
    s.append(sw, text);
    box.append(s);
  };
  if (!view.supernode) {
    if (view.mode === "health") {
      add("#3fbf6f", "reporting, no findings"); add("#e0a030", "warnings"); add("#ff4d4d", "critical");
    } else if (view.mode === "state") {
      add("#9fb3c8", "all up"); add("#e0a030", "some not up");
    } else {
      add("hsl(210,70%,80%)", "idle"); add("hsl(210,70%,35%)", "fully allocated");
    }
    return;
  }
  if (view.mode === "health")
    for (const k of ["0", "1", "2", "-1"]) add(HEALTH_COLOURS[k], HEALTH_NAMES[k]);
  else if (view.mode === "state")
    view.map.state_names.forEach((n, i) => add(STATE_COLOURS[i], n));
  else
    add("#28313a", "idle"), add("#6b7580", "another tenant's job"), add(hue(7), "one colour per " + view.mode);
}

function drawSupernodes(map) {
  const box = $("map");
  box.textContent = "";
  $("map-title").textContent = map.supernode_count + " supernodes";
  $("back").hidden = true;
  for (const s of map.supernodes) {
    const t = el("div", { class: "sn", "data-name": s.name, "data-gpus": s.gpus, title: "open " + s.name });
    t.style.background = snColour(s);
    t.append(el("b", {}, s.name),
      el("small", {}, s.servers + " servers, " + s.gpus + " GPUs"),
      el("small", {}, s.allocated + " allocated, " + s.not_up + " not up"),
      el("small", {}, s.reporting + " reporting, " + s.critical + " critical"));
    t.addEventListener("click", () => { view.supernode = s.name; refresh(); });
    box.append(t);
  }
}

function drawSupernode(map) {
  const sn = map.supernode, g = sn.gpus, box = $("map");
  box.textContent = "";
  $("map-title").textContent = sn.name + ": " + sn.servers.length + " servers, " + g.name.length + " GPUs";
  $("back").hidden = map.supernode_count < 2;
  for (const srv of sn.servers) {
    const s = el("div", { class: "server " + srv.state, "data-name": srv.name });
    s.append(el("div", { class: "name" }, srv.name));
    const grid = el("div", { class: "gpus" });
    for (let k = 0; k < srv.gpus; k++) {
      const i = srv.first_gpu - sn.first_gpu + k;
      const t = el("div", { class: "gpu", "data-gpu": g.name[i], title: g.name[i] });
      t.style.background = gpuColour(g, i);
      if (g.name[i] === view.selected) t.classList.add("selected");
      t.addEventListener("click", () => select(g.name[i]));
      grid.append(t);
    }
    s.append(grid);
    box.append(s);
  }
}

async function select(name) {
  view.selected = name;
  document.querySelectorAll(".gpu.selected").forEach((e) => e.classList.remove("selected"));
  const tile = document.querySelector('.gpu[data-gpu="' + name + '"]');
  if (tile) tile.classList.add("selected");
  const box = $("detail");
  try {
    const d = await api("/v1/telemetry/gpus/" + encodeURIComponent(name));
    box.textContent = "";
    box.append(el("h2", {}, "GPU " + d.name));
    const dl = el("dl");
    const row = (k, v) => dl.append(el("dt", {}, k), el("dd", {}, v));
    row("node", d.node);
    row("admin state", d.state);
    row("agent", d.agent);
    for (const k of ["temp_gpu", "power", "util_gpu", "clock_sm", "mem_used"]) {
      const m = d.metrics[k];
      if (m) row(k, m.value === null ? m.status : (k === "mem_used" ? (m.value / 2 ** 30).toFixed(1) + " GiB" : m.value + " " + m.unit));
    }
    box.append(dl);
    const h = el("h2", {}, "Findings (" + d.findings.length + ")");
    h.id = "findings-title";
    box.append(h);
    const ul = el("ul", { id: "findings" });
    if (!d.findings.length) ul.append(el("li", { class: "hint" }, "none"));
    for (const f of d.findings)
      ul.append(el("li", { class: "finding " + f.severity }, f.kind + ": " + f.message));
    box.append(ul);
  } catch (e) {
    box.textContent = "";
    box.append(el("h2", {}, "GPU " + name), el("p", { class: "hint" }, e.message));
  }
}

function drawCounts(s) {
  const box = $("counts");
  box.textContent = "";
  const add = (k, v, key) => {
    const span = el("span", { "data-count": key });
    span.append(k + " ", el("b", {}, String(v)));
    box.append(span);
  };
  add("GPUs", s.gpus, "gpus");
  add("allocated", s.allocated, "allocated");
  add("running", s.jobs.running, "running");
  add("pending", s.jobs.pending, "pending");
  add("agents up", s.agents.up, "agents-up");
  add("down", s.agents.down, "agents-down");
  $("cluster").textContent = s.cluster;
}

function drawQueue(s) {
  const tb = $("queue").tBodies[0];
  tb.textContent = "";
  for (const j of s.queue) {
    const tr = el("tr");
    for (const v of [j.id, j.name, j.tenant, j.gpus, j.pending_reason || "", j.shape || ""]) tr.append(el("td", {}, String(v)));
    tb.append(tr);
  }
  if (!s.queue.length) {
    const tr = el("tr");
    tr.append(el("td", { colspan: 6, class: "hint" }, "no pending jobs"));
    tb.append(tr);
  }
  const ol = $("events");
  ol.textContent = "";
  for (const e of s.events)
    ol.append(el("li", {}, new Date(e.time_s * 1000).toISOString().slice(11, 19) + " job " + e.job_id + " " + e.kind + (e.message ? ": " + e.message : "")));
}

function drawChart(hist) {
  const svg = $("chart");
  svg.textContent = "";
  if (hist.length < 2) return;
  const t0 = hist[0].time_s, span = Math.max(1, hist[hist.length - 1].time_s - t0);
  const line = (vals, colour) => {
    const pts = [];
    hist.forEach((p, i) => { if (vals[i] !== null) pts.push(((p.time_s - t0) / span * 300).toFixed(1) + "," + (100 - vals[i]).toFixed(1)); });
    const pl = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    pl.setAttribute("points", pts.join(" "));
    pl.setAttribute("fill", "none");
    pl.setAttribute("stroke", colour);
    pl.setAttribute("stroke-width", "1.5");
    svg.append(pl);
  };
  line(hist.map((p) => p.allocated_fraction * 100), "#4aa3ff");
  line(hist.map((p) => p.util_mean_pct), "#5fd38d");
  line(hist.map((p) => (p.goodput === null ? null : p.goodput * 100)), "#f0c050");
}

async function refresh() {
  clearTimeout(view.timer);
  try {
    const q = view.supernode ? "?supernode=" + encodeURIComponent(view.supernode) : "";
    const [map, sum] = await Promise.all([api("/v1/dashboard/map" + q), api("/v1/dashboard/summary")]);
    if (!view.supernode && map.supernode_count === 1) {
      view.supernode = map.supernodes[0].name;
      return refresh();
    }
    view.map = map;
    if (map.supernode) drawSupernode(map); else drawSupernodes(map);
    legend();
    drawCounts(sum);
    drawQueue(sum);
    drawChart(sum.history);
    $("status").textContent = "updated " + new Date().toLocaleTimeString();
    $("status").className = "";
    document.body.dataset.ready = "1";
  } catch (e) {
    $("status").textContent = e.message;
    $("status").className = "error";
    if (e.status === 401) return showLogin();
  }
  view.timer = setTimeout(refresh, POLL_MS);
}

function showLogin() {
  $("app").hidden = true;
  $("login").hidden = false;
}

function start() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem("sn-token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  view.token = sessionStorage.getItem("sn-token");
  $("mode").addEventListener("change", (e) => { view.mode = e.target.value; refresh(); });
  $("back").addEventListener("click", () => { view.supernode = null; refresh(); });
  $("login").addEventListener("submit", (e) => {
    e.preventDefault();
    view.token = $("token").value.trim();
    sessionStorage.setItem("sn-token", view.token);
    $("login").hidden = true;
    $("app").hidden = false;
    refresh();
  });
  if (!view.token) return showLogin();
  $("app").hidden = false;
  refresh();
}

start();
