/*
 * Supernode dashboard. One canvas heat map draws every GPU of the cluster,
 * grouped pod -> supernode -> server, sized to fill the map area from 64 to
 * 131,072 GPUs (cells shrink to 1 px before the map scrolls); clicking a
 * supernode's label or a crumb zooms. Data: /v1/dashboard/layout once, then
 * /v1/dashboard/gpus (every GPU's state, job, health and the metric being
 * shown) and /v1/dashboard/summary on a timer; a GPU's or a job's detail on
 * click. Charts are plain SVG with ticks, units and legends.
 * Colours are colour-blind safe: Okabe-Ito for categories, a blue-to-orange
 * scale for health and viridis for measurements.
 * No build step: plain ES2017, served from the snd binary.
 */
"use strict";

const OKABE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
  "#999999", "#7F3C8D", "#11A579", "#3969AC", "#F2B701"];
/* Admin states, in the order of state_names: up, cordoned, draining, drained, down. */
const STATE_COLOURS = ["#009E73", "#E69F00", "#56B4E9", "#0072B2", "#D55E00"];
const IDLE = "#2a333c", HIDDEN = "#6b7580", UNKNOWN = "#4a525a";
const VIRIDIS = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"];
const HEALTH_STOPS = [[0, "#D55E00"], [30, "#E69F00"], [60, "#F0E442"], [80, "#56B4E9"], [100, "#0072B2"]];
const METRICS = {
  temp: { label: "GPU temperature", unit: "°C", lo: 20, hi: 95 },
  power: { label: "GPU power", unit: "W", lo: 0, hi: null },
  util: { label: "GPU utilisation", unit: "%", lo: 0, hi: 100 },
};
const SERIES = [
  ["temp_c", "Temperature", "°C"], ["power_w", "Power", "W"], ["clock_sm_mhz", "SM clock", "MHz"],
  ["util_pct", "Utilisation", "%"], ["mem_used_gib", "Memory used", "GiB"]];
/* Pending reasons (include/sn/sched.h, docs/api.md), in words. */
const REASONS = {
  none: "not yet considered by a scheduling pass",
  quota: "the tenant's GPU quota is used up",
  "quota-supernode": "room exists, but not within the tenant's per-supernode quotas",
  "no-supernode-fits": "not enough usable GPUs in the job's pools, in the shape it asks for",
  bandwidth: "it fits, but an uplink of the fabric would be oversubscribed",
  health: "it fits only on failed-over, cordoned or weak GPUs",
  priority: "a higher-priority job is blocked and backfill cannot start this one",
  reservation: "starting it would delay the reservation of the blocked job at the head of the queue",
};

const view = { token: null, mode: "state", zoom: null, layout: null, gpus: null, sum: null,
  selectedGpu: null, selectedJob: null, highlight: null, hits: null, geom: null, timer: null,
  sort: { key: "id", asc: true } };

function $(id) { return document.getElementById(id); }

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

function svgEl(tag, attrs, text) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
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

/* ---- colours -------------------------------------------------------------- */

function hex(c) { return [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16)); }
function mix(a, b, t) {
  const x = hex(a), y = hex(b);
  return "rgb(" + x.map((v, i) => Math.round(v + (y[i] - v) * t)).join(",") + ")";
}
function ramp(stops, t) {
  t = Math.max(0, Math.min(1, t));
  const k = Math.min(stops.length - 2, Math.floor(t * (stops.length - 1)));
  return mix(stops[k], stops[k + 1], t * (stops.length - 1) - k);
}
function healthColour(s) {
  if (s < 0) return UNKNOWN;
  for (let i = 1; i < HEALTH_STOPS.length; i++)
    if (s <= HEALTH_STOPS[i][0]) {
      const [a, ca] = HEALTH_STOPS[i - 1], [b, cb] = HEALTH_STOPS[i];
      return mix(ca, cb, (s - a) / (b - a));
    }
  return HEALTH_STOPS[HEALTH_STOPS.length - 1][1];
}
function keyColour(n) { return OKABE[((n % OKABE.length) + OKABE.length) % OKABE.length]; }

function metricRange() {
  const m = METRICS[view.mode], v = view.gpus.values || [];
  let hi = m.hi;
  if (hi === null) { hi = 0; for (const x of v) if (x !== null && x > hi) hi = x; hi = hi || 1; }
  return [m.lo, hi];
}

/* The colour of GPU g in the current mode. */
function gpuColour(g) {
  const G = view.gpus;
  switch (view.mode) {
  case "state": return STATE_COLOURS[G.state[g]] || "#D55E00";
  case "job": return G.job[g] > 0 ? keyColour(G.job[g]) : G.job[g] < 0 ? HIDDEN : IDLE;
  case "tenant": {
    const j = G.jobs[G.job[g]];
    return j ? keyColour(view.tenantIndex[j.tenant] + 5) : G.job[g] < 0 ? HIDDEN : IDLE;
  }
  case "health": return healthColour(G.health[g]);
  default: {
    /* A down GPU has no current reading (snd sends null): shown as down. */
    if (G.state[g] === 4) return STATE_COLOURS[4];
    const v = G.values ? G.values[g] : null;
    if (v === null || v === undefined) return UNKNOWN;
    const [lo, hi] = view.range;
    return ramp(VIRIDIS, (v - lo) / (hi - lo || 1));
  }
  }
}

/* ---- layout ----------------------------------------------------------------- */

/* Supernodes in view: all, one pod's, or one. */
function inView() {
  const L = view.layout, n = L.supernode_count, out = [];
  for (let s = 0; s < n; s++) {
    if (!view.zoom || (view.zoom.kind === "pod" && L.pods.of_supernode[s] === view.zoom.index) ||
        (view.zoom.kind === "sn" && s === view.zoom.index))
      out.push(s);
  }
  return out;
}

function serverShape(gpus) {
  const gx = gpus <= 4 ? gpus : Math.ceil(gpus / 2);
  return [Math.max(1, gx), Math.max(1, Math.ceil(gpus / Math.max(1, gx)))];
}

