// Leases (SPEC §16) decided alike on every shared store: one seeded trace of acquisitions, the
// decisions' own release()/renew(), releases and renewals by receipt (stale ones included),
// peeks, and time passing leaseMs, run on the MemoryStore, on RedisStore (the Lua twin) and on
// ClusterStore (socket transport, a forked host): every answer, and every receipt, must be the
// MemoryStore's. The seed is printed; SLUICE_SEED replays it.
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AlgorithmSpec, createLimiter, type Decision, ManualClock, MemoryStore, type Store } from "sluice";
import { ClusterStore } from "sluice/cluster";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mulberry32 } from "../../src/core/seeded-random.ts";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";
import { standaloneRedis, uniquePrefix, useStandaloneClients, WORK_BOUND_MS } from "../support/redis-server.ts";
import { SEED } from "../support/seed.ts";

const RULES: Record<string, AlgorithmSpec[]> = {
  bare: [{ algorithm: "concurrency", limit: 3, leaseMs: 1000 }],
  pair: [
    { algorithm: "concurrency", limit: 2, leaseMs: 800 },
    { algorithm: "token-bucket", capacity: 4, refillPerSecond: 2 },
  ],
};
const START = Date.UTC(2026, 11, 7);

/** What a decision says, receipt and handles included, as one comparable line. */
function line(op: string, d: Decision): string {
  const parts = d.parts?.map((p) => `${p.allowed}/${p.remaining}/${p.retryAfterMs}/${p.resetMs}`).join(" ") ?? "";
  return `${op} ${d.allowed} ${d.remaining} ${d.retryAfterMs} ${d.resetMs} at=${d.at} lease=${typeof d.release} ${parts}`;
}

/** Runs `steps` steps of the trace of `seed` on `store`; returns one line per answer. */
async function trace(store: Store, seed: number, steps: number, name: string): Promise<string[]> {
  const next = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
  const clock = new ManualClock(START);
  const limiters = Object.fromEntries(
    Object.entries(RULES).map(([rule, spec]) => [rule, createLimiter(spec, { clock, store, name: `${name}-${rule}` })]),
  );
  const held: Array<{ rule: string; key: string; d: Decision }> = [];
  const instants: number[] = [START];
  const out: string[] = [];
  for (let i = 0; i < steps; i++) {
    if (next() < 0.35) clock.advance(Math.floor(next() * 450));
    const rule = pick(Object.keys(RULES));
    const limiter = limiters[rule] as (typeof limiters)[string];
    const key = pick(["a", "b"]);
    const roll = next();
    const cost = next() < 0.8 ? 1 : 2;
    if (roll < 0.4) {
      const d = await limiter.tryAcquire(key, cost);
      if (d.release !== undefined) held.push({ rule, key, d });
      instants.push(clock.now());
      out.push(line(`check ${rule} ${key} ${cost}`, d));
    } else if (roll < 0.55 && held.length > 0) {
      const h = pick(held.slice(-8));
      out.push(line(`release() ${h.rule} ${h.key}`, await (h.d.release as () => Promise<Decision>)()));
    } else if (roll < 0.75 && held.length > 0) {
      const h = pick(held.slice(-3));
      const d = await (h.d.renew as () => Promise<Decision>)();
      if (d.allowed) instants.push(clock.now());
      out.push(line(`renew() ${h.rule} ${h.key}`, d));
    } else if (roll < 0.85) {
      const at = pick(instants.slice(-10));
      out.push(line(`release ${rule} ${key} ${cost} ${at - START}`, await limiter.release(key, { cost, at })));
    } else if (roll < 0.92) {
      const at = pick(instants.slice(-10));
      out.push(line(`renew ${rule} ${key} ${cost} ${at - START}`, await limiter.renew(key, { cost, at })));
    } else {
      out.push(line(`peek ${rule} ${key}`, await limiter.peek(key)));
    }
  }
  return out;
}

const redis = await standaloneRedis("lease differential");
const dir = mkdtempSync(join(tmpdir(), "sluice-lease-diff-"));
const socket = join(dir, "s.sock");
let host: ChildProcess | undefined;

describe("leases: MemoryStore, RedisStore and ClusterStore decide one seeded trace alike", () => {
  const clients = useStandaloneClients(redis);
  beforeAll(async () => {
    ensureBuilt();
    host = fork(join(ROOT, "test/cluster/fixtures/socket-client.mjs"), [JSON.stringify({ socket })], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    await once(host, "message");
    host.send({ id: 1, cmd: "warm" });
    await once(host, "message");
  }, 120_000);
  afterAll(() => {
    host?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(redis === undefined)(
    `every answer and receipt (seed ${SEED})`,
    async () => {
      console.log(`lease differential: seed ${SEED} (SLUICE_SEED=${SEED} replays it)`);
      const steps = 400;
      const want = await trace(new MemoryStore(), SEED, steps, "diff");
      expect(want.filter((l) => l.startsWith("check") && l.includes(" true ")).length).toBeGreaterThan(40);
      const count = (op: string, allowed: boolean) =>
        want.filter((l) => l.startsWith(op) && l.includes(` ${allowed} `)).length;
      console.log(
        `checks ${count("check", true)}/${count("check", false)}, renew() ${count("renew()", true)}/${count("renew()", false)}, renew ${count("renew ", true)}/${count("renew ", false)} (allowed/denied)`,
      );
      expect(count("renew()", true)).toBeGreaterThan(10);
      expect(count("renew()", false)).toBeGreaterThan(5);
      const onRedis = new RedisStore({
        client: clients.io,
        prefix: uniquePrefix("lease-diff"),
        expiryGraceMs: 600_000, // a ManualClock runs apart from real time
        timeoutMs: WORK_BOUND_MS,
      });
      const gotRedis = await trace(onRedis, SEED, steps, "diff");
      for (let i = 0; i < steps; i++) expect(gotRedis[i], `RedisStore, step ${i + 1}`).toBe(want[i]);
      const onCluster = new ClusterStore({ socket, timeoutMs: WORK_BOUND_MS });
      const gotCluster = await trace(onCluster, SEED, steps, `diff-${Math.random()}`);
      for (let i = 0; i < steps; i++) expect(gotCluster[i], `ClusterStore, step ${i + 1}`).toBe(want[i]);
    },
    120_000,
  );
});
