// docs/edge.md's runnable blocks run as written under Node against the Upstash REST bridge (the
// URL and token in the environment variables the examples read); blocks that need Workers,
// Vercel Edge or a server carry a not-run marker with the reason, listed here.
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
if (redis === undefined) noRedis("docs/edge.md examples");

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
    rmSync(WORK_DIR, { recursive: true, force: true });
  });

  it("has a runnable block and marks each of the others with its reason", () => {
    expect(blocks.filter((b) => b.notRun === undefined && b.language === "js").length).toBe(1);
    expect(blocks.filter((b) => b.notRun !== undefined).length).toBe(3);
  });

  for (const block of blocks.filter((b) => b.notRun === undefined)) {
    it(`docs/edge.md:${block.line} runs against the bridge`, async () => {
      const file = join(WORK_DIR, `block-${block.line}.mjs`);
      writeFileSync(file, block.code);
      const outcome = await new Promise<{ status: number | null; out: string }>((resolve) => {
        const child = spawn(process.execPath, [file], {
          cwd: ROOT,
          env: { ...process.env, UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token },
        });
        let out = "";
        child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
        child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        child.on("close", (status) => {
          clearTimeout(timer);
          resolve({ status, out });
        });
      });
      expect(outcome.status, outcome.out).toBe(0);
      expect(outcome.out).toContain("true 9");
      expect(outcome.out).toContain("false true");
    });
  }
});