/* The block of supernode s at cell size c: its servers in a grid. */
function snBlock(s, c) {
  const L = view.layout, gap = c >= 6 ? 2 : c >= 2 ? 1 : 0, pad = c >= 4 ? 4 : 2, label = c >= 3 ? 14 : 0;
  const first = L.supernodes.first_server[s], ns = L.supernodes.servers[s];
  let gmax = 1;
  for (let v = first; v < first + ns; v++) gmax = Math.max(gmax, L.servers.gpus[v]);
  const [gx, gy] = serverShape(gmax);
  const sw = gx * c + gap, sh = gy * c + gap;
  const cols = Math.max(1, Math.min(ns, Math.ceil(Math.sqrt(ns * sh / sw * 1.6))));
  const rows = Math.ceil(ns / cols);
  return { sn: s, x: 0, y: 0, w: cols * sw + pad * 2, h: rows * sh + pad * 2 + label, cols, gx, gy, sw, sh,
    pad, label, first, ns, c };
}

/* Shelf-packs boxes (each {w, h}) into width W with gap between them; sets
 * their x, y and returns the height used. */
function shelves(boxes, W, gap) {
  let x = 0, y = 0, shelf = 0;
  for (const b of boxes) {
    if (x > 0 && x + b.w > W) { y += shelf; x = 0; shelf = 0; }
    b.x = x; b.y = y;
    x += b.w + gap;
    shelf = Math.max(shelf, b.h + gap);
  }
  return y + shelf;
}

/* Places the supernodes of the view at cell size c into width W. When the
 * view spans several pods, each pod is a labelled box of its supernodes in
 * a near-square grid, and the pods are packed in turn. */
function place(sns, c, W) {
  const L = view.layout, blocks = sns.map((s) => snBlock(s, c)), gap = c >= 4 ? 4 : 2;
  if (L.pods.count < 2 || (view.zoom && view.zoom.kind !== null && view.zoom.kind !== "all")) {
    const height = shelves(blocks, W, gap);
    return { blocks, height, c };
  }
  const pods = [];
  for (const b of blocks) {
    const p = L.pods.of_supernode[b.sn];
    if (!pods.length || pods[pods.length - 1].pod !== p) pods.push({ pod: p, members: [] });
    pods[pods.length - 1].members.push(b);
  }
  for (const p of pods) {
    const bw = Math.max(...p.members.map((b) => b.w)), bh = Math.max(...p.members.map((b) => b.h));
    const cols = Math.max(1, Math.min(p.members.length, Math.ceil(Math.sqrt(p.members.length * bh / bw))));
    const label = cols * (bw + gap) >= 48 ? 14 : 0;
    p.members.forEach((b, i) => { b.dx = (i % cols) * (bw + gap); b.dy = label + Math.floor(i / cols) * (bh + gap); });
    p.w = cols * (bw + gap);
    p.h = label + Math.ceil(p.members.length / cols) * (bh + gap);
    p.label = label;
  }
  const height = shelves(pods, W, gap * 2);
  const out = [];
  for (const p of pods) {
    if (p.label) out.push({ podLabel: p.pod, x: p.x, y: p.y + 11 });
    for (const b of p.members) { b.x = p.x + b.dx; b.y = p.y + b.dy; out.push(b); }
  }
  return { blocks: out, height, c };
}

/* The largest cell size (1..96 px) whose placement fits W x H. */
function layoutMap(W, H) {
  const sns = inView();
  let lo = 1, hi = 96, best = place(sns, 1, W);
  while (lo <= hi) {
    const mid = (lo + hi) >> 1, p = place(sns, mid, W);
    if (p.height <= H) { best = p; lo = mid + 1; } else hi = mid - 1;
  }
  return best;
}

/* ---- drawing ------------------------------------------------------------------ */

function draw() {
  const L = view.layout, G = view.gpus, box = $("map-box"), cv = $("map");
  if (!L || !G) return;
  const W = box.clientWidth, H = box.clientHeight;
  const geom = layoutMap(W - 2, H - 2);
  view.geom = geom;
  const dpr = window.devicePixelRatio || 1, height = Math.max(H - 2, geom.height);
  cv.width = Math.floor((W - 2) * dpr); cv.height = Math.floor(height * dpr);
  cv.style.width = (W - 2) + "px"; cv.style.height = height + "px";
  const ctx = cv.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = "#0f1419"; ctx.fillRect(0, 0, W, height);
  if (!view.tenantIndex) view.tenantIndex = {};
  view.range = METRICS[view.mode] ? metricRange() : null;
  const hl = view.highlight;
  for (const b of geom.blocks) {
    if (b.podLabel !== undefined) {
      ctx.fillStyle = "#9aa4ae"; ctx.font = "12px system-ui, sans-serif";
      ctx.fillText("pod " + b.podLabel, b.x + 2, b.y);
      continue;
    }
    ctx.fillStyle = "#1f2730"; ctx.fillRect(b.x, b.y, b.w, b.h);
    if (b.label) {
      ctx.fillStyle = view.zoom && view.zoom.kind === "sn" ? "#e6e6e6" : "#9aa4ae";
      ctx.font = "11px system-ui, sans-serif";
      ctx.fillText(L.supernodes.name[b.sn], b.x + b.pad, b.y + 11, b.w - 2 * b.pad);
    }
    for (let k = 0; k < b.ns; k++) {
      const v = b.first + k, sx = b.x + b.pad + (k % b.cols) * b.sw, sy = b.y + b.pad + b.label + Math.floor(k / b.cols) * b.sh;
      const g0 = L.servers.first_gpu[v], ng = L.servers.gpus[v];
      for (let i = 0; i < ng; i++) {
        const g = g0 + i, x = sx + (i % b.gx) * b.c, y = sy + Math.floor(i / b.gx) * b.c;
        ctx.globalAlpha = hl && !hl[g] ? 0.22 : 1;
        ctx.fillStyle = gpuColour(g);
        ctx.fillRect(x, y, b.c > 3 ? b.c - 1 : b.c, b.c > 3 ? b.c - 1 : b.c);
      }
    }
  }
  ctx.globalAlpha = 1;
  const sel = view.selectedGpu !== null ? gpuRect(view.selectedGpu) : null;
  if (sel) {
    ctx.strokeStyle = "#ffffff"; ctx.lineWidth = 2;
    ctx.strokeRect(sel.x - 2, sel.y - 2, Math.max(sel.c, 3) + 3, Math.max(sel.c, 3) + 3);
  }
  cv.dataset.cell = geom.c;
  cv.dataset.gpusDrawn = countDrawn(geom);
  cv.dataset.highlighted = hl ? hl.reduce((a, v) => a + v, 0) : 0;
}

