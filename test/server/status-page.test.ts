// The status page (GET /) in headless Chromium: per rule tier, charts of admitted and denied,
// rates and totals labelled as such, the most limited keys as rates; the store's counts, store
// health and last reload; its icon; keys only with the token. Screenshots go to
// test-artifacts/ (look at them: the charts must show traffic).
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve } from "../cli/helpers.ts";
import { ARTIFACTS, chromiumAvailable, launchChromium } from "../support/browser.ts";

let browser: Browser;
let open: Served;
let guarded: Served;
let broken: Served;

/**
 * Checks sent in the background: `mallory` hammers `pings` (2/s per key), others stay polite;
 * `search` is hammered by `scraper` on its own spec and by `bulk` on its `pro` tier.
 */
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
        ...Array.from({ length: 3 }, () => ({ rule: "search", key: "scraper" })),
        ...Array.from({ length: 15 }, () => ({ rule: "search", key: "bulk", tier: "pro" })),
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
    [open, guarded, broken] = await Promise.all([
      serve(["--config", "examples/rules.yaml"]),
      serve(["--config", "examples/rules.yaml"], { SLUICE_TOKEN: "s3cret" }),
      // A Redis that refuses every connection (port 1 on loopback): every check is a store failure.
      serve(["--config", "examples/rules.yaml", "--redis", "redis://127.0.0.1:1", "--on-store-error", "deny"]),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([open?.stop(), guarded?.stop(), broken?.stop()]);
  });

  it("charts admitted and denied per rule tier, lists the most limited keys, shows store health", async () => {
    const stop = traffic(open);
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const failed: string[] = [];
    page.on("response", (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    });
    page.on("console", (m) => {
      if (m.type() === "error") failed.push(m.text());
    });
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
      await page.waitForFunction(
        () =>
          document.querySelector('section[data-rule="search"] .tier[data-tier="pro"] ol.top-keys li code')
            ?.textContent === "bulk",
        undefined,
        { timeout: 15_000 },
      );
      await page.waitForTimeout(3000); // more seconds of chart for the screenshot
      // Each tier its own row: the rule's own spec, then `pro`, with its own summary, rates and keys.
      const tiers = await page.$$eval('section[data-rule="search"] .tier', (ts) =>
        ts.map((t) => [t.getAttribute("data-tier"), t.querySelector("h3.tier-name")?.textContent ?? ""]),
      );
      expect(tiers.map(([t]) => t)).toEqual(["", "pro"]);
      expect(tiers[0]?.[1]).toMatch(/^default \(no tier given\) — .*60/);
      expect(tiers[1]?.[1]).toMatch(/^tier pro — .*600/);
      const baseKeys = await page.$$eval('section[data-rule="search"] .tier.base ol.top-keys li code', (cs) =>
        cs.map((c) => c.textContent),
      );
      expect(baseKeys).toEqual(["scraper"]);
      expect(await page.$$('section[data-rule="search"] svg.chart')).toHaveLength(2);
      // Every figure says what it is: a rate (per second, per minute) or a total since start.
      const pings = page.locator('section[data-rule="pings"] .tier.base');
      expect(await pings.locator(".rates").textContent()).toMatch(/^now \d+\.\d admitted\/s · \d+\.\d denied\/s$/);
      expect(await pings.locator(".totals").textContent()).toMatch(
        /^total since start [\d,]+ admitted · [\d,]+ denied$/,
      );
      expect(await pings.locator("aside h3").textContent()).toBe("most denied keys now, denials per minute");
      expect(await pings.locator("ol.top-keys li").first().textContent()).toMatch(/^mallory — [\d.]+\/min$/);
      expect(await pings.locator("svg.chart text.unit-label").textContent()).toBe("per second");
      expect(await pings.locator("svg.chart text.x-tick").allTextContents()).toEqual([
        "−5 min",
        "−4 min",
        "−3 min",
        "−2 min",
        "−1 min",
        "now",
      ]);
      // The store's own counts, labelled; no store failures, so no failure banner.
      expect(Number(await page.textContent('#store [data-figure="sluice_store_keys"] dd'))).toBeGreaterThan(0);
      expect(await page.textContent("#store")).toContain("keys held exactly");
      // Each tier's fill and the summary's error bound, as percentages (issue 34: operators see it coming).
      for (const figure of ["sluice_store_keys_fill", "sluice_store_compact_fill", "sluice_store_summary_error_bound"])
        expect(await page.textContent(`#store [data-figure="${figure}"] dd`)).toMatch(/^\d+(\.\d+)?%$/);
      expect(await page.textContent("#store")).toContain("summary error bound");
      expect(await page.isVisible("#failures")).toBe(false);
      // Each tier's keys as the store counts them: `bulk` alone on search's pro tier, `scraper`
      // alone on its own spec; pings holds mallory, eve and the polite keys.
      const searchTiers = page.locator('section[data-rule="search"] .tier');
      expect(await searchTiers.locator(".keys").allTextContents()).toEqual(["keys held now 1", "keys held now 1"]);
      expect(Number(await pings.locator(".tier-keys").textContent())).toBeGreaterThanOrEqual(2);
      expect(await chartMax(page, "pings")).toBeGreaterThan(0);
      expect(await chartMax(page, "api")).toBeGreaterThan(0);
      expect(await chartMax(page, "webhooks")).toBe(0);
      const keys = await page.$$eval('section[data-rule="pings"] ol.top-keys li code', (cs) =>
        cs.map((c) => c.textContent),
      );
      expect(keys.slice(0, 2)).toEqual(["mallory", "eve"]);
      expect(await page.textContent('section[data-rule="api"] aside')).toContain("none denied recently");
      // The denied area is drawn above the admitted one: both paths have area.
      // The chart is redrawn from the page's next poll, which a loaded machine may delay: wait for
      // it (bounded) rather than read it once.
      const drawn = await page
        .waitForFunction(
          () => {
            const paths = [...document.querySelectorAll('section[data-rule="pings"] svg.chart path')];
            return paths.length > 0 && paths.every((p) => (p as SVGGraphicsElement).getBBox().height > 0);
          },
          undefined,
          { timeout: 15_000 },
        )
        .then(
          () => true,
          () => false,
        );
      const heights = await page.$$eval('section[data-rule="pings"] svg.chart path', (ps) =>
        ps.map((p) => (p as SVGGraphicsElement).getBBox().height),
      );
      expect(drawn, `path heights ${heights.join(", ")}`).toBe(true);
      await page.screenshot({ path: join(ARTIFACTS, "status-page.png"), fullPage: true });
      // The icon the page links is served and decodes as an image (headless Chromium does not
      // fetch icons itself, so the page loads it): no 404, and no console error on any load.
      const icon = await page.evaluate(async () => {
        const href = (document.querySelector('link[rel="icon"]') as HTMLLinkElement).href;
        const res = await fetch(href);
        const img = new Image();
        // load/error events rather than img.decode(), which Chromium may reject for an SVG it did draw.
        await new Promise((resolve, reject) => {
          img.onload = resolve;
          img.onerror = () => reject(new Error(`the icon at ${href} did not load as an image`));
          img.src = href;
        });
        return {
          path: new URL(href).pathname,
          status: res.status,
          type: res.headers.get("content-type"),
          width: img.naturalWidth,
        };
      });
      expect(icon).toMatchObject({ path: "/favicon.ico", status: 200, type: "image/svg+xml" });
      expect(icon.width).toBeGreaterThan(0);
      expect(failed).toEqual([]);
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

  it("shows store failures apart from denials: a banner, their own rate, total and band", async () => {
    const stop = traffic(broken);
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    try {
      await page.goto(`${broken.url}/`);
      await page.waitForFunction(
        () => Number(document.querySelector('section[data-rule="pings"] .rate-failed')?.textContent) > 0,
        undefined,
        { timeout: 20_000 },
      );
      await page.waitForTimeout(2000); // a few seconds of chart for the screenshot
      expect(await page.textContent("#health")).toMatch(/store redis not answering/);
      expect(await page.textContent("#failures")).toMatch(
        /^The store failed [\d,]+ times since start: those checks were answered by its failure policy and are not counted as denials\.$/,
      );
      const pings = page.locator('section[data-rule="pings"] .tier.base');
      expect(await pings.locator(".rates").textContent()).toMatch(/· \d+\.\d store failures\/s$/);
      expect(await pings.locator(".totals").textContent()).toMatch(
        /^total since start 0 admitted · 0 denied · [\d,]+ answered while the store failed$/,
      );
      expect(await pings.locator("aside").textContent()).toContain("none denied recently");
      // The band is drawn from the page's next poll, which a loaded machine may delay: wait for
      // it (bounded) rather than read it once.
      const banded = await page
        .waitForFunction(
          () => {
            const band = document.querySelector('section[data-rule="pings"] .tier.base svg.chart path.area-failed');
            return band !== null && (band as SVGGraphicsElement).getBBox().height > 0;
          },
          undefined,
          { timeout: 15_000 },
        )
        .then(
          () => true,
          () => false,
        );
      const band = await pings
        .locator("svg.chart path.area-failed")
        .evaluate((p) => (p as SVGGraphicsElement).getBBox().height);
      expect(banded, `band height ${band}`).toBe(true);
      // Redis holds the keys: the page says where to count them instead of showing zeros.
      expect(await page.textContent("#store")).toContain("The redis store keeps the keys");
      // Nor per tier: Redis cannot count a rule's keys, and the page says so.
      expect(await pings.locator(".keys").textContent()).toBe("keys held not known (this store cannot count them)");
      await page.screenshot({ path: join(ARTIFACTS, "status-page-store-failing.png"), fullPage: true });
    } finally {
      await stop();
      await page.close();
    }
  });
});
