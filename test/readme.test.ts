// Every JavaScript/TypeScript code block of README.md and docs/**/*.md (docs/api is generated)
// runs as written, and what it prints is checked: each is written to a module inside the
// repository (so `import "sluice"` resolves, by package self-reference, to the built dist/),
// TypeScript is stripped of its types, and the module runs in its own `node` process that must
// exit 0 within BLOCK_TIMEOUT_MS. A `console.log(…); // => text` line must print `text`
// (test/docs/results.ts). Blocks get the Redis on 127.0.0.1:6379 (REDIS_URL), PORT=0 for servers,
// SLUICE_URL of a `sluice serve` started here on examples/rules.yaml, and UPSTASH_REDIS_REST_URL/_TOKEN
// of a stand-in for Upstash's REST endpoint over that Redis (docs/edge.md's @upstash/redis example),
// and DATABASE_URL, the PostgreSQL on 127.0.0.1:5432 (database `test`; docs/postgres.md). A fragment that cannot
// run alone is marked `<!-- not-run: reason -->` right before its fence, and is counted and
// listed as skipped. Shell, YAML and other languages are not run (fence them with their language).
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { transformWithOxc } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT, type Served, serve } from "./cli/helpers.ts";
import { instrument, type ResultCheck, resultPattern } from "./docs/results.ts";
import { startUpstashBridge, type UpstashBridge } from "./edge/upstash-bridge.ts";
import { type CodeBlock, extractBlocks, ReadmeFormatError } from "./support/readme-blocks.ts";

/** Longest a block may take: a block that does not exit has left a server, client or timer open. */
const BLOCK_TIMEOUT_MS = 20_000;
/** Inside the repository (so self-reference resolves) and ignored by git and the linter. */
const WORK_DIR = join(ROOT, "test-artifacts", `readme-${process.pid}`);
/** Defines `__docResult` for instrumented result comments. */
const PRELUDE = join(ROOT, "test", "docs", "result-prelude.mjs");

/** README.md and every Markdown file under docs/ except the generated API reference. */
function markdownFiles(): string[] {
  const found = ["README.md"];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory() && path !== "docs/api") walk(path);
      else if (entry.isFile() && entry.name.endsWith(".md")) found.push(path);
    }
  };
  walk("docs");
  return found;
}

/** A block with the file it is in. */
interface DocBlock extends CodeBlock {
  file: string;
}

const files = markdownFiles();
const blocks: DocBlock[] = files.flatMap((file) =>
  extractBlocks(readFileSync(join(ROOT, file), "utf8"), file).map((b) => ({ ...b, file })),
);
const skipped = blocks.filter((b) => b.notRun !== undefined);
const runnable = blocks.filter((b) => b.notRun === undefined);

/** A block's title in test names and failure messages: where it is and how it starts. */
function title(block: DocBlock): string {
  const first = block.code.split("\n").find((l) => l.trim() !== "" && !l.trim().startsWith("//")) ?? "";
  return `${block.file}:${block.line} (${block.language}) ${first.trim().slice(0, 60)}`;
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
    const args = ["--import", pathToFileURL(PRELUDE).href, ...(sourceMaps ? ["--enable-source-maps"] : []), file];
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
 * named by the source map) to lines of the Markdown file, so a stack trace points at the doc.
 */
function toReadmeLines(text: string, file: string, block: DocBlock): string {
  const names = [file, file.replace(/\.mjs$/, ".ts")].flatMap((f) => [pathToFileURL(f).href, f]);
  const escaped = names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|");
  const at = new RegExp(`(?:${escaped}):(\\d+)(?::(\\d+))?`, "g");
  return text.replace(at, (_, l: string, c?: string) => `${block.file}:${block.line + Number(l)}${c ? `:${c}` : ""}`);
}

/** The failure text for a block: where it is, how it ended, and what it printed. */
function report(block: DocBlock, file: string, outcome: Outcome): string {
  const how = outcome.timedOut
    ? `did not exit within ${BLOCK_TIMEOUT_MS / 1000} s (a server, client or timer left open?)`
    : outcome.signal !== null
      ? `was killed by ${outcome.signal}`
      : outcome.status === 0
        ? "exited 0 but a result check failed"
        : `exited with status ${outcome.status}`;
  const tail = (s: string) => (s.length > 4000 ? `…${s.slice(-4000)}` : s);
  return [
    `${title(block)} ${how}`,
    `--- stderr ---\n${tail(toReadmeLines(outcome.stderr, file, block)).trimEnd() || "(empty)"}`,
    `--- stdout ---\n${tail(outcome.stdout).trimEnd() || "(empty)"}`,
  ].join("\n");
}

/** Whether a block's run passed: exit 0 in time, and no result check failed in any of its processes. */
function passed(outcome: Outcome): boolean {
  return outcome.status === 0 && !outcome.timedOut && !outcome.stderr.includes("sluice-doc-result:");
}