function countDrawn(geom) {
  let n = 0;
  for (const b of geom.blocks)
    if (b.sn !== undefined)
      for (let k = 0; k < b.ns; k++) n += view.layout.servers.gpus[b.first + k];
  return n;
}

/* The rectangle of GPU g in the current geometry, or null when not in view. */
function gpuRect(g) {
  const L = view.layout, geom = view.geom;
  if (!geom) return null;
  for (const b of geom.blocks) {
    if (b.sn === undefined) continue;
    const lastV = b.first + b.ns - 1;
    if (g < L.servers.first_gpu[b.first] || g >= L.servers.first_gpu[lastV] + L.servers.gpus[lastV]) continue;
    for (let k = 0; k < b.ns; k++) {
      const v = b.first + k, g0 = L.servers.first_gpu[v];
      if (g < g0 || g >= g0 + L.servers.gpus[v]) continue;
      const i = g - g0, sx = b.x + b.pad + (k % b.cols) * b.sw, sy = b.y + b.pad + b.label + Math.floor(k / b.cols) * b.sh;
      return { x: sx + (i % b.gx) * b.c, y: sy + Math.floor(i / b.gx) * b.c, c: b.c, block: b };
    }
  }
  return null;
}

/* What is under (x, y): a GPU id, a supernode label, or nothing. */
function hitTest(x, y) {
  const L = view.layout, geom = view.geom;
  if (!geom) return null;
  for (const b of geom.blocks) {
    if (b.sn === undefined || x < b.x || x >= b.x + b.w || y < b.y || y >= b.y + b.h) continue;
    if (y < b.y + b.pad + b.label) return { sn: b.sn };
    const col = Math.floor((x - b.x - b.pad) / b.sw), row = Math.floor((y - b.y - b.pad - b.label) / b.sh);
    if (col < 0 || col >= b.cols || row < 0) return { sn: b.sn };
    const k = row * b.cols + col;
    if (k >= b.ns) return { sn: b.sn };
    const v = b.first + k, sx = b.x + b.pad + col * b.sw, sy = b.y + b.pad + b.label + row * b.sh;
    const i = Math.floor((y - sy) / b.c) * b.gx + Math.floor((x - sx) / b.c);
    if (Math.floor((x - sx) / b.c) >= b.gx || i < 0 || i >= L.servers.gpus[v]) return { sn: b.sn };
    return { gpu: L.servers.first_gpu[v] + i, server: v, sn: b.sn };
  }
  return null;
}

function gpuName(g) {
  const L = view.layout;
  let lo = 0, hi = L.servers.first_gpu.length - 1;
  while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (L.servers.first_gpu[mid] <= g) lo = mid; else hi = mid - 1; }
  return L.servers.name[lo] + "-gpu" + (g - L.servers.first_gpu[lo]);
}

function supernodeOfGpu(g) {
  const L = view.layout;
  for (let s = 0; s < L.supernode_count; s++) {
    const v = L.supernodes.first_server[s] + L.supernodes.servers[s] - 1;
    if (g < L.servers.first_gpu[v] + L.servers.gpus[v]) return s;
  }
  return -1;
}

/* ---- legend ------------------------------------------------------------------- */

function legend() {
  const box = $("legend"), G = view.gpus;
  box.textContent = "";
  const add = (colour, text) => {
    const s = el("span", { class: "item" });
    const sw = el("span", { class: "swatch" });
    sw.style.background = colour;
    s.append(sw, text);
    box.append(s);
  };
  if (view.mode === "state") {
    view.layout.state_names.forEach((n, i) => add(STATE_COLOURS[i], n));
  } else if (view.mode === "job") {
    add(IDLE, "idle"); add(HIDDEN, "another tenant's job");
    const ids = Object.keys(G.jobs).map(Number).sort((a, b) => G.jobs[b].gpus - G.jobs[a].gpus || a - b);
    for (const id of ids.slice(0, 12)) add(keyColour(id), "job " + id + " " + G.jobs[id].name + " (" + G.jobs[id].gpus + " GPUs)");
    if (ids.length > 12) box.append(el("span", { class: "item hint" }, "+" + (ids.length - 12) + " more jobs (colours repeat)"));
  } else if (view.mode === "tenant") {
    add(IDLE, "idle"); add(HIDDEN, "another tenant's job");
    for (const t of Object.keys(view.tenantIndex).sort()) add(keyColour(view.tenantIndex[t] + 5), t);
  } else if (view.mode === "health") {
    box.append(scaleLegend("health score (0-100)", 0, 100, healthColour));
    add(UNKNOWN, "unknown (no score yet)");
  } else {
    const m = METRICS[view.mode], [lo, hi] = view.range;
    box.append(scaleLegend(m.label + " (" + m.unit + ")", lo, hi, (v) => ramp(VIRIDIS, (v - lo) / (hi - lo || 1))));
    add(UNKNOWN, "not reported");
  }
}

