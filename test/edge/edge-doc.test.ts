// docs/edge.md's runnable blocks run as written under Node against the Upstash REST bridge (the
// URL and token in the environment variables the examples read); blocks that need Workers,
// Vercel Edge or a server carry a not-run marker with the reason, listed here. The example of
// docs/algorithms-first-hit.md runs too.
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";
import { extractBlocks } from "../support/readme-blocks.ts";
import { findRedis, noRedis, type SharedRedis } from "../support/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "./upstash-bridge.ts";

const DOC = join(ROOT, "docs/edge.md");
/** Inside the repository, so `import "sluice"` resolves to the package itself (dist/). */
const WORK_DIR = join(ROOT, "test-artifacts", `edge-doc-${process.pid}`);
const blocks = extractBlocks(readFileSync(DOC, "utf8"), "docs/edge.md");

const redis: SharedRedis | undefined = await findRedis();
afterAll(() => rmSync(WORK_DIR, { recursive: true, force: true }));
if (redis === undefined) noRedis("docs/edge.md examples");

/** Runs `code` as a module inside the repository; resolves with its exit status and output. */
function runBlock(
  name: string,
  code: string,
  env: Record<string, string>,
): Promise<{ status: number | null; out: string }> {
  const file = join(WORK_DIR, `${name}.mjs`);
  writeFileSync(file, code);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [file], { cwd: ROOT, env: { ...process.env, ...env } });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, out });
    });
  });
}

describe("docs/algorithms-first-hit.md", () => {
  it("its example runs as written and prints what its comments say", async () => {
    ensureBuilt();
    mkdirSync(WORK_DIR, { recursive: true });
    const doc = readFileSync(join(ROOT, "docs/algorithms-first-hit.md"), "utf8");
    const runnable = extractBlocks(doc, "docs/algorithms-first-hit.md").filter((b) => b.notRun === undefined);
    expect(runnable).toHaveLength(1);
    const outcome = await runBlock("first-hit", (runnable[0] as { code: string }).code, {});
    expect(outcome.status, outcome.out).toBe(0);
    expect(outcome.out.trim().split("\n")).toEqual(["false", "true"]);
  });
});

describe.skipIf(redis === undefined)("docs/edge.md", () => {
  let bridge: UpstashBridge;
  beforeAll(async () => {
    ensureBuilt();
    mkdirSync(WORK_DIR, { recursive: true });
    bridge = await startUpstashBridge(redis?.url ?? "");
    const skipped = blocks.filter((b) => b.notRun !== undefined).map((b) => `\n  docs/edge.md:${b.line}: ${b.notRun}`);
    console.info(`docs/edge.md blocks not run:${skipped.join("")}`);
  });
  afterAll(async () => {
    await bridge?.close();
    await redis?.owned?.dispose();
  });

  it("has a runnable block and marks each of the others with its reason", () => {
    expect(blocks.filter((b) => b.notRun === undefined && b.language === "js").length).toBe(1);
    expect(blocks.filter((b) => b.notRun !== undefined).length).toBe(3);
  });

  for (const block of blocks.filter((b) => b.notRun === undefined)) {
    it(`docs/edge.md:${block.line} runs against the bridge`, async () => {
      const outcome = await runBlock(`block-${block.line}`, block.code, {
        UPSTASH_REDIS_REST_URL: bridge.url,
        UPSTASH_REDIS_REST_TOKEN: bridge.token,
      });
      expect(outcome.status, outcome.out).toBe(0);
      expect(outcome.out).toContain("true 9");
      expect(outcome.out).toContain("false true");
    });
  }
});
