import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT, run, type Served, serve } from "../cli/helpers.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = join(ROOT, "test-artifacts");
const available = existsSync(CHROMIUM);
if (!available) console.warn(`browser tests skipped: ${CHROMIUM} is not installed (.ci/run installs it)`);

let browser: Browser;
let s: Served;

describe.skipIf(!available)("in headless Chromium", () => {
  beforeAll(async () => {
    ensureBuilt();
    mkdirSync(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    s = await serve(["--config", "examples/rules.yaml"]);
  });
  afterAll(async () => {
    await browser?.close();
    await s?.stop();
  });

  it("the status page lists the rules and shows live admitted/denied rates", async () => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 560 } });
    await page.goto(`${s.url}/`);
    await page.waitForSelector('tr[data-rule="pings"]');
    const names = await page.$$eval("#rules tbody td.name", (cells) => cells.map((c) => c.textContent));
    expect(names).toEqual(["api", "login", "search", "pings", "webhooks"]);
    expect(await page.textContent('tr[data-rule="api"] td.summary')).toContain("bursts up to 20");
    // Traffic while the page watches: pings allows 2 per second per key, so most are denied.
    let stop = false;
    const traffic = (async () => {
      while (!stop) {
        await fetch(`${s.url}/v1/check`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ rule: "pings", key: `k${i % 3}` }))),
        });
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await page.waitForFunction(
      () => Number(document.querySelector('tr[data-rule="pings"] .rate-denied')?.textContent) > 0,
      undefined,
      { timeout: 15_000 },
    );
    const allowedRate = Number(await page.textContent('tr[data-rule="pings"] .rate-allowed'));
    expect(allowedRate).toBeGreaterThan(0);
    expect(Number(await page.textContent('tr[data-rule="pings"] .total-denied'))).toBeGreaterThan(0);
    expect(await page.textContent("#meta")).toContain("memory");
    await page.waitForTimeout(2000); // a few seconds of sparkline for the screenshot
    stop = true;
    await traffic;
    await page.screenshot({ path: join(ARTIFACTS, "status-page.png"), fullPage: true });
    await page.close();
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