function scaleLegend(title, lo, hi, colourOf) {
  const w = 220, svg = svgEl("svg", { width: w + 20, height: 34, class: "chart scale" });
  for (let i = 0; i < 40; i++)
    svg.append(svgEl("rect", { x: 10 + i * w / 40, y: 2, width: w / 40 + 0.5, height: 10, fill: colourOf(lo + (hi - lo) * (i + 0.5) / 40) }));
  for (const t of niceTicks(lo, hi, 5).filter((t) => t >= lo && t <= hi)) {
    const x = 10 + (t - lo) / (hi - lo || 1) * w;
    svg.append(svgEl("line", { x1: x, x2: x, y1: 12, y2: 16, stroke: "#9aa4ae" }));
    svg.append(svgEl("text", { x, y: 27, "text-anchor": "middle", class: "tick-label" }, fmt(t)));
  }
  const s = el("span", { class: "item" });
  s.append(title + " ", svg);
  return s;
}

/* ---- charts --------------------------------------------------------------------- */

function niceTicks(lo, hi, want) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / Math.max(1, want - 1), p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
  const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
  const out = [];
  for (let v = Math.floor(lo / step + 1e-9) * step; v <= hi + step * 0.5 && out.length < 40; v += step) {
    out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    if (v >= hi - step * 1e-9) break;
  }
  return out;
}

function fmt(v) {
  const a = Math.abs(v);
  if (a >= 1e6) return (v / 1e6) + "M";
  if (a >= 1e4) return (v / 1e3) + "k";
  return String(Math.round(v * 100) / 100);
}

/* A time-axis step (s) giving 3 to 6 ticks over span seconds. */
function timeStep(span) {
  for (const s of [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400])
    if (span / s <= 5) return s;
  return 86400 * Math.ceil(span / 86400 / 5);
}

function clock(t) { return new Date(t * 1000).toTimeString().slice(0, 5); }

/* A line chart: series [{name, colour, values}] over times (s), y in unit. */
function lineChart(title, unit, times, series, opts) {
  const o = Object.assign({ width: 420, height: 150, yMin: null, yMax: null }, opts || {});
  const m = { l: 44, r: 8, t: 18, b: 30 }, W = o.width, H = o.height;
  const svg = svgEl("svg", { width: W, height: H, class: "chart", viewBox: "0 0 " + W + " " + H });
  svg.append(svgEl("text", { x: m.l, y: 12, class: "chart-title" }, title));
  let lo = o.yMin, hi = o.yMax;
  const all = [].concat(...series.map((s) => s.values)).filter((v) => v !== null && isFinite(v));
  if (lo === null) lo = all.length ? Math.min(0, ...all) : 0;
  if (hi === null) hi = all.length ? Math.max(...all) : 1;
  if (hi <= lo) hi = lo + 1;
  const yt = niceTicks(lo, hi, 4);
  lo = Math.min(lo, yt[0]); hi = Math.max(hi, yt[yt.length - 1]);
  const t0 = times.length ? times[0] : 0, t1 = times.length > 1 ? times[times.length - 1] : t0 + 60;
  const X = (t) => m.l + (t - t0) / (t1 - t0 || 1) * (W - m.l - m.r);
  const Y = (v) => H - m.b - (v - lo) / (hi - lo) * (H - m.t - m.b);
  const grid = svgEl("g", { class: "grid" }), axis = svgEl("g", { class: "axis" });
  for (const t of yt) {
    grid.append(svgEl("line", { x1: m.l, x2: W - m.r, y1: Y(t), y2: Y(t) }));
    axis.append(svgEl("text", { x: m.l - 4, y: Y(t) + 3, "text-anchor": "end", class: "tick-label" }, fmt(t)));
  }
  const step = timeStep(t1 - t0);
  for (let t = Math.ceil(t0 / step) * step, n = 0; t <= t1 && n < 8; t += step, n++) {
    axis.append(svgEl("line", { x1: X(t), x2: X(t), y1: H - m.b, y2: H - m.b + 4 }));
    axis.append(svgEl("text", { x: X(t), y: H - m.b + 14, "text-anchor": "middle", class: "tick-label" },
      step < 60 ? new Date(t * 1000).toTimeString().slice(0, 8) : clock(t)));
  }
  axis.append(svgEl("path", { d: "M" + m.l + "," + m.t + "V" + (H - m.b) + "H" + (W - m.r), fill: "none" }));
  axis.append(svgEl("text", { x: (W + m.l) / 2, y: H - 2, "text-anchor": "middle", class: "axis-title" }, "local time"));
  axis.append(svgEl("text", { transform: "translate(10," + ((H - m.b + m.t) / 2) + ") rotate(-90)", "text-anchor": "middle", class: "axis-title" }, unit));
  svg.append(grid, axis);
  series.forEach((s) => {
    let d = "", pen = "M";
    s.values.forEach((v, i) => {
      if (v === null || !isFinite(v)) { pen = "M"; return; }
      d += pen + X(times[i]).toFixed(1) + "," + Y(v).toFixed(1) + " ";
      pen = "L";
    });
    svg.append(svgEl("path", { d, fill: "none", stroke: s.colour, "stroke-width": 1.6, class: "series" }));
  });
  if (series.length > 1 || o.legend) {
    const lg = svgEl("g", { class: "legend" });
    let x = m.l + 90;
    for (const s of series) {
      lg.append(svgEl("rect", { x, y: 5, width: 10, height: 8, fill: s.colour }));
      lg.append(svgEl("text", { x: x + 13, y: 12 }, s.name));
      x += 18 + 6.2 * s.name.length;
    }
    svg.append(lg);
  }
  return svg;
}

/* ---- GPU and job detail -------------------------------------------------------------- */

function row(dl, k, v) {
  const dd = el("dd");
  if (v instanceof Node) dd.append(v); else dd.textContent = v;
  dl.append(el("dt", {}, k), dd);
}

function jobLink(id, text) {
  const b = el("button", { class: "link job", "data-job": id }, text || "job " + id);
  b.addEventListener("click", () => selectJob(id));
  return b;
}