/** Writes the block (instrumented, types stripped) to a module in WORK_DIR and runs it. */
async function runBlock(block: DocBlock, env: Record<string, string>): Promise<{ file: string; outcome: Outcome }> {
  const name = `${block.file.replace(/[^\w]+/g, "-")}-${block.line}.mjs`;
  const file = join(WORK_DIR, name);
  const { code, checks } = instrument(block, block.file);
  writeFileSync(file, block.language === "ts" ? await stripTypes({ ...block, code }, file) : code);
  const outcome = await runModule(
    file,
    { ...env, SLUICE_DOC_RESULTS: JSON.stringify(checks satisfies ResultCheck[]), SLUICE_DOC_FILE: block.file },
    block.language === "ts",
  );
  return { file, outcome };
}

describe("README.md and docs/ code blocks run as written and print what they say", () => {
  let service: Served | undefined;
  let bridge: UpstashBridge | undefined;
  let env: Record<string, string> = {};

  beforeAll(async () => {
    ensureBuilt();
    mkdirSync(WORK_DIR, { recursive: true });
    // The service the client example calls (its default URL would reach whatever holds :8080).
    service = await serve(["--config", "examples/rules.yaml", "--no-watch"]);
    const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
    bridge = await startUpstashBridge(redisUrl);
    env = {
      REDIS_URL: redisUrl,
      PORT: "0",
      SLUICE_URL: service.url,
      UPSTASH_REDIS_REST_URL: bridge.url,
      UPSTASH_REDIS_REST_TOKEN: bridge.token,
      DATABASE_URL: process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test",
    };
    const list = skipped.map((b) => `\n  ${title(b)}: ${b.notRun}`).join("") || " none";
    const checked = runnable.reduce((n, b) => n + instrument(b, b.file).checks.length, 0);
    console.info(
      `doc blocks: ${runnable.length} run (${checked} result comments checked) in ${files.length} files; ` +
        `${skipped.length} not run (marked <!-- not-run: reason -->):${list}`,
    );
  });

  afterAll(async () => {
    await service?.stop();
    await bridge?.close();
    rmSync(WORK_DIR, { recursive: true, force: true });
  });

  it("finds runnable blocks in the README and the guides, most of them with checked results", () => {
    expect(runnable.filter((b) => b.file === "README.md").length).toBeGreaterThanOrEqual(5);
    expect(runnable.length).toBeGreaterThan(30);
    const withResults = runnable.filter((b) => instrument(b, b.file).checks.length > 0);
    expect(withResults.length).toBeGreaterThan(runnable.length / 2);
  });

  for (const block of runnable) {
    it(title(block), { timeout: BLOCK_TIMEOUT_MS + 10_000 }, async () => {
      const { file, outcome } = await runBlock(block, env);
      // The whole report is the received value, so a failure shows the block's line and stderr.
      expect(passed(outcome) ? "passed" : report(block, file, outcome)).toBe("passed");
    });
  }
});

describe("result comments are checked", () => {
  const synthetic = (code: string): DocBlock => ({ file: "synthetic.md", line: 1, language: "js", code });
  beforeAll(() => mkdirSync(WORK_DIR, { recursive: true }));
  afterAll(() => rmSync(WORK_DIR, { recursive: true, force: true }));

  it("a block that prints something else than its `// =>` comment fails, naming the line", async () => {
    const { outcome } = await runBlock(
      synthetic("const handle = () => ({ status: 429 });\nconsole.log(handle()); // => { status: 200 }\n"),
      {},
    );
    expect(passed(outcome)).toBe(false);
    expect(outcome.stderr).toContain(
      'synthetic.md:3: printed "{ status: 429 }" but its comment says "{ status: 200 }"',
    );
  });

  it("passes when the output matches, with placeholders standing for any text", async () => {
    const { outcome } = await runBlock(
      synthetic(
        'console.log({ status: 200 }); // => { status: 200 }\nconsole.log("r=5;t=17", 2); // => r=5;t=<seconds> 2\n',
      ),
      {},
    );
    expect(outcome.stderr).toBe("");
    expect(passed(outcome)).toBe(true);
    expect(outcome.stdout).toBe("{ status: 200 }\nr=5;t=17 2\n");
  });

  it("fails when a result line never runs", async () => {
    const never = await runBlock(synthetic("if (process.env.NEVER) console.log(1); // => 1\n"), {});
    expect(never.outcome.stderr).toContain("synthetic.md:2: this console.log never ran");
    expect(passed(never.outcome)).toBe(false);
  });

  it("refuses unchecked comments after console.log and `// =>` away from a call", () => {
    expect(() => instrument(synthetic("console.log(x); // 4\n"), "a.md")).toThrow(/a\.md:2: .*checked result comment/);
    expect(() => instrument(synthetic("x; // => 4\n"), "a.md")).toThrow(/a\.md:2: .*must follow a console\.log/);
    expect(instrument(synthetic("console.log(a); // => 1\n"), "a.md").code).toBe("__docResult(2, a); // => 1\n");
  });

  it("turns placeholders into wildcards and escapes everything else", () => {
    const match = (text: string, printed: string) => new RegExp(resultPattern(text)).test(printed);
    expect(match('"hour";r=999;t=<to the hour\'s end>', '"hour";r=999;t=1234')).toBe(true);
    expect(match("{ allowed: false, ... }", "{ allowed: false, remaining: 0 }")).toBe(true);
    expect(match("{ status: 200 }", "{ status: 2000 }")).toBe(false);
    expect(match("a.b", "axb")).toBe(false);
  });
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
