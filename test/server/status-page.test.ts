// The status page (GET /) in headless Chromium: per-rule charts of admitted and denied, the
// most limited keys, store health and last reload; keys only with the token. Screenshots go
// to test-artifacts/ (look at them: the charts must show traffic).
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve } from "../cli/helpers.ts";
import { ARTIFACTS, chromiumAvailable, launchChromium } from "../support/browser.ts";

let browser: Browser;
let open: Served;
let guarded: Served;

/** Checks sent in the background: `mallory` hammers `pings` (2/s per key), others stay polite. */
function traffic(s: Served, token?: string): () => Promise<void> {
  let stop = false;
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  const loop = (async () => {
    for (let round = 0; !stop; round++) {
      const batch = [
        ...Array.from({ length: 12 }, () => ({ rule: "pings", key: "mallory" })),
        ...Array.from({ length: 4 }, () => ({ rule: "pings", key: "eve" })),
        { rule: "pings", key: `polite-${round % 7}` },
        ...Array.from({ length: 5 }, (_, i) => ({ rule: "api", key: `user-${i}` })),
      ];
      const res = await fetch(`${s.url}/v1/check`, { method: "POST", headers, body: JSON.stringify(batch) });
      expect(res.status).toBe(200);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return async () => {
    stop = true;
    await loop;
  };
}

async function chartMax(page: Page, rule: string): Promise<number> {
  return Number(await page.getAttribute(`section[data-rule="${rule}"] svg.chart`, "data-max"));
}

describe.skipIf(!chromiumAvailable)("the status page in headless Chromium", () => {
  beforeAll(async () => {
    ensureBuilt();
    browser = await launchChromium();
    [open, guarded] = await Promise.all([
      serve(["--config", "examples/rules.yaml"]),
      serve(["--config", "examples/rules.yaml"], { SLUICE_TOKEN: "s3cret" }),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([open?.stop(), guarded?.stop()]);
  });

  it("charts admitted and denied per rule, lists the most limited keys, shows store health", async () => {
    const stop = traffic(open);
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    try {
      await page.goto(`${open.url}/`);
      await page.waitForSelector('section[data-rule="pings"]');
      const names = await page.$$eval("section.rule h2.name", (hs) => hs.map((h) => h.textContent));
      expect(names).toEqual(["api", "login", "search", "pings", "webhooks"]);
      expect(await page.textContent('section[data-rule="api"] .summary')).toContain("bursts up to 20");
      expect(await page.textContent("#health")).toMatch(/store memory healthy · rules last loaded \d+ s ago/);
      // A few seconds of traffic: the chart grows, the heavy key leads the list.
      await page.waitForFunction(
        () => {
          const first = document.querySelector('section[data-rule="pings"] ol.top-keys li code');
          const rate = Number(document.querySelector('section[data-rule="pings"] .rate-denied')?.textContent);
          return first?.textContent === "mallory" && rate > 0;
        },
        undefined,
        { timeout: 15_000 },
      );
      await page.waitForTimeout(3000); // more seconds of chart for the screenshot
      expect(await chartMax(page, "pings")).toBeGreaterThan(0);
      expect(await chartMax(page, "api")).toBeGreaterThan(0);
      expect(await chartMax(page, "webhooks")).toBe(0);
      const keys = await page.$$eval('section[data-rule="pings"] ol.top-keys li code', (cs) =>
        cs.map((c) => c.textContent),
      );
      expect(keys.slice(0, 2)).toEqual(["mallory", "eve"]);
      expect(await page.textContent('section[data-rule="api"] aside')).toContain("none denied recently");
      // The denied area is drawn above the admitted one: both paths have area.
      const heights = await page.$$eval('section[data-rule="pings"] svg.chart path', (ps) =>
        ps.map((p) => (p as SVGGraphicsElement).getBBox().height),
      );
      expect(heights.every((h) => h > 0)).toBe(true);
      await page.screenshot({ path: join(ARTIFACTS, "status-page.png"), fullPage: true });
    } finally {
      await stop();
      await page.close();
    }
  });

  it("with --token: health without it; rules, charts and keys only after the token is given", async () => {
    const stop = traffic(guarded, "s3cret");
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    try {
      await page.goto(`${guarded.url}/`);
      await page.waitForSelector("#auth.show");
      await page.waitForSelector("#store-status");
      expect(await page.textContent("#health")).toMatch(/store memory healthy/);
      expect(await page.$$("section.rule")).toHaveLength(0);
      expect(await page.content()).not.toContain("mallory");
      await page.screenshot({ path: join(ARTIFACTS, "status-page-locked.png"), fullPage: true });

      await page.fill("#token", "wrong");
      await page.click("#auth button");
      await page.waitForFunction(() => document.querySelector("#auth-why")?.textContent?.includes("refused"));
      expect(await page.$$("section.rule")).toHaveLength(0);

      await page.fill("#token", "s3cret");
      await page.click("#auth button");
      await page.waitForFunction(
        () => document.querySelector('section[data-rule="pings"] ol.top-keys li code')?.textContent === "mallory",
        undefined,
        { timeout: 15_000 },
      );
      expect(await page.isVisible("#auth")).toBe(false);
      expect(await chartMax(page, "pings")).toBeGreaterThan(0);
      await page.screenshot({ path: join(ARTIFACTS, "status-page-token.png"), fullPage: true });
    } finally {
      await stop();
      await page.close();
    }
  });
});