async function selectGpu(g) {
  view.selectedGpu = g;
  view.selectedJob = null;
  view.highlight = null;
  draw();
  const name = gpuName(g), box = $("detail");
  box.dataset.gpu = name;
  delete box.dataset.job;
  try {
    const [d, h] = await Promise.all([api("/v1/telemetry/gpus/" + encodeURIComponent(name)),
      api("/v1/telemetry/gpus/" + encodeURIComponent(name) + "/history")]);
    if (view.selectedGpu !== g) return;
    box.textContent = "";
    box.append(el("h2", {}, "GPU " + d.name));
    const dl = el("dl");
    row(dl, "server", d.node);
    row(dl, "job", h.job > 0 ? jobLink(h.job, "job " + h.job + (h.job_name ? " " + h.job_name : "")) : h.job < 0 ? "another tenant's job" : "idle");
    row(dl, "tenant", h.tenant || "-");
    row(dl, "admin state", d.state);
    row(dl, "agent", d.agent);
    const score = d.health && d.health.score !== null && d.health.score !== undefined ? d.health.score : null;
    row(dl, "health score", score === null ? "unknown" : score.toFixed(0) + (d.health.action ? " (" + d.health.action + ")" : ""));
    const latest = { temp_gpu: ["temperature", "°C"], power: ["power", "W"], clock_sm: ["SM clock", "MHz"], util_gpu: ["utilisation", "%"] };
    for (const k in latest) {
      const m = d.metrics[k];
      if (m) row(dl, latest[k][0], m.value === null ? m.status : m.value + " " + latest[k][1]);
    }
    if (d.metrics.mem_used && d.metrics.mem_used.value !== null)
      row(dl, "memory used", (d.metrics.mem_used.value / 2 ** 30).toFixed(1) + " GiB");
    box.append(dl);
    const fh = el("h2", { id: "findings-title" }, "Findings (" + d.findings.length + ")");
    const ul = el("ul", { id: "findings" });
    if (!d.findings.length) ul.append(el("li", { class: "hint" }, "none"));
    for (const f of d.findings) ul.append(el("li", { class: "finding " + f.severity }, f.kind + ": " + f.message));
    box.append(fh, ul);
    const hh = el("h2", {}, "Last " + Math.round(h.capacity * h.step_s / 60) + " min (" + h.time_s.length + " samples, every " + h.step_s + " s)");
    const charts = el("div", { class: "charts", id: "gpu-charts" });
    for (const [key, label, unit] of SERIES)
      charts.append(lineChart(label, unit, h.time_s, [{ name: label, colour: "#56B4E9", values: h.series[key] }],
        { width: 215, height: 130, yMin: key === "util_pct" ? 0 : null, yMax: key === "util_pct" ? 100 : null }));
    box.append(hh, charts);
  } catch (e) {
    box.textContent = "";
    box.append(el("h2", {}, "GPU " + name), el("p", { class: "hint" }, e.message));
  }
}

function highlightJob(id) {
  const G = view.gpus, hl = new Uint8Array(G.gpus);
  for (let g = 0; g < G.gpus; g++) hl[g] = G.job[g] === id ? 1 : 0;
  view.highlight = hl;
}

async function selectJob(id) {
  view.selectedJob = id;
  view.selectedGpu = null;
  highlightJob(id);
  draw();
  const box = $("detail");
  box.dataset.job = id;
  delete box.dataset.gpu;
  try {
    const [j, ev] = await Promise.all([api("/v1/jobs/" + id), api("/v1/jobs/" + id + "/events?limit=200")]);
    if (view.selectedJob !== id) return;
    box.textContent = "";
    box.append(el("h2", {}, "Job " + j.id + " " + (j.name || "")));
    const dl = el("dl");
    row(dl, "tenant", j.tenant);
    row(dl, "state", j.state + (j.pending_reason ? " (" + j.pending_reason + ")" : ""));
    row(dl, "GPUs", String(j.gpus));
    row(dl, "on the map", String(view.highlight.reduce((a, v) => a + v, 0)) + " GPUs highlighted");
    if (j.nodes && j.nodes.length) row(dl, "servers", j.nodes.join(", "));
    row(dl, "requeues", String(j.requeues || 0));
    if (j.goodput !== undefined && j.goodput !== null) {
      const gs = j.goodput_gpu_s || {};
      row(dl, "goodput", (100 * j.goodput).toFixed(1) + " %" + (gs.lost > 0 ? " (" + (gs.lost / 3600).toFixed(2) +
        " GPU-h lost in " + gs.interrupted_runs + " interrupted run" + (gs.interrupted_runs === 1 ? "" : "s") + ")" : ""));
    }
    if (j.detail) row(dl, "detail", j.detail);
    box.append(dl, el("h2", {}, "Timeline"), timeline(j, ev.items || []));
    const ul = el("ul", { id: "job-events" });
    for (const e of ev.items || []) ul.append(el("li", {}, clock(e.time_s) + " " + e.kind + (e.message ? ": " + e.message : "")));
    box.append(ul);
  } catch (e) {
    box.textContent = "";
    box.append(el("h2", {}, "Job " + id), el("p", { class: "hint" }, e.message));
  }
}

/* A job's life on a time axis: one mark per event, the running spans shaded
 * green, the pending spans amber with their reason (events "pending", one
 * per change of reason) written under them. */
