// Every JavaScript/TypeScript code block of README.md runs as written: each is written to a
// module inside the repository (so `import "sluice"` resolves, by package self-reference, to the
// built dist/), TypeScript is stripped of its types, and the module runs in its own `node`
// process that must exit 0 within BLOCK_TIMEOUT_MS. Blocks get the Redis on 127.0.0.1:6379
// (REDIS_URL), PORT=0 for servers, and SLUICE_URL of a `sluice serve` started here on
// examples/rules.yaml. A fragment that cannot run alone is marked `<!-- not-run: reason -->`
// right before its fence, and is listed as skipped.
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { transformWithOxc } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT, type Served, serve } from "./cli/helpers.ts";
import { type CodeBlock, extractBlocks, ReadmeFormatError } from "./support/readme-blocks.ts";

const README = join(ROOT, "README.md");
/** Longest a block may take: a block that does not exit has left a server, client or timer open. */
const BLOCK_TIMEOUT_MS = 20_000;
/** Inside the repository (so self-reference resolves) and ignored by git and the linter. */
const WORK_DIR = join(ROOT, "test-artifacts", `readme-${process.pid}`);

const blocks = extractBlocks(readFileSync(README, "utf8"));
const skipped = blocks.filter((b) => b.notRun !== undefined);
const runnable = blocks.filter((b) => b.notRun === undefined);

/** A block's title in test names and failure messages: where it is and how it starts. */
function title(block: CodeBlock): string {
  const first = block.code.split("\n").find((l) => l.trim() !== "" && !l.trim().startsWith("//")) ?? "";
  return `README.md:${block.line} (${block.language}) ${first.trim().slice(0, 60)}`;
}

/** What a block's process did. */
interface Outcome {
  status: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
}

/**
 * TypeScript → JavaScript (types stripped by oxc, which vite ships; TypeScript 7 has no JS
 * transpile API), with an inline source map naming the `.ts` twin of `file`, so stack traces
 * (`--enable-source-maps`) point at the block's own lines.
 */
async function stripTypes(block: CodeBlock, file: string): Promise<string> {
  // Legacy decorators, as NestJS (and vitest.config.ts) use them.
  const out = await transformWithOxc(block.code, file.replace(/\.mjs$/, ".ts"), {
    lang: "ts",
    sourcemap: true,
    decorator: { legacy: true },
  });
  if (out.map === null || out.map === undefined) return out.code;
  const map = Buffer.from(JSON.stringify(out.map)).toString("base64");
  return `${out.code}\n//# sourceMappingURL=data:application/json;base64,${map}\n`;
}

function runModule(file: string, env: Record<string, string>, sourceMaps: boolean): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const args = sourceMaps ? ["--enable-source-maps", file] : [file];
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, BLOCK_TIMEOUT_MS);
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, timedOut, stdout, stderr });
    });
  });
}

/**
 * Rewrites positions in the temporary module (`file:///…/block-N.mjs:L:C`, or its `.ts` twin
 * named by the source map) to README lines, so a stack trace points at the README.
 */
function toReadmeLines(text: string, file: string, block: CodeBlock): string {
  const names = [file, file.replace(/\.mjs$/, ".ts")].flatMap((f) => [pathToFileURL(f).href, f]);
  const escaped = names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
  const at = new RegExp(`(?:${escaped}):(\\d+)(?::(\\d+))?`, "g");
  return text.replace(at, (_, l: string, c?: string) => `README.md:${block.line + Number(l)}${c ? `:${c}` : ""}`);
}

/** The failure text for a block: where it is, how it ended, and what it printed. */
function report(block: CodeBlock, file: string, outcome: Outcome): string {
  const how = outcome.timedOut
    ? `did not exit within ${BLOCK_TIMEOUT_MS / 1000} s (a server, client or timer left open?)`
    : outcome.signal !== null
      ? `was killed by ${outcome.signal}`
      : `exited with status ${outcome.status}`;
  const tail = (s: string) => (s.length > 4000 ? `…${s.slice(-4000)}` : s);
  return [
    `${title(block)} ${how}`,
    `--- stderr ---\n${tail(toReadmeLines(outcome.stderr, file, block)).trimEnd() || "(empty)"}`,
    `--- stdout ---\n${tail(outcome.stdout).trimEnd() || "(empty)"}`,
  ].join("\n");
}

describe("README.md code blocks run as written", () => {
  let service: Served | undefined;
  let env: Record<string, string> = {};

  beforeAll(async () => {
    ensureBuilt();
    mkdirSync(WORK_DIR, { recursive: true });
    // The service the client example calls (its default URL would reach whatever holds :8080).
    service = await serve(["--config", "examples/rules.yaml", "--no-watch"]);
    env = {
      REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
      PORT: "0",
      SLUICE_URL: service.url,
    };
    const list = skipped.map((b) => `\n  ${title(b)}: ${b.notRun}`).join("") || " none";
    console.info(`README blocks not run (marked <!-- not-run: reason -->):${list}`);
  });

  afterAll(async () => {
    await service?.stop();
    rmSync(WORK_DIR, { recursive: true, force: true });
  });

  it("finds the README's runnable blocks", () => {
    expect(runnable.length).toBeGreaterThan(10);
  });

  for (const block of runnable) {
    it(title(block), { timeout: BLOCK_TIMEOUT_MS + 10_000 }, async () => {
      const file = join(WORK_DIR, `block-${block.line}.mjs`);
      writeFileSync(file, block.language === "ts" ? await stripTypes(block, file) : block.code);
      const outcome = await runModule(file, env, block.language === "ts");
      // The whole report is the received value, so a failure shows the block's line and stderr.
      expect(outcome.status === 0 && !outcome.timedOut ? "exited 0" : report(block, file, outcome)).toBe("exited 0");
    });
  }
});

describe("extractBlocks", () => {
  it("finds js/ts fences with their README lines, honours not-run markers, ignores other languages", () => {
    const md = [
      "# t", // 1
      "```js", // 2
      "a();", // 3
      "```", // 4
      "```sh", // 5
      "npm test", // 6
      "```", // 7
      "<!-- not-run: needs an app -->", // 8
      "", // 9
      "```TypeScript title", // 10
      "let b: number;", // 11
      "```", // 12
      "  ~~~~javascript", // 13
      "  c();", // 14
      "  ~~~~", // 15
    ].join("\n");
    expect(extractBlocks(md)).toEqual([
      { line: 2, language: "js", code: "a();\n" },
      { line: 10, language: "ts", code: "let b: number;\n", notRun: "needs an app" },
      { line: 13, language: "js", code: "c();\n" },
    ]);
  });

  it("refuses markers without a reason or away from a fence, and unclosed fences", () => {
    expect(() => extractBlocks("<!-- not-run: -->\n```js\nx\n```\n")).toThrow(/README.md:1: .*needs a reason/);
    expect(() => extractBlocks("<!-- not-run: x -->\ntext\n```js\nx\n```\n")).toThrow(/README.md:1: .*right before/);
    expect(() => extractBlocks("<!-- not-run: x -->\n```sh\nx\n```\n")).toThrow(/not run anyway/);
    expect(() => extractBlocks("a\n```js\nx\n")).toThrow(/README.md:2: code fence is never closed/);
    expect(() => extractBlocks("<!-- not-run: x -->\n")).toThrow(ReadmeFormatError);
  });
});
