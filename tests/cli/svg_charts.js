// Renders each SVG given on the command line in headless Chromium and checks
// that it reads like a chart: at least three tick labels and a legend, each
// laid out with a non-empty box inside the picture (run by svg_charts.sh).
"use strict";
const path = require("path");
const { chromium } = require("playwright-core");

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
  console.log("ok - " + what);
}

(async () => {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu"] });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    for (const file of process.argv.slice(2)) {
      const name = path.basename(file);
      await page.goto("file://" + path.resolve(file));
      const r = await page.evaluate(() => {
        const svg = document.querySelector("svg");
        const box = svg.getBoundingClientRect();
        const inside = (b) => b.width > 0 && b.height > 0 && b.left >= box.left - 1 &&
          b.right <= box.right + 1 && b.top >= box.top - 1 && b.bottom <= box.bottom + 1;
        const ticks = [...document.querySelectorAll(".tick-label")];
        const legends = [...document.querySelectorAll(".legend")];
        return {
          ticks: ticks.length,
          ticksInside: ticks.filter((t) => inside(t.getBoundingClientRect())).length,
          legends: legends.length,
          legendsInside: legends.filter((l) => inside(l.getBoundingClientRect())).length,
        };
      });
      check(r.ticks >= 3 && r.ticksInside === r.ticks,
        `${name}: ${r.ticksInside} of ${r.ticks} tick labels laid out inside the picture`);
      check(r.legends >= 1 && r.legendsInside === r.legends,
        `${name}: ${r.legendsInside} of ${r.legends} legends laid out inside the picture`);
    }
    check(errors.length === 0, "no console errors");
  } finally {
    await browser.close();
  }
})().catch((e) => { console.error(e.message); process.exit(1); });