function timeline(j, events) {
  const W = 420, H = 74, m = { l: 10, r: 10 };
  const svg = svgEl("svg", { width: W, height: H, class: "chart", id: "timeline" });
  const now = Date.now() / 1000, t0 = j.submit_time_s || (events[0] && events[0].time_s) || now;
  const t1 = Math.max(j.end_time_s || now, t0 + 1);
  const X = (t) => m.l + (t - t0) / (t1 - t0) * (W - m.l - m.r);
  const axis = svgEl("g", { class: "axis" });
  axis.append(svgEl("path", { d: "M" + m.l + ",40H" + (W - m.r), fill: "none" }));
  const step = timeStep(t1 - t0);
  for (let t = Math.ceil(t0 / step) * step, n = 0; t <= t1 && n < 8; t += step, n++) {
    axis.append(svgEl("line", { x1: X(t), x2: X(t), y1: 40, y2: 44 }));
    axis.append(svgEl("text", { x: X(t), y: 56, "text-anchor": "middle", class: "tick-label" }, new Date(t * 1000).toTimeString().slice(0, step < 60 ? 8 : 5)));
  }
  axis.append(svgEl("text", { x: W / 2, y: 70, "text-anchor": "middle", class: "axis-title" }, "local time"));
  svg.append(axis);
  let runStart = null, wait = null;
  const colours = { submitted: "#9aa4ae", started: "#009E73", interrupted: "#D55E00", preempted: "#E69F00", requeued: "#E69F00", cancelled: "#CC79A7", timeout: "#0072B2", pending: "#F0E442" };
  const pendingSpan = (w, t) => {
    const x0 = X(w.t), wd = Math.max(1, X(t) - x0);
    const r = svgEl("rect", { x: x0, y: 30, width: wd, height: 8, fill: "#F0E442", stroke: "#8a7d00", "stroke-width": 0.5, class: "pending-span", "data-reason": w.reason });
    r.append(svgEl("title", {}, "pending: " + w.message));
    svg.append(r);
    if (wd > 6 * w.reason.length) svg.append(svgEl("text", { x: x0 + 2, y: 26, class: "pending-reason" }, w.reason));
  };
  for (const e of events) {
    if (wait && e.kind !== "checkpoint") { pendingSpan(wait, e.time_s); wait = null; }
    if (e.kind === "pending") { wait = { t: e.time_s, reason: (e.message || "").split(":")[0], message: e.message || "" }; continue; }
    if (e.kind === "started") runStart = e.time_s;
    else if (runStart !== null && e.kind !== "checkpoint") {
      svg.append(svgEl("rect", { x: X(runStart), y: 30, width: Math.max(1, X(e.time_s) - X(runStart)), height: 8, fill: "#009E7388" }));
      runStart = null;
    }
    const c = colours[e.kind] || "#56B4E9";
    const mk = svgEl("circle", { cx: X(e.time_s), cy: 34, r: 4, fill: c, class: "event-mark" });
    mk.append(svgEl("title", {}, clock(e.time_s) + " " + e.kind + (e.message ? ": " + e.message : "")));
    svg.append(mk);
  }
  if (runStart !== null)
    svg.append(svgEl("rect", { x: X(runStart), y: 30, width: Math.max(1, X(t1) - X(runStart)), height: 8, fill: "#009E7388" }));
  if (wait) pendingSpan(wait, t1);
  const lg = svgEl("g", { class: "legend" });
  let x = m.l;
  for (const k of ["submitted", "started", "interrupted", "preempted", "cancelled"]) {
    lg.append(svgEl("circle", { cx: x + 4, cy: 10, r: 4, fill: colours[k] }));
    lg.append(svgEl("text", { x: x + 11, y: 14 }, k));
    x += 16 + 6 * k.length;
  }
  lg.append(svgEl("rect", { x: x, y: 6, width: 10, height: 8, fill: "#F0E442", stroke: "#8a7d00", "stroke-width": 0.5 }));
  lg.append(svgEl("text", { x: x + 13, y: 14 }, "pending"));
  svg.append(lg);
  return svg;
}

/* ---- search ----------------------------------------------------------------------------- */

