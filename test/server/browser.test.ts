import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, run } from "../cli/helpers.ts";
import { ARTIFACTS, chromiumAvailable, launchChromium } from "../support/browser.ts";

let browser: Browser;

// The status page has its own suite: status-page.test.ts.
describe.skipIf(!chromiumAvailable)("in headless Chromium", () => {
  beforeAll(async () => {
    ensureBuilt();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("the compare report opens offline: one chart per pattern of columns, labelled time axes", async () => {
    const html = join(ARTIFACTS, "compare-report.html");
    const r = await run([
      "compare",
      "--generate",
      "bursty",
      "--seed",
      "3",
      "--limit",
      "10",
      "--duration",
      "30s",
      "--html",
      html,
    ]);
    expect(r.status).toBe(0);
    const context = await browser.newContext({ offline: true, viewport: { width: 820, height: 900 } });
    const page = await context.newPage();
    const requests: string[] = [];
    page.on("request", (req) => requests.push(req.url()));
    await page.goto(pathToFileURL(html).href);
    const rows = await page.$$eval("#summary tbody tr", (trs) => trs.map((tr) => tr.getAttribute("data-algorithm")));
    expect(rows).toEqual(["fixed-window", "sliding-log", "sliding-window", "token-bucket", "gcra", "leaky-bucket"]);
    // On this trace the window algorithms decide alike per column, and so do the bucket ones:
    // two charts, each naming its algorithms and saying why, never five or six identical ones.
    const groups = await page.$$eval("section.algorithm", (ss) => ss.map((s) => s.getAttribute("data-algorithms")));
    expect(groups).toEqual(["fixed-window sliding-log sliding-window", "token-bucket gcra leaky-bucket"]);
    expect(await page.textContent('section[data-algorithms~="gcra"] p.same')).toContain("same admissions by design");
    const bars = await page.$$eval(
      'section[data-algorithms~="token-bucket"] rect.admitted',
      (rects) => rects.filter((r) => Number(r.getAttribute("height")) > 0).length,
    );
    expect(bars).toBeGreaterThan(0);
    // The time axis has ticks all along, not only its two ends.
    const ticks = await page.$$eval("section.algorithm svg.chart text.x-tick", (ts) => ts.map((t) => t.textContent));
    expect(ticks.slice(0, 6)).toEqual(["0 s", "5 s", "10 s", "15 s", "20 s", "25 s"]);
    expect(await page.isVisible("svg.zoom")).toBe(true);
    expect(requests.every((u) => u.startsWith("file:"))).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, "compare-report.png"), fullPage: true });
    await context.close();
  });

  it("the compare report's zoom shows fixed-window's 2× boundary burst over the limit line", async () => {
    const html = join(ARTIFACTS, "compare-boundary.html");
    const r = await run(["compare", "--generate", "boundary", "--limit", "10", "--duration", "10s", "--html", html]);
    expect(r.status).toBe(0);
    const context = await browser.newContext({ offline: true, viewport: { width: 820, height: 900 } });
    const page = await context.newPage();
    await page.goto(pathToFileURL(html).href);
    const zoom = page.locator("svg.zoom");
    expect(await zoom.locator("text.boundary-label").textContent()).toBe("window boundary");
    expect(await zoom.locator("text.x-tick").allTextContents()).toEqual([
      "−1.0 s",
      "−0.8 s",
      "−0.6 s",
      "−0.4 s",
      "−0.2 s",
      "0 s",
      "+0.2 s",
      "+0.4 s",
      "+0.6 s",
      "+0.8 s",
      "+1.0 s",
    ]);
    const panels = await zoom.locator("g.panel").evaluateAll((gs) =>
      gs.map((g) => {
        const limit = (g.querySelector("line.nominal") as SVGLineElement).getBBox().y;
        const area = (g.querySelector("path.rolling") as SVGPathElement).getBBox();
        // Drawn: how far the area rises above the limit line, in pixels (screen y grows downwards).
        return {
          algorithm: g.getAttribute("data-algorithm"),
          label: g.querySelector("text.panel-label")?.textContent,
          above: Math.round(limit - area.y),
          over: g.querySelector("path.rolling-over") !== null,
        };
      }),
    );
    expect(panels[0]).toMatchObject({
      algorithm: "fixed-window",
      label: "fixed-window: here at most 20 in a rolling 1000 ms (2.00× the limit)",
      over: true,
    });
    expect(panels[0]?.above).toBeGreaterThan(10);
    for (const p of panels.slice(1)) expect(p).toMatchObject({ above: 0, over: false });
    expect(panels.map((p) => p.algorithm)).toEqual([
      "fixed-window",
      "sliding-log",
      "sliding-window",
      "token-bucket",
      "gcra",
      "leaky-bucket",
    ]);
    await page.screenshot({ path: join(ARTIFACTS, "compare-boundary.png"), fullPage: true });
    await context.close();
  });
});
