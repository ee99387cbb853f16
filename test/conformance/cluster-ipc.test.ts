// The store conformance kit (sluice/testing) on ClusterStore's IPC transport, in a real
// node:cluster worker (fixtures/cluster-kit.mjs, built package): each case's result is
// reported back and checked here, one test per case.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { storeConformance } from "sluice/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";

/** Runs the fixture; resolves with each case's "ok" or error message. */
function runKit(): Promise<Record<string, string>> {
  ensureBuilt();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, "test/conformance/fixtures/cluster-kit.mjs")], { cwd: ROOT });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (status) => {
      try {
        resolve(JSON.parse(stdout.trim().split("\n").pop() ?? "") as Record<string, string>);
      } catch {
        reject(new Error(`the fixture exited ${status} without results:\n${stdout}\n${stderr}`));
      }
    });
  });
}

describe("ClusterStore conformance, IPC transport (node:cluster)", () => {
  let results: Record<string, string>;
  beforeAll(async () => {
    results = await runKit();
  }, 240_000);
  // The names only: the cases run in the worker.
  for (const c of storeConformance({ name: "ClusterStore (IPC)", create: () => undefined as never })) {
    if (c.skip !== undefined) it.skip(`${c.name} (skipped: ${c.skip})`, () => {});
    else it(c.name, () => expect(results[c.name]).toBe("ok"));
  }
});
