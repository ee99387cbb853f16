/**
 * The socket host election under stress: the host is killed again and again (SIGKILL and SIGTERM
 * in turn) while the other processes check under load; after each election exactly one process
 * hosts and a fresh limit admits exactly its limit across all processes. Rounds fill about 40 s
 * here; `SLUICE_ELECTION_ROUNDS=200 npx vitest run test/cluster/election-stress.test.ts` runs 200.
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";

const FIXTURE = join(ROOT, "test/cluster/fixtures/socket-client.mjs");
const ROUNDS = Number(process.env.SLUICE_ELECTION_ROUNDS ?? 0);
const BUDGET_MS = 40_000;
const dir = mkdtempSync(join(tmpdir(), "sluice-elect-"));
const socket = join(dir, "s.sock");
const children = new Set<ChildProcess>();
let nextId = 1;
afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

interface Reply {
  hosting: boolean;
  [field: string]: unknown;
}

function ask<T>(child: ChildProcess, command: Record<string, unknown>): Promise<T & Reply> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const on = (m: Record<string, unknown>) => {
      if (m.id !== id) return;
      child.off("message", on);
      child.off("exit", onExit);
      resolve(m as T & Reply);
    };
    const onExit = () => reject(new Error("fixture exited before answering"));
    child.on("message", on);
    child.once("exit", onExit);
    child.send({ id, ...command });
  });
}

async function spawnOne(): Promise<ChildProcess> {
  const child = fork(FIXTURE, [JSON.stringify({ socket, timeoutMs: 2000 })], {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  await new Promise<void>((resolve) => child.once("message", () => resolve()));
  return child;
}

/** Checks from every process until each is answered by a host; then who hosts. */
async function elected(all: ChildProcess[]): Promise<boolean[]> {
  for (;;) {
    const replies = await Promise.all(all.map((c) => ask<{ failure: string | null }>(c, { cmd: "warm" })));
    if (replies.every((r) => r.failure === null)) return replies.map((r) => r.hosting);
  }
}

// ensureBuilt waits (blocking) on a build lock shared machine-wide (a dist build takes ~50 s at load):
// once per file in a hook, never inside a test's own timeout (socket.test.ts).
beforeAll(() => ensureBuilt());

describe("socket host election under stress", () => {
  it("kills the host round after round: one host at a time, exact totals after each election", async () => {
    const all = await Promise.all([spawnOne(), spawnOne(), spawnOne(), spawnOne()]);
    const started = Date.now();
    let round = 0;
    const hostCounts: number[] = [];
    while (ROUNDS > 0 ? round < ROUNDS : Date.now() - started < BUDGET_MS) {
      const hosting = await elected(all);
      hostCounts.push(hosting.filter(Boolean).length);
      // Exact across processes: a fresh limit of 40 under 4 × 20 concurrent checks. Run even when
      // the host count is wrong, so a failure says which it was: a stale flag (one host answered
      // every check: exactly 40) or a split brain (two stores: up to 80).
      const name = `exact-${round}`;
      const counts = await Promise.all(
        all.map((c) =>
          ask<{ admitted: number; failures: number }>(c, {
            cmd: "hammer",
            name,
            limit: 40,
            key: "k",
            checks: 20,
            lanes: 8,
          }),
        ),
      );
      const total = counts.reduce((n, c) => n + c.admitted, 0);
      const failures = counts.map((c) => c.failures);
      const after = counts.map((c) => c.hosting);
      const what =
        `round ${round}: hosts ${hosting} (after the exact check: ${after}), ` +
        `admitted ${total} of 40, policy answers ${failures}`;
      expect(hosting.filter(Boolean), what).toHaveLength(1);
      expect(failures, what).toEqual([0, 0, 0, 0]);
      expect(total, what).toBe(40);
      // Kill the host while the others check under load.
      const host = all[hosting.indexOf(true)] as ChildProcess;
      const others = all.filter((c) => c !== host);
      const load = others.map((c) =>
        ask(c, { cmd: "hammer", name: `load-${round}`, limit: 1_000_000, key: "l", checks: 200, lanes: 8 }),
      );
      host.kill(round % 2 === 0 ? "SIGKILL" : "SIGTERM");
      await once(host, "exit");
      await Promise.all(load);
      all.splice(all.indexOf(host), 1, await spawnOne());
      round++;
    }
    expect(round).toBeGreaterThanOrEqual(5);
    if (process.env.SLUICE_ELECTION_REPORT) console.log(`election rounds: ${round} in ${Date.now() - started} ms`);
    expect(hostCounts.every((n) => n === 1)).toBe(true);
  }, 600_000);
});
