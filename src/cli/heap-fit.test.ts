import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cgroupMemoryLimit, heapAdvice, heapSizeGiven } from "./heap-fit.ts";

const dirs: string[] = [];
function cgroup(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "sluice-cgroup-"));
  dirs.push(root);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(root, name, ".."), { recursive: true });
    writeFileSync(join(root, name), text);
  }
  return root;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const MB = 2 ** 20;

describe("the cgroup's memory limit", () => {
  it.each([
    ["v2, systemd MemoryMax=512M", { "memory.max": "536870912\n" }, 512 * MB],
    ["v2 without a limit", { "memory.max": "max\n" }, undefined],
    ["v1", { "memory/memory.limit_in_bytes": "268435456\n" }, 256 * MB],
    ["v1 without a limit", { "memory/memory.limit_in_bytes": "9223372036854771712\n" }, undefined],
    ["no cgroup files", {}, undefined],
  ])("%s", (_name, files, limit) => {
    expect(cgroupMemoryLimit(cgroup(files))).toBe(limit);
  });
});

describe("the start-up advice", () => {
  it("names a heap of three quarters of the limit when V8's could outgrow it", () => {
    expect(heapAdvice(512 * MB, 4345 * MB, false)).toBe(
      "warning: this process's cgroup may use 512 MB, but V8's heap may grow to 4345 MB (Node sizes it from the machine): start node with --max-old-space-size=384 (or NODE_OPTIONS=--max-old-space-size=384) so garbage is collected before the limit kills the service",
    );
  });

  it("says nothing without a limit, with a heap size given, or with a heap that fits", () => {
    expect(heapAdvice(undefined, 4345 * MB, false)).toBeUndefined();
    expect(heapAdvice(512 * MB, 4345 * MB, true)).toBeUndefined();
    expect(heapAdvice(8192 * MB, 4345 * MB, false)).toBeUndefined();
  });

  it("finds a heap size given on the command line or in NODE_OPTIONS", () => {
    expect(heapSizeGiven(["--max-old-space-size=384"], undefined)).toBe(true);
    expect(heapSizeGiven([], "--enable-source-maps --max_old_space_size=256")).toBe(true);
    expect(heapSizeGiven(["--trace-gc"], "--max-semi-space-size=16")).toBe(false);
  });
});
