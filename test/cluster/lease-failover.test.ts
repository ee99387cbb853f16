// Issue 33 (attack8 F6): concurrency leases on a socket ClusterStore survive the host's death.
// Real processes (fixtures/lease-holder.mjs, built package) hold leases of one key; the host is
// SIGKILLed mid-load. The test counts requests in flight from the handlers' own starts and ends
// (an end is acknowledged before its lease is released, so the count never lags the store's):
// the survivors never hold more than the limit, before or after a new host takes over, and the
// leases they re-registered there release (and renew) by their original receipts.
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";
import { SEED } from "../support/seed.ts";

const FIXTURE = join(ROOT, "test/cluster/fixtures/lease-holder.mjs");
const LIMIT = 6;

let dir: string | undefined;
let children: ChildProcess[] = [];

beforeAll(() => ensureBuilt());

afterEach(() => {
  for (const child of children) child.kill("SIGKILL");
  children = [];
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** The next message from `child` that `match` accepts. */
function next(child: ChildProcess, match: (m: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const on = (m: Record<string, unknown>) => {
      if (!match(m)) return;
      child.off("message", on);
      child.off("exit", onExit);
      resolve(m);
    };
    const onExit = () => reject(new Error(`fixture ${child.pid} exited before answering`));
    child.on("message", on);
    child.once("exit", onExit);
  });
}

it(`the host SIGKILLed mid-load: survivors never hold more than the limit, and re-registered leases release (seed ${SEED})`, async () => {
  console.log(`[lease-failover] seed ${SEED}`);
  dir = mkdtempSync(join(tmpdir(), "sluice-lease-"));
  const socket = join(dir, "s.sock");
  const config = { socket, limit: LIMIT, leaseMs: 8000, workers: 3, runMs: 5000, minHoldMs: 300, spanHoldMs: 600 };
  const spawn = (i: number) =>
    fork(FIXTURE, [JSON.stringify({ ...config, seed: (SEED + i * 7919) >>> 0 })], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "ignore", "ipc"],
    });
  // The first process checks alone, so it hosts; then the others join it.
  const all: ChildProcess[] = [];
  for (let i = 0; i < 4; i++) {
    const child = spawn(i);
    children.push(child);
    all.push(child);
    await next(child, (m) => m.ready === true);
    const warmed = next(child, (m) => m.warm === true);
    child.send({ cmd: "warm" });
    expect(await warmed).toMatchObject({ failure: false, hosting: i === 0 });
  }
  const host = all[0] as ChildProcess;
  const survivors = all.slice(1);

  // Requests in flight per process, from the handlers' own starts and ends.
  const inFlight = new Map<ChildProcess, number>(all.map((c) => [c, 0]));
  let killed = false;
  let max = 0;
  let maxAfterKill = 0;
  let startsAfterKill = 0;
  for (const child of all) {
    child.on("message", (m: Record<string, unknown>) => {
      if (killed && child === host) return; // the victim's requests died with it
      if (m.start === true) {
        inFlight.set(child, (inFlight.get(child) as number) + 1);
        if (killed) startsAfterKill++;
      } else if (typeof m.end === "number") {
        inFlight.set(child, (inFlight.get(child) as number) - 1);
        child.send({ ack: m.end });
        return;
      } else return;
      let n = 0;
      for (const [c, k] of inFlight) if (!killed || c !== host) n += k;
      max = Math.max(max, n);
      if (killed) maxAfterKill = Math.max(maxAfterKill, n);
    });
  }
  const done = survivors.map((c) => next(c, (m) => m.done === true));
  for (const child of all) child.send({ cmd: "go" });
  await new Promise((r) => setTimeout(r, 1500));
  killed = true;
  host.kill("SIGKILL");
  await once(host, "exit");
  const reports = (await Promise.all(done)) as Array<{ stats: Record<string, number> }>;

  // Every survivor's last release reached the new host: the key is free again, long before its
  // leases could expire (8 s), so each re-registered lease was released by its original receipt.
  const peeker = survivors[0] as ChildProcess;
  const peeked = next(peeker, (m) => m.peeked === true);
  peeker.send({ cmd: "peek" });
  const peek = await peeked;
  const stats = reports.map((r) => r.stats);
  console.log(
    `[lease-failover] max in flight ${max} (after the kill ${maxAfterKill}, ${startsAfterKill} starts), limit ${LIMIT}; ` +
      `${JSON.stringify(stats)}; peek remaining ${peek.remaining}`,
  );
  expect(max).toBeLessThanOrEqual(LIMIT);
  expect(maxAfterKill).toBeLessThanOrEqual(LIMIT);
  expect(startsAfterKill).toBeGreaterThan(0); // the new host grants again
  for (const s of stats) expect(s.renewLost).toBe(0); // no renewal found its lease gone
  // (A peek of one unit says what would remain once it is taken: LIMIT - 1 when every slot is free.)
  expect(peek).toMatchObject({ failure: false, remaining: LIMIT - 1 });
  for (const c of survivors) c.send({ cmd: "exit" });
  await Promise.all(survivors.map((c) => (c.exitCode === null ? once(c, "exit") : undefined)));
}, 30_000);
