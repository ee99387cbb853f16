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

  it("the compare report opens offline with one chart per algorithm", async () => {
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
    expect(await page.$$eval("svg.chart", (svgs) => svgs.length)).toBe(6);
    const rows = await page.$$eval("#summary tbody tr", (trs) => trs.map((tr) => tr.getAttribute("data-algorithm")));
    expect(rows).toEqual(["fixed-window", "sliding-log", "sliding-window", "token-bucket", "gcra", "leaky-bucket"]);
    const bars = await page.$$eval(
      "#token-bucket rect.admitted",
      (rects) => rects.filter((r) => Number(r.getAttribute("height")) > 0).length,
    );
    expect(bars).toBeGreaterThan(0);
    expect(requests.every((u) => u.startsWith("file:"))).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, "compare-report.png"), fullPage: true });
    await context.close();
  });
});
