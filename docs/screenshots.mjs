// Open the built site in Chromium, offline, and check what a reader sees.
//
//   node docs/screenshots.mjs HTML_DIR OUT_DIR      (run by `make docs-screenshots`)
//
// For every page below: load it from file:// with every non-file request refused (the site
// must work from disk with no network), wait until Mermaid has drawn each diagram, and save
// a full-page PNG.  For every diagram: save a PNG of its "full size" view, and check
//   * it was drawn (no Mermaid error picture, no diagram left as text), its start state in view,
//   * every line of every transition label of its Mermaid source is drawn, each on one line,
//   * no two labels overlap, and no label covers a state,
//   * it fits the page column or its frame scrolls sideways (nothing is cut off);
// and that no page is wider than the window and no code block wider than its box.
// Prints one line per diagram and exits 1 when a check fails.  playwright-core (PLAYWRIGHT_CORE:
// the path of its index.mjs, which the Makefile installs under .cache/) drives Debian's chromium
// (CHROMIUM, default /usr/bin/chromium); it downloads no browser.

import { mkdirSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const { chromium } = await import(process.env.PLAYWRIGHT_CORE
  ? pathToFileURL(process.env.PLAYWRIGHT_CORE).href : "playwright-core");

const PAGES = ["diagrams", "not-modelled", "index", "what-if", "cli", "api"];
const MAX_SHOT_HEIGHT = 12000;
const VIEWPORT = { width: 1280, height: 900 };
const [htmlDir, outDir] = process.argv.slice(2).map((p) => resolve(p));
if (!htmlDir || !outDir) {
  console.error("usage: node docs/screenshots.mjs HTML_DIR OUT_DIR");
  process.exit(2);
}
mkdirSync(join(outDir, "api"), { recursive: true });
// ... and every page of the API reference (docs/api/), one per group of modules.
PAGES.push(...readdirSync(join(htmlDir, "api")).filter((f) => f.endsWith(".html")).sort()
  .map((f) => `api/${f.slice(0, -".html".length)}`));

// playwright gives the browser a fresh, empty profile of its own (--user-data-dir) and removes it.
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  chromiumSandbox: false,
  args: ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
const failures = [];
try {
  const context = await browser.newContext({ viewport: VIEWPORT });
  const refused = [];
  await context.route((url) => url.protocol !== "file:", (route) => {
    refused.push(route.request().url());
    return route.abort();
  });
  for (const name of PAGES) {
    const page = await context.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    const url = pathToFileURL(join(htmlDir, `${name}.html`)).href;
    await page.goto(url, { waitUntil: "load" });
    const count = await page.locator("pre.mermaid").count();
    if (count > 0) {
      await page.waitForFunction(() => document.documentElement.dataset.machineDiagrams === "drawn",
                                 null, { timeout: 30000 })
        .catch(() => failures.push(`${name}: diagrams not drawn within 30 s (is mermaid.min.js served?)`));
    }
    for (const e of errors) failures.push(`${name}: script error: ${e}`);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    if (wide > VIEWPORT.width) failures.push(`${name}: ${wide}px wide, wider than the window (${VIEWPORT.width}px)`);
    // A code block wraps a long line (docs/_static/site.css) rather than hiding its end.
    const cut = await page.evaluate(() => [...document.querySelectorAll("div.body div.highlight pre")]
      .filter((pre) => pre.scrollWidth > pre.clientWidth + 1).map((pre) => pre.textContent.split("\n")[0]));
    for (const first of cut) failures.push(`${name}: a code block is wider than its box: ${first}`);
    // A very long page (an API reference page) is shot down to its first screens only.
    const shot = join(outDir, `${name}.png`);
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    await page.screenshot({ path: shot, fullPage: true,
                            clip: height <= MAX_SHOT_HEIGHT ? undefined : { x: 0, y: 0, width: VIEWPORT.width, height: 3000 } });
    console.log(`${shot}${height <= MAX_SHOT_HEIGHT ? "" : ` (the top 3000px of ${height}px)`}`);
    for (const report of await page.evaluate(checkDiagrams)) {
      const png = join(outDir, `${name}-${report.machine}.png`);
      if (report.width > 0) await shootFullSize(context, url, report, png);
      console.log(`${png}  ${report.width}x${report.height}px in a ${report.column}px column` +
                  `${report.scrolls ? " (scrolls sideways)" : ""}, ` +
                  `${report.labelLines} label lines drawn of ${report.expectedLines}, ` +
                  `${report.overlaps.length} overlaps`);
      for (const problem of report.problems) failures.push(`${name} ${report.machine}: ${problem}`);
    }
    await page.close();
  }
  for (const url of refused) failures.push(`the site asked the network for ${url}`);
} finally {
  await browser.close();
}
if (failures.length) {
  for (const f of failures) console.error(`FAIL ${f}`);
  process.exit(1);
}
console.log("every diagram drawn, complete, without overlapping labels, and within its frame");

// A diagram's "full size" view (the page at #<machine>-diagram) in a window as large as the
// diagram: the PNG shows all of it at natural size, styled as the site styles it.
async function shootFullSize(context, url, report, path) {
  const page = await context.newPage();
  await page.setViewportSize({ width: report.width + 64, height: report.height + 96 });
  await page.goto(`${url}#${report.machine}-diagram`, { waitUntil: "load" });
  await page.waitForFunction(() => document.documentElement.dataset.machineDiagrams === "drawn",
                             null, { timeout: 30000 });
  await page.locator(`#${report.machine}-diagram div.machine-diagram-canvas svg`).screenshot({ path });
  await page.close();
}

// Runs in the page: one report per drawn diagram.
function checkDiagrams() {
  const intersects = (a, b) =>
    a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const text = (el) => el.textContent.replace(/\s+/g, " ").trim();
  return [...document.querySelectorAll("figure.machine-diagram")].map((figure) => {
    const machine = figure.dataset.machine;
    const canvas = figure.querySelector(".machine-diagram-canvas");
    const svg = canvas.querySelector("svg");
    const problems = [];
    if (!svg) return { machine, problems: ["not drawn"], overlaps: [], width: 0, height: 0,
                       column: canvas.clientWidth, scrolls: false, labelLines: 0, expectedLines: 0 };
    if (svg.getAttribute("aria-roledescription") === "error") problems.push("Mermaid drew an error");

    // Every line of every transition label in the source must be drawn.
    const source = figure.querySelector("details pre")?.textContent ?? "";
    const expected = [];
    for (const line of source.split("\n")) {
      const m = line.match(/^\s*\S+ --> \S+?: (.+)$/);
      if (m) expected.push(...m[1].split("<br/>").map((s) => s.trim()));
    }
    const labels = [...svg.querySelectorAll("g.edgeLabel")].filter((g) => text(g) !== "");
    const lines = (g) => (g.querySelector("p")?.innerText ?? g.textContent).split("\n").map((s) => s.trim())
      .filter(Boolean);
    const drawn = labels.flatMap(lines);
    const missing = expected.filter((line) => !drawn.includes(line));
    if (missing.length) problems.push(`labels not drawn: ${missing.join("; ")}`);
    if (drawn.length !== expected.length) {
      problems.push(`${drawn.length} label lines drawn for the source's ${expected.length}`);
    }
    // ... each on one line: a wrapped line reads as two edges.
    for (const g of labels) {
      const div = g.querySelector("foreignObject > div");
      const rows = div && Math.round(div.getBoundingClientRect().height / parseFloat(getComputedStyle(div).lineHeight));
      if (div && rows !== lines(g).length) problems.push(`label "${lines(g).join(" / ")}" wraps onto ${rows} lines`);
    }

    // No label overlaps another label or a state.
    const boxes = labels.map((g) => ({ what: `label "${lines(g).join(" / ")}"`, r: g.getBoundingClientRect() }));
    const states = [...svg.querySelectorAll("g.node")].map((g) => ({ what: `state "${text(g)}"`,
                                                                   r: g.getBoundingClientRect() }));
    const overlaps = [];
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        if (intersects(boxes[i].r, boxes[j].r)) overlaps.push(`${boxes[i].what} and ${boxes[j].what}`);
      }
      for (const s of states) {
        if (intersects(boxes[i].r, s.r)) overlaps.push(`${boxes[i].what} and ${s.what}`);
      }
    }
    if (overlaps.length) {
      problems.push(`${overlaps.length} overlaps, e.g. ${overlaps.slice(0, 3).join("; ")}`);
    }

    // The frame opens on the start state.
    const start = svg.querySelector('g[id*="-state-root_start"]')?.getBoundingClientRect();
    const frame = canvas.getBoundingClientRect();
    if (!start || start.left < frame.left || start.right > frame.right) problems.push("start state not in view");

    // Nothing is cut off: wider than the column means the frame scrolls.
    const box = svg.getBoundingClientRect();
    const scrolls = canvas.scrollWidth > canvas.clientWidth;
    if (box.width > canvas.clientWidth && getComputedStyle(canvas).overflowX !== "auto") {
      problems.push(`${Math.round(box.width)}px wide in a ${canvas.clientWidth}px frame that does not scroll`);
    }
    return { machine, problems, overlaps, width: Math.round(box.width),
             height: Math.round(box.height), column: canvas.clientWidth, scrolls,
             labelLines: drawn.length, expectedLines: expected.length };
  });
}
