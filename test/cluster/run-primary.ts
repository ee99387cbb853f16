/**
 * Runs the node:cluster fixture (fixtures/primary.mjs) against the built package and returns
 * the one JSON line its primary prints. dist/ is built first if stale (shared lock with the CLI suites).
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";

const FIXTURE = join(ROOT, "test/cluster/fixtures/primary.mjs");

/** Starts the fixture's primary in `mode` with `config`; resolves with its report. */
export function runPrimary<T>(mode: string, config: Record<string, unknown>): Promise<T> {
  ensureBuilt();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FIXTURE, mode, JSON.stringify(config)], { cwd: ROOT });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    // A hung fixture must not hang the suite: kill it (the test then fails on the missing report).
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(timer);
      const line = stdout.trim().split("\n").pop() ?? "";
      try {
        resolve(JSON.parse(line) as T);
      } catch {
        reject(new Error(`fixture ${mode} exited ${status} without a report:\n${stdout}\n${stderr}`));
      }
    });
  });
}
