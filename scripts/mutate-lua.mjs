#!/usr/bin/env node
// Mutation testing of the Redis Lua twins (docs/testing.md): applies one comparison or
// arithmetic flip at a time to src/stores/redis/scripts/**/*.lua, runs the Redis parity suite
// against it and reports which mutants the suite killed and which survived.
//
// The tests load the Lua from src/ (vitest resolves `sluice/redis` to src/, and
// src/stores/redis/script.ts reads the scripts next to itself), so mutating src/ is what the
// suite runs; no build is needed. Each mutant runs against a private redis-server started here
// on a free port (a mutant that loops forever must never block the shared Redis), passed to the
// suite as REDIS_URL. The original file is always restored, also on Ctrl-C.
//
//   node scripts/mutate-lua.mjs [--file sliding-log.lua] [--line 16] [--limit N] [--seeds 2] [--list]
//
// Exit code 0 when every mutant was killed, 1 otherwise. Writes reports/mutation/lua.json.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SCRIPTS = join(ROOT, "src/stores/redis/scripts");

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const onlyFile = option("file");
const onlyLine = option("line") === undefined ? undefined : Number(option("line"));
const limit = option("limit") === undefined ? Number.POSITIVE_INFINITY : Number(option("limit"));
const seeds = option("seeds") ?? "2";

/** Every .lua file under the scripts folder. */
function luaFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? luaFiles(join(dir, e.name)) : e.name.endsWith(".lua") ? [join(dir, e.name)] : [],
  );
}

// The flips: comparisons to their neighbours and negations, arithmetic to its inverse.
const FLIPS = [
  [/<=/g, "<"],
  [/>=/g, ">"],
  [/(?<![<>=~])<(?!=)/g, "<="],
  [/(?<![<>=~-])>(?!=)/g, ">="],
  [/==/g, "~="],
  [/~=/g, "=="],
  [/(?<=[\w)\]] )\+(?= )/g, "-"],
  [/(?<=[\w)\]] )-(?= )/g, "+"],
  [/(?<=[\w)\]] )\*(?= )/g, "/"],
  [/(?<=[\w)\]] )\/(?= )/g, "*"],
];

/** The code part of a Lua line: up to a `--` comment, with string literals blanked out. */
function codeOf(line) {
  let out = "";
  let quote;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote !== undefined) {
      out += " ";
      if (c === "\\") {
        out += " ";
        i++;
      } else if (c === quote) quote = undefined;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      out += " ";
      continue;
    }
    if (c === "-" && line[i + 1] === "-") break;
    out += c;
  }
  return out;
}

/** Every single-site mutant of `file`: { file, line, column, from, to, text }. */
function mutantsOf(file) {
  const lines = readFileSync(file, "utf8").split("\n");
  const out = [];
  lines.forEach((line, n) => {
    const code = codeOf(line);
    for (const [pattern, to] of FLIPS) {
      for (const m of code.matchAll(pattern)) {
        const mutated = line.slice(0, m.index) + to + line.slice(m.index + m[0].length);
        out.push({ file, line: n + 1, column: m.index + 1, from: m[0], to, text: line.trim(), mutated });
      }
    }
  });
  return out;
}

/** The test names a mutant of `file` is checked by (all parity tests for shared code). */
function testFilter(file) {
  const base = file.replace(/^.*\//, "").replace(/\.lua$/, "");
  const related = {
    "fixed-window": "fixed-window|composite|seed",
    "sliding-log": "sliding-log|composite|seed",
    "sliding-window": "sliding-window|composite",
    "token-bucket": "token-bucket|composite",
    gcra: "gcra|leaky|composite|token-bucket",
    ban: "ban",
  };
  return related[base];
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startRedis() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "sluice-mutate-lua-"));
  const child = spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--dir",
      dir,
      "--busy-reply-threshold",
      "2000",
    ],
    { stdio: "ignore" },
  );
  for (let i = 0; i < 100; i++) {
    const r = spawnSync("redis-cli", ["-p", String(port), "PING"], { encoding: "utf8" });
    if (r.stdout?.startsWith("PONG")) return { port, child, dir };
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill("SIGKILL");
  throw new Error("mutate-lua: could not start redis-server");
}

/** Runs the parity suite (filtered to `filter`); resolves with true when it failed (the mutant is killed). */
function runSuite(url, filter) {
  return new Promise((resolve) => {
    const testArgs = ["vitest", "run", "test/redis/parity.test.ts", "--maxWorkers=1", "--bail=1"];
    if (filter !== undefined) testArgs.push("-t", filter);
    const child = spawn("npx", testArgs, {
      cwd: ROOT,
      stdio: "ignore",
      env: { ...process.env, REDIS_URL: url, SLUICE_PARITY_SEEDS: seeds },
    });
    child.on("exit", (code) => resolve(code !== 0));
  });
}

const files = luaFiles(SCRIPTS).filter(
  (f) => onlyFile === undefined || relative(SCRIPTS, f) === onlyFile || f.endsWith(`/${onlyFile}`),
);
const all = files
  .flatMap(mutantsOf)
  .filter((m) => onlyLine === undefined || m.line === onlyLine)
  .slice(0, limit);
if (args.includes("--list")) {
  for (const m of all) console.log(`${relative(ROOT, m.file)}:${m.line}:${m.column} ${m.from} -> ${m.to}   ${m.text}`);
  console.log(`${all.length} mutants`);
  process.exit(0);
}
const originals = new Map(files.map((f) => [f, readFileSync(f, "utf8")]));
const restore = () => {
  for (const [f, text] of originals) writeFileSync(f, text);
};
process.on("SIGINT", () => {
  restore();
  process.exit(130);
});

const redis = await startRedis();
const url = `redis://127.0.0.1:${redis.port}`;
const results = [];
const started = Date.now();
try {
  for (const [i, m] of all.entries()) {
    const lines = (originals.get(m.file) ?? "").split("\n");
    lines[m.line - 1] = m.mutated;
    writeFileSync(m.file, lines.join("\n"));
    const killed = await runSuite(url, testFilter(m.file));
    writeFileSync(m.file, originals.get(m.file) ?? "");
    // A mutant that looped leaves a script running: stop it before the next one.
    spawnSync("redis-cli", ["-p", String(redis.port), "SCRIPT", "KILL"], { stdio: "ignore" });
    const where = `${relative(ROOT, m.file)}:${m.line}:${m.column}`;
    results.push({ where, from: m.from, to: m.to, text: m.text, killed });
    console.log(
      `[${i + 1}/${all.length}] ${killed ? "killed  " : "SURVIVED"} ${where} ${m.from} -> ${m.to}   ${m.text}`,
    );
  }
} finally {
  restore();
  redis.child.kill("SIGKILL");
  rmSync(redis.dir, { recursive: true, force: true });
}

const killed = results.filter((r) => r.killed).length;
const score = results.length === 0 ? 100 : (100 * killed) / results.length;
console.log(
  `\nLua mutants: ${results.length}, killed ${killed}, survived ${results.length - killed} (${score.toFixed(1)}%) in ${Math.round((Date.now() - started) / 1000)} s`,
);
for (const r of results.filter((r) => !r.killed))
  console.log(`  survived: ${r.where} ${r.from} -> ${r.to}   ${r.text}`);
mkdirSync(join(ROOT, "reports/mutation"), { recursive: true });
writeFileSync(join(ROOT, "reports/mutation/lua.json"), JSON.stringify({ score, results }, null, 2));
process.exit(killed === results.length ? 0 : 1);
