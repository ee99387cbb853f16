// `sluice serve --state` past `--max-keys` (issue 34, "Restore is exact"): a real process, stopped
// with SIGTERM and started again on its state file, refuses no honest key it did not refuse
// before the restart, and lets no key past its limit. Before the fix, a rule whose keys were in
// the compact tier was saved with a one-cell summary: with 100 exact keys and 1,000 keys each
// having used 1 of 10, every one of 100 new keys was refused after the restart. A restart under
// a changed window says its counts were not kept, instead of "restored".
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, serve, tempDir } from "../cli/helpers.ts";

beforeAll(ensureBuilt);
const tmp = tempDir();
afterAll(() => tmp.cleanup());

const SEED = Number(process.env.SLUICE_SEED ?? 3434);
const rules = (window: string) =>
  `rules:\n  api:\n    - { algorithm: fixed-window, limit: 10, windowMs: ${window} }\n  burst:\n    - { algorithm: gcra, limit: 10, periodMs: ${window} }\n`;

/** Sends checks as batches of at most 1,000; returns each check's `allowed`. */
async function checks(url: string, items: Array<{ rule: string; key: string }>): Promise<boolean[]> {
  const out: boolean[] = [];
  for (let i = 0; i < items.length; i += 1000) {
    const res = await fetch(`${url}/v1/check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(items.slice(i, i + 1000)),
    });
    expect(res.status).toBe(200);
    for (const d of (await res.json()) as Array<{ allowed: boolean }>) out.push(d.allowed);
  }
  return out;
}

/** A seeded shuffle (mulberry32), so the keys arrive in an order no test tuned. */
function shuffled<T>(items: T[], seed: number): T[] {
  let a = seed >>> 0;
  const random = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

describe("sluice serve --state past --max-keys", () => {
  it(`a SIGTERM restart refuses no honest key and lets none past its limit (seed ${SEED})`, async () => {
    console.log(`state-restore: seed ${SEED}`);
    const config = tmp.file("rules.yaml", rules("1h"));
    const state = join(tmp.dir, "state.json");
    const args = ["--config", config, "--state", state, "--state-interval", "1h", "--max-keys", "100"];
    const first = await serve(args);
    // 800 keys each use 1 of 10 on both rules; 100 more spend their whole limit: 17 times the
    // 100 exact keys, within what the compact tier holds exactly (no summary: a decision the
    // store without a restart makes exactly too, whatever its hash seed).
    const honest = Array.from({ length: 800 }, (_, i) => `user:${i}`);
    const spent = Array.from({ length: 100 }, (_, i) => `bot:${i}`);
    const once = shuffled(
      honest.flatMap((key) => [
        { rule: "api", key },
        { rule: "burst", key },
      ]),
      SEED,
    );
    expect((await checks(first.url, once)).every(Boolean)).toBe(true);
    const spend = spent.flatMap((key) => Array.from({ length: 10 }, () => ({ rule: "api", key })));
    expect((await checks(first.url, spend)).every(Boolean)).toBe(true);
    expect(await first.stop()).toBe(0);

    const second = await serve(args);
    // The log says what came back, once the rules are bound: every record, exactly.
    await second.waitForLog(/restored \d+ key records exactly/);
    expect(second.log()).toMatch(
      /restored \d+ key records exactly, 0 into summaries .*dropped 0, .*0 wait for their rule/,
    );
    // Returning keys use the rest of their limit; brand-new keys send one request each.
    const again = shuffled(
      honest.flatMap((key) => [...Array.from({ length: 9 }, () => ({ rule: "api", key })), { rule: "burst", key }]),
      SEED + 1,
    );
    const fresh = Array.from({ length: 300 }, (_, i) => ({ rule: "api", key: `new:${i}` }));
    const refusedHonest = (await checks(second.url, [...again, ...fresh])).filter((allowed) => !allowed).length;
    expect(refusedHonest, "honest requests refused after the restart").toBe(0);
    // No key passes its limit: each returning key's 11th, each spent key's next.
    const over = [...honest.slice(0, 300), ...spent].map((key) => ({ rule: "api", key }));
    expect((await checks(second.url, over)).filter(Boolean).length, "admitted past the limit").toBe(0);
    expect(await second.stop()).toBe(0);
  });

  it("a restart under a changed window logs that the rule's counts were not kept, not that they were restored", async () => {
    const state = join(tmp.dir, "window.json");
    const before = await serve(["--config", tmp.file("hour.yaml", rules("1h")), "--state", state, "--max-keys", "10"]);
    await checks(
      before.url,
      Array.from({ length: 50 }, (_, i) => ({ rule: "api", key: `k${i}` })),
    );
    expect(await before.stop()).toBe(0);
    const after = await serve(["--config", tmp.file("minute.yaml", rules("1m")), "--state", state, "--max-keys", "10"]);
    await after.waitForLog(/wait for their rule/);
    expect(after.log()).toMatch(/restored 0 key records exactly, .* 50 wait for their rule/);
    expect(after.log()).toMatch(
      /rule .*api.* \(fixed-window\/3600000\), waiting: .*another shape \(fixed-window\/60000\).*start fresh/,
    );
    expect(after.log()).not.toMatch(/key records restored/);
    expect(await after.stop()).toBe(0);
  });
});
