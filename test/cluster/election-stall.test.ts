/**
 * The socket host election when a process is preempted between bind() and listen() (what a
 * loaded machine does now and then, made deterministic): the fixture's `stallListenMs` keeps each
 * socket it listens on bound but not listening for that long, the process alive. A bound socket
 * refuses connections exactly as a dead host's file does; election-stress.test.ts met both races
 * below under load ("two hosts at once"). Each case failed before sockets were published only
 * once listening (src/stores/cluster/publish-socket.ts).
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";

const FIXTURE = join(ROOT, "test/cluster/fixtures/socket-client.mjs");
/** Far longer than a takeover (two checks 100 ms apart) takes, even on a loaded machine. */
const STALL_MS = 2500;

let dir: string;
let socket: string;
let children: ChildProcess[] = [];
let nextId = 1;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sluice-stall-"));
  socket = join(dir, "s.sock");
});

afterEach(() => {
  for (const child of children) child.kill("SIGKILL");
  children = [];
  rmSync(dir, { recursive: true, force: true });
});

interface Reply {
  hosting: boolean;
  failure?: string | null;
  admitted?: number;
  failures?: number;
}

async function start(config: Record<string, unknown> = {}): Promise<ChildProcess> {
  const child = fork(FIXTURE, [JSON.stringify({ socket, timeoutMs: 20_000, ...config })], {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "ignore", "ipc"],
  });
  children.push(child);
  await new Promise<void>((resolve) => child.once("message", () => resolve()));
  return child;
}

function ask(child: ChildProcess, command: Record<string, unknown>): Promise<Reply> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const on = (m: Record<string, unknown>) => {
      if (m.id !== id) return;
      child.off("message", on);
      resolve(m as unknown as Reply);
    };
    child.on("message", on);
    child.once("exit", (code, signal) => reject(new Error(`fixture exited (${code ?? signal})`)));
    child.send({ id, ...command });
  });
}

/** Resolves once a file other than `except` appears in the test's directory (a socket bound). */
async function bound(except: string[] = []): Promise<void> {
  while (readdirSync(dir).every((name) => except.includes(name))) {
    await new Promise((done) => setTimeout(done, 5));
  }
}

/** Who hosts now, and how many of 2 × 40 checks a fresh limit of 40 admits across both. */
async function verdict(all: ChildProcess[], name: string): Promise<{ hosts: boolean[]; admitted: number }> {
  const out = await Promise.all(
    all.map((c) => ask(c, { cmd: "hammer", name, limit: 40, key: "k", checks: 40, lanes: 8 })),
  );
  expect(out.map((r) => r.failures)).toEqual(all.map(() => 0));
  const hosts = (await Promise.all(all.map((c) => ask(c, { cmd: "warm" })))).map((r) => r.hosting);
  return { hosts, admitted: out.reduce((n, r) => n + (r.admitted ?? 0), 0) };
}

// ensureBuilt waits (blocking) on a build lock shared machine-wide (a dist build takes ~50 s at load):
// once per file in a hook, never inside a test's own timeout (socket.test.ts).
beforeAll(() => ensureBuilt());

describe("socket host election with a process stalled between bind and listen", () => {
  it("a host stalled before listening is not taken for dead; one host, the limit exact", async () => {
    const slow = await start({ stallListenMs: STALL_MS });
    const quick = await start();
    const slowFirst = ask(slow, { cmd: "warm" });
    await bound(); // the slow process bound its socket and stalls
    // Before: the quick process found the path refusing twice 100 ms apart, removed it and hosted;
    // the slow one then listened on a removed file, read the quick one's file as its own and
    // hosted too, for good (each deciding its own checks: 80 of 40 admitted).
    const quickFirst = await ask(quick, { cmd: "warm" });
    expect(quickFirst.failure).toBeNull();
    expect((await slowFirst).failure).toBeNull();
    const { hosts, admitted } = await verdict([slow, quick], "stalled-host");
    expect(hosts.filter(Boolean), `hosts ${hosts}, admitted ${admitted} of 40`).toHaveLength(1);
    expect(admitted).toBe(40);
  }, 30_000);

  it("a takeover lock holder stalled before listening keeps the lock; the dead host's file is taken over once", async () => {
    const first = await start();
    expect((await ask(first, { cmd: "warm" })).hosting).toBe(true);
    first.kill("SIGKILL");
    await once(first, "exit");
    expect(lstatSync(socket).isSocket()).toBe(true); // the dead host's file, nobody listening
    const slow = await start({ stallListenMs: STALL_MS });
    const quick = await start();
    const slowFirst = ask(slow, { cmd: "warm" });
    await bound(["s.sock"]); // the slow process bound a socket (its lock, or its own private name)
    // Before: the quick process judged the slow one's lock stale (refused) and removed it, took
    // the lock and the host's path; the slow one then found its lock gone and its first check
    // was answered by the policy (ERR_STORE), or held a second lock beside the quick one's.
    const quickFirst = await ask(quick, { cmd: "warm" });
    expect(quickFirst.failure).toBeNull();
    expect((await slowFirst).failure).toBeNull();
    const { hosts, admitted } = await verdict([slow, quick], "stalled-lock");
    expect(hosts.filter(Boolean), `hosts ${hosts}, admitted ${admitted} of 40`).toHaveLength(1);
    expect(admitted).toBe(40);
  }, 40_000);
});
