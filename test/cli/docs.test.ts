// docs/cli.md runs as written: every `sh` block is run by bash with `sluice` being the built bin,
// and what it prints (stdout then stderr) must be the `text` block that follows it.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { BIN, ensureBuilt, ROOT } from "./helpers.ts";

beforeAll(ensureBuilt);

interface Example {
  line: number;
  script: string;
  output: string;
}

/** The `sh` blocks of `markdown`, each with the `text` block right after it. */
function examples(markdown: string): Example[] {
  const out: Example[] = [];
  const fence = /^```(\w*)\n([\s\S]*?)^```$/gm;
  const blocks = [...markdown.matchAll(fence)].map((m) => ({
    lang: m[1],
    body: m[2] as string,
    line: markdown.slice(0, m.index).split("\n").length,
  }));
  blocks.forEach((b, i) => {
    if (b.lang !== "sh") return;
    const next = blocks[i + 1];
    if (next?.lang !== "text") throw new Error(`docs/cli.md:${b.line}: an sh block needs a text block after it`);
    out.push({ line: b.line, script: b.body, output: next.body });
  });
  return out;
}

function bash(script: string): Promise<{ out: string; status: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", `sluice() { "${process.execPath}" "${BIN}" "$@"; }\n${script}`], { cwd: ROOT });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (status) => resolve({ out: stdout + stderr, status }));
  });
}

const DOC = readFileSync(join(ROOT, "docs/cli.md"), "utf8");
const EXAMPLES = examples(DOC);

describe("docs/cli.md examples", () => {
  it("has examples", () => {
    expect(EXAMPLES.length).toBeGreaterThanOrEqual(4);
  });
  for (const example of EXAMPLES) {
    it(`docs/cli.md:${example.line}: ${example.script.trim().slice(0, 60)}`, async () => {
      const { out } = await bash(example.script);
      expect(out).toBe(example.output);
    });
  }
});
