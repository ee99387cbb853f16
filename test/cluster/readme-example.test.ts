// The README's node:cluster and socket-transport examples, run as written (as files: each forks
// the file itself) against the built package: 4 processes × 5 attempts, exactly 10 allowed in total.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";

/** The first ```js block after `heading` in docs/stores.md (moved there from the README). */
function blockAfter(heading: string): string {
  const readme = readFileSync(join(ROOT, "docs", "stores.md"), "utf8");
  const from = readme.indexOf(heading);
  expect(from).toBeGreaterThan(-1);
  const block = /```js\n([\s\S]*?)```/.exec(readme.slice(from));
  expect(block).not.toBeNull();
  return (block as RegExpExecArray)[1] as string;
}

/** Runs the first js block after `heading` as a module inside the package; its stdout lines. */
function runBlock(heading: string, name: string): string[] {
  ensureBuilt();
  // Inside the package (git- and lint-ignored), so `import "sluice/cluster"` resolves to the built exports.
  const dir = join(ROOT, "test-artifacts");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${process.pid}.mjs`);
  writeFileSync(file, blockAfter(heading));
  try {
    return execFileSync(process.execPath, [file], { cwd: ROOT, encoding: "utf8", timeout: 60_000 }).trim().split("\n");
  } finally {
    rmSync(file, { force: true });
  }
}

describe("README: One machine, many processes", () => {
  it("the socket-transport example (PM2 stand-in) admits exactly the limit across 4 instances, one of them hosting", () => {
    const lines = runBlock("### PM2 cluster mode and other processes", "readme-socket");
    expect(lines).toHaveLength(4);
    const allowed = lines.map((line) => Number(/: (\d+) of 5 allowed/.exec(line)?.[1]));
    expect(allowed.reduce((a, b) => a + b, 0)).toBe(10);
    expect(lines.filter((line) => line.endsWith("(host)"))).toHaveLength(1);
  });

  it("the node:cluster example runs as written and admits exactly the limit across 4 workers", () => {
    const lines = runBlock("## One machine, many processes", "readme-cluster");
    expect(lines).toHaveLength(4);
    const allowed = lines.map((line) => Number(/: (\d+) of 5 allowed$/.exec(line)?.[1]));
    expect(allowed.reduce((a, b) => a + b, 0)).toBe(10);
  });
});