function search(q) {
  q = q.trim();
  const L = view.layout, G = view.gpus, out = $("search-result");
  if (!q) { view.highlight = null; view.selectedJob = null; out.textContent = ""; draw(); return; }
  const jm = /^(?:job\s*|#)?(\d+)$/i.exec(q);
  if (jm && G.jobs[jm[1]]) {
    const id = Number(jm[1]);
    focusSupernode(supernodeOfGpu(G.job.indexOf(id)));
    out.textContent = "job " + id + ": " + G.jobs[id].gpus + " GPUs";
    return selectJob(id);
  }
  const gm = /^(.*)-gpu(\d+)$/.exec(q), v = L.servers.name.indexOf(gm ? gm[1] : q);
  if (v >= 0 && gm && Number(gm[2]) < L.servers.gpus[v]) {
    const g = L.servers.first_gpu[v] + Number(gm[2]);
    view.highlight = null;
    focusSupernode(supernodeOfGpu(g));
    out.textContent = "GPU " + q;
    return selectGpu(g);
  }
  const hl = new Uint8Array(G.gpus);
  let n = 0, first = -1;
  if (v >= 0) {
    for (let i = 0; i < L.servers.gpus[v]; i++) hl[L.servers.first_gpu[v] + i] = 1;
    n = L.servers.gpus[v]; first = L.servers.first_gpu[v];
  } else if (L.supernodes.name.indexOf(q) >= 0) {
    const s = L.supernodes.name.indexOf(q);
    view.zoom = { kind: "sn", index: s };
    view.highlight = null;
    out.textContent = "supernode " + q;
    crumbs(); draw();
    return;
  } else {
    for (let g = 0; g < G.gpus; g++) {
      const j = G.jobs[G.job[g]];
      if (j && (j.tenant === q || j.name === q)) { hl[g] = 1; n++; if (first < 0) first = g; }
    }
  }
  if (!n) { out.textContent = "no GPU, server, supernode, job or tenant '" + q + "'"; return; }
  view.highlight = hl;
  focusSupernode(supernodeOfGpu(first));
  out.textContent = n + " GPUs match '" + q + "'";
  draw();
}

/* Zooms into supernode s when the map's cells are too small to see it. */
function focusSupernode(s) {
  if (s < 0) return;
  if (view.geom && view.geom.c < 6 && (!view.zoom || view.zoom.kind !== "sn" || view.zoom.index !== s))
    view.zoom = { kind: "sn", index: s };
  crumbs();
}

/* ---- zoom crumbs --------------------------------------------------------------------------- */

function crumbs() {
  const nav = $("crumbs"), L = view.layout;
  nav.textContent = "";
  const add = (text, zoom) => {
    const b = el("button", {}, text);
    const here = JSON.stringify(zoom) === JSON.stringify(view.zoom);
    if (here) b.setAttribute("aria-current", "true");
    b.addEventListener("click", () => { view.zoom = zoom; crumbs(); draw(); });
    nav.append(b);
  };
  add("all " + L.supernode_count + " supernodes, " + L.gpus + " GPUs", null);
  if (!view.zoom) return;
  const s = view.zoom.kind === "sn" ? view.zoom.index : -1;
  const pod = view.zoom.kind === "pod" ? view.zoom.index : L.pods.of_supernode[s];
  if (L.pods.count > 1) add("pod " + pod, { kind: "pod", index: pod });
  if (s >= 0) add(L.supernodes.name[s], { kind: "sn", index: s });
}

/* ---- summary: counts, chart, queue, events ------------------------------------------------------ */

function drawCounts(s) {
  const box = $("counts");
  box.textContent = "";
  const add = (k, v, key) => {
    const span = el("span", { "data-count": key });
    span.append(k + " ", el("b", {}, String(v)));
    box.append(span);
  };
  add("GPUs", s.gpus, "gpus");
  /* Each GPU in exactly one state (lib/control/counts.c): they sum to GPUs,
   * the same figures as sn top, /metrics and /v1/pools. */
  const states = s.gpu_states || {};
  for (const k of ["busy", "free", "held", "cordoned", "draining", "drained", "down"])
    if (k in states && (states[k] > 0 || k === "busy" || k === "free" || k === "down"))
      add((k === "busy" ? "GPUs " : "") + k, states[k], "gpus-" + k);
  add("running", s.jobs.running, "running");
  add("pending", s.jobs.pending, "pending");
  add("agents up", s.agents.up, "agents-up");
  add("agents down", s.agents.down, "agents-down");
  /* Cut at 0.01 % (not rounded): a run that lost anything never shows 100 %. */
  const ratio = s.goodput ? s.goodput.ratio : null;
  add("goodput", ratio !== null && ratio !== undefined ? (Math.floor(ratio * 10000) / 100).toFixed(2) + " %" : "-", "goodput");
  $("cluster").textContent = s.cluster;
  const fence = s.fence || {};
  $("banner").hidden = !fence.fenced;
  if (fence.fenced)
    $("banner").textContent = "snd is fenced: " + (fence.silent || "many") + " servers went silent at once (more than " +
      fence.share_pct + " %); none is evicted until heartbeats return or an operator runs sn admin unfence";
  const br = s.breaker || {};
  if (!fence.fenced && br.open) {
    $("banner").hidden = false;
    $("banner").textContent = "health automation stopped: circuit breaker open for " +
      br.scopes.map((x) => x.scope + " " + x.name).join(", ") + " (" + br.suppressed_total +
      " GPU actions refused); POST /v1/health/breaker/reset resumes it";
  }
}

function drawChart(hist) {
  const box = $("chart");
  box.textContent = "";
  if (hist.length < 2) { box.append(el("p", { class: "hint" }, "collecting: the chart starts after two samples (5 s apart)")); return; }
  const t = hist.map((p) => p.time_s);
  box.append(lineChart("Cluster over time", "%", t, [
    { name: "GPUs allocated", colour: "#0072B2", values: hist.map((p) => p.allocated_fraction * 100) },
    { name: "GPU utilisation", colour: "#009E73", values: hist.map((p) => p.util_mean_pct) },
    { name: "goodput", colour: "#E69F00", values: hist.map((p) => (p.goodput === null ? null : p.goodput * 100)) }],
  { width: 430, height: 160, yMin: 0, yMax: 100, legend: true }));
}

/* Why a pending job waits, in words, with the numbers the map holds. */
function explain(j) {
  const text = REASONS[j.pending_reason] || "see docs/api.md for this pending reason";
  const L = view.layout;
  if (!view.free || (j.pending_reason !== "no-supernode-fits" && j.pending_reason !== "health")) return text;
  const [best, bestSn] = view.free;
  return text + ": it needs " + j.gpus + " GPUs; the most free, up and healthy (score ≥ 60 or unknown) in one supernode is " +
    best + (bestSn >= 0 ? " in " + L.supernodes.name[bestSn] : "");
}

/* [GPUs, supernode] of the supernode with the most free, up, healthy GPUs. */
function mostFree() {
  const G = view.gpus, L = view.layout;
  let best = 0, bestSn = -1;
  for (let s = 0; s < L.supernode_count; s++) {
    const v0 = L.supernodes.first_server[s], v1 = v0 + L.supernodes.servers[s] - 1;
    let free = 0;
    for (let g = L.servers.first_gpu[v0]; g < L.servers.first_gpu[v1] + L.servers.gpus[v1]; g++)
      free += G.job[g] === 0 && G.state[g] === 0 && (G.health[g] < 0 || G.health[g] >= 60);
    if (free > best) { best = free; bestSn = s; }
  }
  return [best, bestSn];
}

function drawQueue(s) {
  if (view.gpus && view.layout) view.free = mostFree();
  const tb = $("queue").tBodies[0], f = $("queue-filter").value.trim().toLowerCase();
  tb.textContent = "";
  const k = view.sort.key, dir = view.sort.asc ? 1 : -1;
  const rows = s.queue.filter((j) => !f || [j.id, j.name, j.tenant, j.pending_reason, j.shape].join(" ").toLowerCase().includes(f))
    .sort((a, b) => (a[k] < b[k] ? -1 : a[k] > b[k] ? 1 : 0) * dir);
  for (const j of rows) {
    const tr = el("tr", { class: "job-row", "data-job": j.id });
    for (const v of [j.id, j.name, j.tenant, j.gpus]) tr.append(el("td", {}, String(v)));
    const td = el("td"), det = el("details");
    det.append(el("summary", {}, j.pending_reason || ""), el("div", { class: "hint reason" },
      (j.pending_detail ? j.pending_detail + ". " : "") + explain(j)));
    td.append(det);
    tr.append(td, el("td", {}, j.shape || ""));
    tr.addEventListener("click", (e) => { if (!e.target.closest("details")) selectJob(j.id); });
    tb.append(tr);
  }
  if (!rows.length) {
    const tr = el("tr");
    tr.append(el("td", { colspan: 6, class: "hint" }, s.queue.length ? "no pending job matches" : "no pending jobs"));
    tb.append(tr);
  }
  for (const th of $("queue").tHead.rows[0].cells) {
    th.classList.toggle("sorted", th.dataset.key === k);
    th.classList.toggle("asc", th.dataset.key === k && view.sort.asc);
  }
}

function drawEvents(s) {
  const sel = $("event-kind"), kinds = new Set(s.events.map((e) => e.kind));
  for (const k of kinds)
    if (![...sel.options].some((o) => o.value === k)) sel.append(el("option", { value: k }, k));
  const kind = sel.value, f = $("event-filter").value.trim().toLowerCase();
  const ul = $("events");
  ul.textContent = "";
  for (const e of s.events) {
    if (kind && e.kind !== kind) continue;
    const text = "job " + e.job_id + " " + e.kind + (e.message ? ": " + e.message : "");
    if (f && !text.toLowerCase().includes(f) && String(e.job_id) !== f) continue;
    const li = el("li", { "data-seq": e.seq });
    li.append(el("span", { class: "seq" }, "#" + e.seq), clock(e.time_s) + " ", jobLink(e.job_id), text.slice(("job " + e.job_id).length));
    ul.append(li);
  }
  if (!ul.children.length) ul.append(el("li", { class: "hint" }, "no events"));
}

/* ---- polling ------------------------------------------------------------------------------------- */

async function refresh() {
  clearTimeout(view.timer);
  try {
    if (!view.layout) {
      view.layout = await api("/v1/dashboard/layout");
      crumbs();
    }
    const metric = METRICS[view.mode] ? "?metric=" + view.mode : "";
    const [gpus, sum] = await Promise.all([api("/v1/dashboard/gpus" + metric), api("/v1/dashboard/summary")]);
    view.gpus = gpus;
    view.sum = sum;
    for (const id in gpus.jobs) {
      const t = gpus.jobs[id].tenant;
      if (!(t in view.tenantIndex)) view.tenantIndex[t] = Object.keys(view.tenantIndex).length;
    }
    if (view.selectedJob !== null) highlightJob(view.selectedJob);
    draw();
    legend();
    drawCounts(sum);
    drawQueue(sum);
    drawEvents(sum);
    drawChart(sum.history);
    $("status").textContent = "updated " + new Date().toLocaleTimeString();
    $("status").className = "";
    document.body.dataset.ready = "1";
  } catch (e) {
    $("status").textContent = e.message;
    $("status").className = "error";
    if (e.status === 401) return showLogin();
  }
  /* Poll less often on large clusters: the gpus answer grows with them. */
  const n = view.layout ? view.layout.gpus : 0;
  view.timer = setTimeout(refresh, n > 20000 ? 10000 : n > 2000 ? 5000 : 2000);
}

function showLogin() {
  $("app").hidden = true;
  $("login").hidden = false;
}

function onMap(e, click) {
  const r = $("map").getBoundingClientRect(), h = hitTest(e.clientX - r.left, e.clientY - r.top), tip = $("tip");
  if (!h || h.gpu === undefined) {
    tip.hidden = true;
    if (click && h && h.sn !== undefined) { view.zoom = { kind: "sn", index: h.sn }; crumbs(); draw(); }
    return;
  }
  if (click) return selectGpu(h.gpu);
  const G = view.gpus, j = G.jobs[G.job[h.gpu]];
  const lines = [gpuName(h.gpu), "state " + view.layout.state_names[G.state[h.gpu]],
    "health " + (G.health[h.gpu] < 0 ? "unknown" : G.health[h.gpu]),
    G.job[h.gpu] > 0 ? "job " + G.job[h.gpu] + (j ? " " + j.name + " (" + j.tenant + ")" : "") : G.job[h.gpu] < 0 ? "another tenant's job" : "idle"];
  if (G.values) lines.push(METRICS[view.mode].label + " " + (G.values[h.gpu] === null ? "not reported" : G.values[h.gpu] + " " + METRICS[view.mode].unit));
  tip.textContent = lines.join("\n");
  tip.hidden = false;
  const box = $("map-box").getBoundingClientRect();
  tip.style.left = (e.clientX - box.left + 14) + "px";
  tip.style.top = (e.clientY - box.top + 14) + "px";
}

function start() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem("sn-token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  view.token = sessionStorage.getItem("sn-token");
  view.tenantIndex = {};
  $("mode").value = view.mode;
  $("mode").addEventListener("change", (e) => { view.mode = e.target.value; refresh(); });
  $("search-form").addEventListener("submit", (e) => { e.preventDefault(); search($("search").value); });
  $("map").addEventListener("mousemove", (e) => onMap(e, false));
  $("map").addEventListener("mouseleave", () => { $("tip").hidden = true; });
  $("map").addEventListener("click", (e) => onMap(e, true));
  $("queue-filter").addEventListener("input", () => view.sum && drawQueue(view.sum));
  $("event-kind").addEventListener("change", () => view.sum && drawEvents(view.sum));
  $("event-filter").addEventListener("input", () => view.sum && drawEvents(view.sum));
  for (const th of $("queue").tHead.rows[0].cells)
    th.addEventListener("click", () => {
      view.sort = { key: th.dataset.key, asc: view.sort.key === th.dataset.key ? !view.sort.asc : true };
      if (view.sum) drawQueue(view.sum);
    });
  window.addEventListener("resize", () => draw());
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
