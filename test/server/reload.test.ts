import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, serve, tempDir } from "../cli/helpers.ts";

const tmp = tempDir();
beforeAll(ensureBuilt);
afterAll(tmp.cleanup);

// The window starts at the first hit (anchor: first): a clock-aligned hour could roll over
// between two checks (it did once, at 07:00:00) and reset the count the test reads.
const V1 = "rules:\n  a: { algorithm: fixed-window, limit: 2, windowMs: 1h, anchor: first }\n";
const V2 =
  "rules:\n  a: { algorithm: fixed-window, limit: 3, windowMs: 1h, anchor: first }\n  b: { algorithm: gcra, limit: 5, periodMs: 1s }\n";
const BAD = "rules:\n  a: { algorithm: fixed-window, limit: 0, windowMs: 1h, anchor: first }\n";

const check = async (url: string, rule: string) =>
  (await (
    await fetch(`${url}/v1/check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ rule, key: "k" }),
    })
  ).json()) as {
    allowed: boolean;
    remaining: number;
  };
const ruleNames = async (url: string) =>
  ((await (await fetch(`${url}/v1/rules`)).json()) as { rules: Array<{ name: string }> }).rules.map((r) => r.name);
const metrics = async (url: string) => (await fetch(`${url}/metrics`)).text();

describe("sluice serve: hot reload", () => {
  it("applies a changed file (keeping state), refuses an invalid one and keeps the last good rules", async () => {
    const path = tmp.file("rules.yaml", V1);
    const s = await serve(["--config", path]);
    try {
      expect(await check(s.url, "a")).toMatchObject({ allowed: true, remaining: 1 });
      writeFileSync(path, V2);
      await s.waitForLog(/config reloaded \(file changed\): 2 rules/);
      expect(await ruleNames(s.url)).toEqual(["a", "b"]);
      // The raised limit keeps today's count: 1 used of 3.
      expect(await check(s.url, "a")).toMatchObject({ allowed: true, remaining: 1 });

      writeFileSync(path, BAD);
      await s.waitForLog(
        /config reload failed \(file changed\): .*rule "a": limit must be a positive integer \(got 0\); keeping the last good config/,
      );
      expect(await ruleNames(s.url)).toEqual(["a", "b"]);
      expect(await check(s.url, "a")).toMatchObject({ allowed: true, remaining: 0 });
      const text = await metrics(s.url);
      expect(text).toMatch(/^sluice_config_reloads_total\{result="failure"\} 1$/m);
      expect(text).toMatch(/^sluice_config_last_reload_successful 0$/m);
      const health = (await (await fetch(`${s.url}/healthz`)).json()) as {
        config: { lastReloadOk: boolean; error?: string };
      };
      expect(health.config.lastReloadOk).toBe(false);
      // The open health probe does not leak the reason; /v1/status (behind a token if set) has it.
      expect(health.config.error).toBeUndefined();
      const status = (await (await fetch(`${s.url}/v1/status`)).json()) as { config: { error: string } };
      expect(status.config.error).toContain("limit must be a positive integer");
    } finally {
      await s.stop();
    }
  });

  it("reloads on SIGHUP", async () => {
    const path = tmp.file("hup.yaml", V1);
    const s = await serve(["--config", path, "--no-watch"]);
    try {
      writeFileSync(path, V2);
      s.child.kill("SIGHUP");
      await s.waitForLog(/config reloaded \(SIGHUP\): 2 rules \(\+b ~a\)/);
      expect(await ruleNames(s.url)).toEqual(["a", "b"]);
      expect(await metrics(s.url)).toMatch(/^sluice_config_reloads_total\{result="success"\} 1$/m);
    } finally {
      await s.stop();
    }
  });

  it("refuses to start on an invalid file, exit 1", async () => {
    const path = tmp.file("bad.yaml", BAD);
    await expect(serve(["--config", path])).rejects.toThrow(/exited with 1[\s\S]*limit must be a positive integer/);
  });
});
