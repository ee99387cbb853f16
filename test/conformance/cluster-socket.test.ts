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
import { runCases } from "../support/conformance.ts";

const dir = mkdtempSync(join(tmpdir(), "sluice-kit-sock-"));
const socket = join(dir, "s.sock");
let host: ChildProcess | undefined;
let client: ClusterStore;

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
  runCases(storeConformance({ name: "ClusterStore (socket)", create: () => client }));
});
