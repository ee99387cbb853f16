// Leases across a fleet (issue 33): 8 real processes share `{ concurrency, limit: 10 }` on
// Redis, then on ClusterStore (socket transport, a forked host). Each appends "+" once admitted and "-" before it releases to one log opened O_APPEND
// (one clock: the kernel's order of appends), so replaying the log gives the number in flight at
// every moment: never more than 10. Then a process holding leases is SIGKILLed: its slots stay
// taken until their leaseMs ends (on Redis's clock), then come back by themselves.
import { type ChildProcess, fork, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLimiter, type Decision, type Store } from "sluice";
import { ClusterStore } from "sluice/cluster";
import { RedisStore } from "sluice/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";
import { within } from "../support/poll.ts";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";
import { SEED } from "../support/seed.ts";

const FIXTURE = join(ROOT, "test/leases/fixtures/fleet-worker.mjs");
/** Requests per process: 250 in `npm test`; the full run is SLUICE_FLEET_REQUESTS=2000. */
const REQUESTS = Number(process.env.SLUICE_FLEET_REQUESTS ?? 250);
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

/** Where the fleet keeps its leases: the worker's store options, and the same store in this process. */
interface Backend {
  readonly name: string;
  /** What the workers are told (RedisStore on `url` + `prefix`, or ClusterStore on `socket`). */
  config(): Record<string, unknown>;
  /** A store in this process that reaches the same state (for peeks). */
  store(): Store;
}

/** The two fleet tests on `backend`. */
function fleetTests(backend: () => Backend): void {
  it(
    `never more than 10 in flight across the fleet (seed ${SEED})`,
    async () => {
      const b = backend();
      const name = `fleet-${Math.random().toString(36).slice(2, 8)}`;
      const log = join(dir, `${name}.log`);
      const base = { ...b.config(), name, log, mode: "work", limit: 10, leaseMs: 60_000, requests: REQUESTS, lanes: 4 };
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
      console.log(`fleet on ${b.name}: ${starts} admitted, ${refused} refused, at most ${most} in flight (limit 10)`);
      expect(counts.every((c) => c.failed === 0)).toBe(true);
      // Every admission was logged (lanes may overshoot `requests` by the ones in flight at the end).
      expect(starts).toBe(counts.reduce((n, c) => n + c.admitted, 0));
      expect(starts).toBeGreaterThanOrEqual(8 * REQUESTS);
      expect(inFlight).toBe(0);
      expect(most).toBeLessThanOrEqual(10);
      expect(refused).toBeGreaterThan(0); // 32 lanes on 10 slots: the limit was reached and held
      // At rest every slot is free.
      const limiter = createLimiter(
        { algorithm: "concurrency", limit: 10, leaseMs: 60_000 },
        { store: b.store(), name },
      );
      const rest = await limiter.peek("fleet");
      expect([rest.allowed, rest.remaining]).toEqual([true, 9]);
    },
    240_000 * Math.max(1, REQUESTS / 250),
  );

  it("a SIGKILLed holder's slots come back once their leaseMs has passed, not before", async () => {
    const b = backend();
    const name = `fleet-kill-${Math.random().toString(36).slice(2, 8)}`;
    const leaseMs = 1500;
    const holder = worker({ ...b.config(), name, mode: "hold", limit: 10, leaseMs, hold: 4, seed: SEED });
    const { ats } = JSON.parse(await holder.line) as { ats: number[] };
    holder.kill();
    expect(await holder.exited).toBe(-1);
    const limiter = createLimiter({ algorithm: "concurrency", limit: 10, leaseMs }, { store: b.store(), name });
    const free = (d: Decision) => (d.allowed ? d.remaining + 1 : 0);
    const expiry = Math.max(...ats) + leaseMs;
    // Polled: every answer counts exactly the leases whose leaseMs has not passed by the instant
    // it was decided at (each peek carries it: Redis's clock, or the system clock).
    const more = within();
    let d = await limiter.peek("fleet");
    let seenHeld = false;
    while (free(d) < 10 && more()) {
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
}

beforeAll(() => ensureBuilt(), 240_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(redis === undefined)("leases across 8 processes on Redis", () => {
  const clients = useStandaloneClients(redis);
  const prefix = uniquePrefix("fleet");
  fleetTests(() => ({
    name: "Redis",
    config: () => ({ url: redis?.url, prefix }),
    store: () => new RedisStore({ client: clients.io, prefix }),
  }));
});

describe("leases across 8 processes on ClusterStore (socket transport)", () => {
  const socket = join(dir, "host.sock");
  let host: ChildProcess | undefined;
  let client: ClusterStore | undefined;
  beforeAll(async () => {
    ensureBuilt();
    // A process that only hosts the store, so the fleet's processes come and go as clients.
    host = fork(join(ROOT, "test/cluster/fixtures/socket-client.mjs"), [JSON.stringify({ socket })], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    await once(host, "message");
    host.send({ id: 1, cmd: "warm" });
    const [reply] = (await once(host, "message")) as [{ hosting: boolean }];
    expect(reply.hosting).toBe(true);
    client = new ClusterStore({ socket, timeoutMs: 10_000 });
  }, 240_000);
  afterAll(() => {
    host?.kill("SIGKILL");
  });
  fleetTests(() => ({
    name: "ClusterStore",
    config: () => ({ socket }),
    store: () => client as ClusterStore,
  }));
});
