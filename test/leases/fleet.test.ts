// Leases across a fleet (issue 33): 8 real processes share `{ concurrency, limit: 10 }` on
// Redis. Each appends "+" once admitted and "-" before it releases to one log opened O_APPEND
// (one clock: the kernel's order of appends), so replaying the log gives the number in flight at
// every moment: never more than 10. Then a process holding leases is SIGKILLed: its slots stay
// taken until their leaseMs ends (on Redis's clock), then come back by themselves.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLimiter, type Decision } from "sluice";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";
import { within } from "../support/poll.ts";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";
import { SEED } from "../support/seed.ts";

const FIXTURE = join(ROOT, "test/leases/fixtures/fleet-worker.mjs");
const redis = await standaloneRedis("lease fleet");
const dir = mkdtempSync(join(tmpdir(), "sluice-fleet-"));

/** Runs one fleet process to its end (mode "work"), or until it prints its first line (mode "hold"). */
function worker(config: Record<string, unknown>): { line: Promise<string>; kill(): void; exited: Promise<number> } {
  const child = spawn(process.execPath, [FIXTURE, JSON.stringify(config)], { cwd: ROOT });
  let out = "";
  let err = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
  const line = new Promise<string>((resolve, reject) => {
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      if (out.includes("\n")) resolve(out.split("\n")[0] as string);
    });
    child.on("exit", (code) => reject(new Error(`fleet process exited ${code} before answering:\n${err}`)));
  });
  const exited = new Promise<number>((resolve) =>
    child.on("exit", (code, signal) => resolve(signal ? -1 : (code ?? 0))),
  );
  return { line, kill: () => child.kill("SIGKILL"), exited };
}

describe.skipIf(redis === undefined)("leases across 8 processes on Redis", () => {
  const clients = useStandaloneClients(redis);
  beforeAll(() => ensureBuilt(), 240_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(`never more than 10 in flight across the fleet (seed ${SEED})`, async () => {
    const prefix = uniquePrefix("fleet");
    const log = join(dir, "in-flight.log");
    const base = { url: redis?.url, prefix, log, mode: "work", limit: 10, leaseMs: 60_000, requests: 250, lanes: 4 };
    const fleet = Array.from({ length: 8 }, (_, i) => worker({ ...base, seed: SEED + i }));
    const counts = (await Promise.all(fleet.map((w) => w.line))).map(
      (l) => JSON.parse(l) as { admitted: number; refused: number; failed: number },
    );
    let inFlight = 0;
    let most = 0;
    let starts = 0;
    for (const entry of readFileSync(log, "utf8").split("\n")) {
      if (entry.startsWith("+")) {
        starts++;
        most = Math.max(most, ++inFlight);
      } else if (entry.startsWith("-")) inFlight--;
    }
    const refused = counts.reduce((n, c) => n + c.refused, 0);
    console.log(`fleet: ${starts} admitted, ${refused} refused, at most ${most} in flight (limit 10)`);
    expect(counts.every((c) => c.failed === 0)).toBe(true);
    // Every admission was logged (lanes may overshoot `requests` by the ones in flight at the end).
    expect(starts).toBe(counts.reduce((n, c) => n + c.admitted, 0));
    expect(starts).toBeGreaterThanOrEqual(8 * 250);
    expect(inFlight).toBe(0);
    expect(most).toBeLessThanOrEqual(10);
    expect(refused).toBeGreaterThan(0); // 32 lanes on 10 slots: the limit was reached and held
    // At rest every slot is free.
    const store = new RedisStore({ client: clients.io, prefix });
    const limiter = createLimiter({ algorithm: "concurrency", limit: 10, leaseMs: 60_000 }, { store, name: "fleet" });
    const rest = await limiter.peek("fleet");
    expect([rest.allowed, rest.remaining]).toEqual([true, 9]);
  }, 240_000);

  it("a SIGKILLed holder's slots come back once their leaseMs has passed, not before", async () => {
    const prefix = uniquePrefix("fleet-kill");
    const leaseMs = 1500;
    const holder = worker({ url: redis?.url, prefix, mode: "hold", limit: 10, leaseMs, hold: 4, seed: SEED });
    const { ats } = JSON.parse(await holder.line) as { ats: number[] };
    holder.kill();
    expect(await holder.exited).toBe(-1);
    const store = new RedisStore({ client: clients.io, prefix });
    const limiter = createLimiter({ algorithm: "concurrency", limit: 10, leaseMs }, { store, name: "fleet" });
    const free = (d: Decision) => (d.allowed ? d.remaining + 1 : 0);
    const expiry = Math.max(...ats) + leaseMs;
    // Polled on Redis's clock: every answer before the leases' expiry counts them, every one
    // from then on does not (each peek carries the server instant it was decided at).
    const more = within();
    let d = await limiter.peek("fleet");
    let seenHeld = false;
    while (free(d) < 10 && more()) {
      // Exactly the leases whose leaseMs has passed by this answer's instant are free again.
      const expired = ats.filter((at) => at + leaseMs <= (d.at as number)).length;
      expect(free(d), `at ${d.at}, ${expiry - (d.at as number)} ms before the last lease expires`).toBe(6 + expired);
      seenHeld = true;
      await new Promise((resolve) => setTimeout(resolve, 50));
      d = await limiter.peek("fleet");
    }
    expect(seenHeld).toBe(true);
    expect(free(d)).toBe(10);
    expect(d.at as number).toBeGreaterThanOrEqual(expiry);
  }, 60_000);
});
