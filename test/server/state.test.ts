// `sluice serve --state FILE`: counts survive a restart (SIGTERM writes the file atomically;
// the periodic write covers a kill -9), and a corrupt or foreign file is reported and ignored.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, serve, tempDir } from "../cli/helpers.ts";

beforeAll(ensureBuilt);
const tmp = tempDir();
afterAll(() => tmp.cleanup());

const RULES =
  "rules:\n  login:\n    - { algorithm: sliding-log, limit: 5, windowMs: 1h }\n    - { algorithm: fixed-window, limit: 20, windowMs: 1d }\n";

async function check(url: string, key: string): Promise<{ allowed: boolean; remaining: number }> {
  const res = await fetch(`${url}/v1/check`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ rule: "login", key }),
  });
  return (await res.json()) as { allowed: boolean; remaining: number };
}

describe("sluice serve --state", () => {
  it("keeps counts across a SIGTERM restart and across a kill -9 (last periodic write)", async () => {
    const config = tmp.file("rules.yaml", RULES);
    const state = join(tmp.dir, "state.json");
    const first = await serve(["--config", config, "--state", state, "--state-interval", "100ms"]);
    expect(first.log()).toMatch(/state file .* not found: starting empty/);
    for (let i = 0; i < 3; i++) await check(first.url, "alice");
    expect(await first.stop()).toBe(0);
    expect(readdirSync(tmp.dir).filter((f) => f.includes(".tmp-"))).toEqual([]); // renamed into place

    const second = await serve(["--config", config, "--state", state, "--state-interval", "100ms"]);
    await second.waitForLog(/restored \d+ key records exactly/);
    expect(await check(second.url, "alice")).toMatchObject({ allowed: true, remaining: 1 }); // 4th of 5
    // Let a periodic write happen, then die without a chance to write again.
    const before = readFileSync(state, "utf8");
    while (readFileSync(state, "utf8") === before) await new Promise((r) => setTimeout(r, 50));
    second.child.kill("SIGKILL");
    await second.exited;

    const third = await serve(["--config", config, "--state", state]);
    expect(await check(third.url, "alice")).toMatchObject({ allowed: true, remaining: 0 }); // 5th of 5
    expect(await check(third.url, "alice")).toMatchObject({ allowed: false });
    expect(await check(third.url, "bob")).toMatchObject({ allowed: true, remaining: 4 });
    await third.stop();
  });

  it("reports a corrupt or foreign file, starts empty, and replaces it on shutdown", async () => {
    const config = tmp.file("rules2.yaml", RULES);
    for (const [name, text] of [
      ["corrupt.json", '{"format":"sluice-memory-state","version":1,"tables":[{"id":'],
      ["foreign.json", '{"hello":"world"}'],
    ] as const) {
      const state = tmp.file(name, text);
      const s = await serve(["--config", config, "--state", state]);
      expect(s.log()).toMatch(new RegExp(`state file .*${name} ignored: `));
      expect(await check(s.url, "carol")).toMatchObject({ allowed: true, remaining: 4 });
      expect(await s.stop()).toBe(0);
      expect(JSON.parse(readFileSync(state, "utf8"))).toMatchObject({ format: "sluice-memory-state" });
    }
  });

  it("refuses --state with --redis (the counts already live in Redis)", async () => {
    const config = tmp.file("rules3.yaml", RULES);
    await expect(
      serve(["--config", config, "--state", join(tmp.dir, "s.json"), "--redis", "redis://127.0.0.1:6379"]),
    ).rejects.toThrow(/--state keeps the in-process store's counts/);
  });
});

describe("the state file's temporary file", () => {
  it("a state path that is a symlink is not read through: the log names the link, never its target's content", async () => {
    const { symlinkSync } = await import("node:fs");
    const config = tmp.file("rules-link.yaml", RULES);
    const secret = tmp.file("secret.txt", "root:SECRET-HASH:19000:0:99999:7:::\n");
    const state = join(tmp.dir, "linked-state.json");
    symlinkSync(secret, state);
    const s = await serve(["--config", config, "--state", state]);
    try {
      await s.waitForLog(/state file .*linked-state\.json ignored: it is a symbolic link/);
      expect(s.log()).not.toContain("SECRET");
      expect(s.log()).not.toContain("root:");
    } finally {
      await s.stop();
    }
    expect(readFileSync(secret, "utf8")).toBe("root:SECRET-HASH:19000:0:99999:7:::\n");
  });

  it("is created exclusively, owner-only, under an unpredictable name; a planted symlink is never written through", async () => {
    const { lstatSync, readlinkSync, statSync, symlinkSync, writeFileSync } = await import("node:fs");
    const { MemoryStore, RateLimiterService } = await import("../../src/index.ts");
    const { saveState, temporaryName } = await import("../../src/server/state-file.ts");
    const store = new MemoryStore();
    const service = new RateLimiterService({ store }).addRule("r", {
      algorithm: "fixed-window",
      limit: 3,
      windowMs: 60_000,
    });
    await service.check("r", "k");
    const path = join(tmp.dir, "planted.json");
    const victim = tmp.file("victim.txt", "precious\n");
    // The old predictable name, and a name the attacker somehow learnt: both links stay untouched.
    symlinkSync(victim, `${path}.tmp-${process.pid}`);
    const guessed = temporaryName(path);
    symlinkSync(victim, guessed);
    await expect(saveState(store, path, guessed)).rejects.toMatchObject({ code: "EEXIST" });
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(readlinkSync(guessed)).toBe(victim);
    // A normal save goes through its own fresh name, leaves no temporary file, and is 0600.
    await saveState(store, path);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(lstatSync(path).isFile()).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path, "utf8"))).toBeTypeOf("object");
    const left = readdirSync(tmp.dir).filter((f) => f.startsWith("planted.json.tmp-"));
    expect(left.sort()).toEqual([`planted.json.tmp-${process.pid}`, guessed.split("/").pop()].sort());
    // Two names never repeat.
    expect(temporaryName(path)).not.toBe(temporaryName(path));
    writeFileSync(victim, "");
  });
});
