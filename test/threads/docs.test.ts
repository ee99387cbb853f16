// docs/threads.md runs as written: each js block is written to a module inside the repository
// (so `import "sluice"` and "sluice/threads" resolve, by package self-reference, to the built
// dist/) and runs in its own node process, which must exit 0 and print what the page says.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../cli/helpers.ts";
import { extractBlocks } from "../support/readme-blocks.ts";
import { ensureBuilt } from "./support.ts";

const PAGE = join(ROOT, "docs/threads.md");
const WORK_DIR = join(ROOT, "test-artifacts", `threads-docs-${process.pid}`);
const blocks = extractBlocks(readFileSync(PAGE, "utf8"), "docs/threads.md");

beforeAll(() => {
  ensureBuilt();
  mkdirSync(WORK_DIR, { recursive: true });
}, 180_000);
afterAll(() => rmSync(WORK_DIR, { recursive: true, force: true }));

/** What each block must print (the numbers its comments promise). */
const PRINTS = [/^50 of 400 allowed\nfalse\n$/, /^10 of 25 allowed\n$/];

describe("docs/threads.md", () => {
  it("has the two examples, in js", () => {
    expect(blocks.map((b) => [b.language, b.notRun])).toEqual([
      ["js", undefined],
      ["js", undefined],
    ]);
  });

  blocks.forEach((block, i) => {
    it(`docs/threads.md:${block.line} runs and prints what it says`, () => {
      const file = join(WORK_DIR, `block-${block.line}.mjs`);
      writeFileSync(file, block.code);
      const r = spawnSync(process.execPath, [file], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(PRINTS[i] as RegExp);
    }, 90_000);
  });
});
