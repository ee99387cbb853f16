// The store conformance kit (sluice/testing) on ClusterStore's socket transport: a forked
// process (test/cluster/fixtures/socket-client.mjs, built package) hosts the shared MemoryStore
// on a Unix socket; the store under test is a ClusterStore in this process that reaches it
// through the socket, as another PM2 process would.
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLimiter } from "sluice";
import { ClusterStore } from "sluice/cluster";
import { storeConformance } from "sluice/testing";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";
import { type KnownGaps, runCases } from "../support/conformance.ts";

const dir = mkdtempSync(join(tmpdir(), "sluice-kit-sock-"));
const socket = join(dir, "s.sock");
let host: ChildProcess | undefined;
let client: ClusterStore;

/**
 * The socket host validates every frame and takes an operation only as a 5-tuple
 * (src/stores/cluster/validate.ts `invalidOp`); a refund with a receipt travels as a 6-tuple
 * (protocol.ts), so the host refuses the frame and closes the connection: the refund and every
 * call batched with it are answered by the failure policy.
 */
const RECEIPT_GAP = "the socket host refuses a refund's receipt (a 6-tuple op) and closes the connection";
const SOCKET_GAPS: KnownGaps = {
  "refunds with receipts: only what that check took and still counts": RECEIPT_GAP,
  "trace: every call, refunds with receipts, penalties, limit changes (seeded)": RECEIPT_GAP,
};

/** One check through `store`, so its link is up (the host bound the socket, the client connected). */
const warm = (store: ClusterStore) =>
  createLimiter({ algorithm: "fixed-window", limit: 1000, windowMs: 1000 }, { store, name: "warm" }).tryAcquire("w");

describe("ClusterStore conformance, socket transport", () => {
  beforeAll(async () => {
    ensureBuilt();
    host = fork(join(ROOT, "test/cluster/fixtures/socket-client.mjs"), [JSON.stringify({ socket })], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    await once(host, "message"); // { ready: true }
    host.send({ id: 1, cmd: "warm" });
    const [reply] = (await once(host, "message")) as [{ hosting: boolean }];
    expect(reply.hosting).toBe(true);
    client = new ClusterStore({ socket });
    await warm(client);
    expect(client.hosting).toBe(false);
  });
  afterAll(() => {
    host?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });
  runCases(storeConformance({ name: "ClusterStore (socket)", create: () => client }), SOCKET_GAPS);
});
