/**
 * A process that finds a dead host's socket file while another process holds the takeover lock
 * (answering on it) waits for that takeover instead of giving up. Each wait once counted as one
 * of the election's 20 attempts (5-25 ms each): on a loaded machine a takeover (two checks 100 ms
 * apart, and the connects) outlasted them and the waiting processes' checks were answered
 * ERR_STORE (the squatted-lock test's flake in socket.test.ts). Failed before: ERR_STORE.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { lstatSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLimiter } from "sluice";
import { ClusterStore } from "sluice/cluster";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOCK_HELLO } from "../../src/stores/cluster/takeover-lock.ts";
import { ensureBuilt } from "../cli/helpers.ts";

/** How long the other process holds the lock: many times what the 20 attempts lasted. */
const HOLD_MS = 3000;
const dir = mkdtempSync(join(tmpdir(), "sluice-wait-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** A child listening on `path` (answering `hello` to each connection when given); resolves once up. */
async function listener(path: string, hello?: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [
    "-e",
    `const hello = ${JSON.stringify(hello ?? null)};
     require("net").createServer((c) => { if (hello !== null) c.end(hello); })
       .listen(${JSON.stringify(path)}, () => console.log("up"));`,
  ]);
  children.push(child);
  await once(child.stdout as NodeJS.ReadableStream, "data");
  return child;
}

// ensureBuilt waits (blocking) on a build lock shared machine-wide (a dist build takes ~50 s at load):
// once per file in a hook, never inside a test's own timeout (socket.test.ts).
beforeAll(() => ensureBuilt());

describe("socket host election behind another process's takeover", () => {
  it("waits for a live lock holder, then takes over once it is gone: the check is answered by a host", async () => {
    const path = join(dir, "w.sock");
    const dead = await listener(path);
    dead.kill("SIGKILL");
    await once(dead, "exit");
    expect(lstatSync(path).isSocket()).toBe(true); // a dead host's file, nobody listening
    const holder = await listener(`${path}.lock`, `${LOCK_HELLO} 12345\n`);
    const store = new ClusterStore({ socket: path, timeoutMs: HOLD_MS + 7000, onError: "deny" });
    const limiter = createLimiter({ algorithm: "gcra", limit: 5, periodMs: 1000 }, { store, name: "w" });
    const check = limiter.tryAcquire("k");
    await new Promise((done) => setTimeout(done, HOLD_MS));
    holder.kill("SIGKILL"); // a holder that dies mid-takeover: its lock is stale now
    await once(holder, "exit");
    const d = await check;
    expect(d.failure?.error.message).toBeUndefined();
    expect(d.allowed).toBe(true);
    expect(store.hosting).toBe(true);
  }, 30_000);
});
