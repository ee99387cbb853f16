#!/usr/bin/env node
// Mutation testing of the Redis Lua twins (docs/testing.md): applies one comparison or
// arithmetic flip at a time to src/stores/redis/scripts/**/*.lua, runs the Redis parity suite
// against it and reports which mutants the suite killed and which survived.
//
// The library runs the Lua embedded in src/stores/redis/lua-sources.ts, not the .lua files, and
// starting vitest costs far more than a parity run here; so the files on disk are never
// touched: one vitest process (test/support/lua-mutant-run.ts) runs every mutant, swapping the
// mutated text into a freshly imported LUA_SOURCES each time, against a private redis-server
// started here on a free port (a mutant that loops forever must never block the shared Redis).
// If a mutant hangs Redis for good, Redis is restarted and the run resumes after it.
//
//   node scripts/mutate-lua.mjs [--file sliding-log.lua] [--line 16[,20...]] [--limit N] [--seeds 2] [--list]
//                               [--recheck reports/mutation/lua.json] [--out reports/mutation/lua.json]
//                               [--equivalents scripts/lua-equivalents.json]
//
// --recheck runs only the mutants that survived in that report (a mutant the suite killed stays
// killed by a suite that only grew) and writes the merged result: every mutant of the report,
// killed now or then. Mutants are matched by file, line, column and flip, so the .lua files must
// be those the report was made from.
//
// Mutants argued equivalent are listed in scripts/lua-equivalents.json ({ file, text, from, to,
// reason }: text is the trimmed source line, plus column where the line has the same flip twice,
// occurrence where the file has the line's text twice, line as a hint), so the claim is checked
// here rather than in prose: every entry must match exactly one mutant of the .lua files (else
// exit 2; an entry names its line by text, so a line that only moved still matches), a listed
// mutant that gets killed is reported (drop it from the list), and the score leaves listed
// mutants out, as Stryker leaves out ignored ones (the raw score is printed beside it).
//
// Exit code 0 when every mutant not listed as equivalent was killed, 1 when one survived, 2 on a
// bad list or a harness failure. Writes reports/mutation/lua.json.
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
// --line takes one line or several, comma-separated (27,83).
const onlyLines = option("line") === undefined ? undefined : option("line").split(",").map(Number);
const limit = option("limit") === undefined ? Number.POSITIVE_INFINITY : Number(option("limit"));
const seeds = option("seeds") ?? "2";
const recheck = option("recheck");
const outPath = option("out") ?? join(ROOT, "reports/mutation/lua.json");
const equivalentsPath = option("equivalents") ?? join(ROOT, "scripts/lua-equivalents.json");
/** The earlier report's results by mutant (where + flip), for --recheck. */
const earlier = new Map(
  recheck === undefined
    ? []
    : JSON.parse(readFileSync(recheck, "utf8")).results.map((r) => [`${r.where} ${r.from} ${r.to}`, r]),
);

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

const HARNESS = "test/support/lua-mutant-run.ts";

/** Runs the harness on `job` (a file) in a child vitest; resolves when it exits. */
function runHarness(jobFile) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "--harness"], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "inherit"],
      // NODE_NO_WARNINGS: RedisStore warns once per module load about the default client options.
      env: { ...process.env, SLUICE_LUA_JOB: jobFile, NODE_NO_WARNINGS: "1" },
    });
    child.on("exit", () => resolve());
  });
}

if (args.includes("--harness")) {
  // The child: vitest on the harness alone (it is no *.test.ts file, so npm test never runs it).
  const { startVitest } = await import("vitest/node");
  const vitest = await startVitest("test", [HARNESS], {
    run: true,
    watch: false,
    include: [HARNESS],
    maxWorkers: 1,
    reporters: ["dot"],
  });
  await vitest?.close();
  process.exit(0);
}

/**
 * The listed equivalents matched against every mutant of the .lua files (not only those this run
 * selects): a map from mutant id (where + flip) to its entry. An entry names its mutant by file,
 * the trimmed text of its line and the flip, not by line number, so an edit elsewhere in the file
 * that moves the line leaves the entry valid: `column` picks one of a flip's sites on the line,
 * `occurrence` (1-based, top to bottom) one of the file's lines with that text; `line` is only a
 * hint for the reader. Exits 2 when an entry matches no mutant or several, or two entries match
 * one mutant. Returns also the entries whose line hint is off, for --list to show.
 */
function listedEquivalents() {
  const entries = JSON.parse(readFileSync(equivalentsPath, "utf8"));
  const files = luaFiles(SCRIPTS);
  const every = files.flatMap(mutantsOf);
  const linesOf = new Map(files.map((f) => [relative(SCRIPTS, f), readFileSync(f, "utf8").split("\n")]));
  const byId = new Map();
  const errors = [];
  const staleHints = [];
  for (const e of entries) {
    const name = `${e.file}${e.line === undefined ? "" : `:${e.line}`} "${e.text ?? ""}"${e.column === undefined ? "" : ` column ${e.column}`}${e.occurrence === undefined ? "" : ` occurrence ${e.occurrence}`} ${e.from} -> ${e.to}`;
    if (typeof e.reason !== "string" || e.reason === "") errors.push(`${name}: no reason`);
    if (typeof e.text !== "string" || e.text === "") {
      errors.push(`${name}: no text (the trimmed source line of the mutant)`);
      continue;
    }
    const lines = linesOf.get(e.file);
    if (lines === undefined) {
      errors.push(`${name}: no such file under ${relative(ROOT, SCRIPTS)}`);
      continue;
    }
    // The numbers (1-based) of the lines with that text, and the one `occurrence` picks.
    const withText = lines.flatMap((l, i) => (l.trim() === e.text ? [i + 1] : []));
    const picked = e.occurrence === undefined ? undefined : withText[e.occurrence - 1];
    if (e.occurrence !== undefined && picked === undefined) {
      errors.push(`${name}: occurrence ${e.occurrence} of ${withText.length} lines with that text`);
      continue;
    }
    const hits = every.filter(
      (m) =>
        relative(SCRIPTS, m.file) === e.file &&
        m.text === e.text &&
        m.from === e.from &&
        m.to === e.to &&
        (e.column === undefined || m.column === e.column) &&
        (picked === undefined || m.line === picked),
    );
    const onLines = new Set(hits.map((m) => m.line)).size;
    if (hits.length === 0)
      errors.push(
        `${name}: matches no mutant (${withText.length === 0 ? "no line has that text" : `the text is on line ${withText.join(", ")} without that flip${e.column === undefined ? "" : " at that column"}`}: the code changed, re-derive the entry)`,
      );
    else if (onLines > 1)
      errors.push(`${name}: the text is on ${onLines} lines with that flip (give occurrence 1..${withText.length})`);
    else if (hits.length > 1)
      errors.push(`${name}: the flip is ${hits.length} times on line ${hits[0].line} (give a column)`);
    if (hits.length !== 1) continue;
    const m = hits[0];
    if (e.line !== undefined && e.line !== m.line) staleHints.push(`${name}: line hint ${e.line}, now line ${m.line}`);
    const id = `${relative(ROOT, m.file)}:${m.line}:${m.column} ${m.from} ${m.to}`;
    if (byId.has(id)) errors.push(`${name}: listed twice`);
    byId.set(id, e);
  }
  if (errors.length > 0) {
    console.error(`mutate-lua: ${relative(ROOT, equivalentsPath)}:\n  ${errors.join("\n  ")}`);
    process.exit(2);
  }
  return { byId, staleHints };
}
const { byId: equivalents, staleHints } = listedEquivalents();

const files = luaFiles(SCRIPTS).filter(
  (f) => onlyFile === undefined || relative(SCRIPTS, f) === onlyFile || f.endsWith(`/${onlyFile}`),
);
const all = files
  .flatMap(mutantsOf)
  .filter((m) => onlyLines === undefined || onlyLines.includes(m.line))
  .filter(
    (m) =>
      recheck === undefined ||
      earlier.get(`${relative(ROOT, m.file)}:${m.line}:${m.column} ${m.from} ${m.to}`)?.killed === false,
  )
  .slice(0, limit);
if (args.includes("--list")) {
  let listed = 0;
  const out = [];
  for (const m of all) {
    const equivalent = equivalents.has(`${relative(ROOT, m.file)}:${m.line}:${m.column} ${m.from} ${m.to}`);
    if (equivalent) listed++;
    out.push(
      `${relative(ROOT, m.file)}:${m.line}:${m.column} ${m.from} -> ${m.to}   ${m.text}${equivalent ? "   [listed equivalent]" : ""}`,
    );
  }
  out.push(
    `${all.length} mutants, ${listed} listed equivalent (${equivalents.size} entries, each matching one mutant)`,
  );
  // A line hint is for the reader only: one that is off is shown, never an error.
  for (const hint of staleHints) out.push(`  note: ${hint}`);
  // Written out before exiting: process.exit right after console.log cut the ~80 kB listing
  // short when stdout is a pipe another process reads (test/redis/lua-equivalents.test.ts).
  await new Promise((resolve) => process.stdout.write(`${out.join("\n")}\n`, resolve));
  process.exit(0);
}
const started = Date.now();
const workDir = mkdtempSync(join(tmpdir(), "sluice-mutate-lua-job-"));
const jobFile = join(workDir, "job.json");
const outFile = join(workDir, "out.json");
const mutants = all.map((m, i) => {
  const lines = readFileSync(m.file, "utf8").split("\n");
  lines[m.line - 1] = m.mutated;
  return {
    ...m,
    id: String(i),
    key: relative(SCRIPTS, m.file),
    where: `${relative(ROOT, m.file)}:${m.line}:${m.column}`,
    source: lines.join("\n"),
  };
});
const done = new Map();
while (done.size < mutants.length) {
  const todo = mutants.filter((m) => !done.has(m.id));
  const redis = await startRedis();
  writeFileSync(outFile, "[]");
  writeFileSync(
    jobFile,
    JSON.stringify({
      url: `redis://127.0.0.1:${redis.port}`,
      seeds: Number(seeds),
      out: outFile,
      mutants: todo.map((m) => ({ id: m.id, file: m.key, text: m.source })),
    }),
  );
  // Progress as the harness writes it.
  let shown = 0;
  const show = () => {
    let got = [];
    try {
      got = JSON.parse(readFileSync(outFile, "utf8"));
    } catch {}
    for (const r of got.slice(shown)) {
      const m = mutants[Number(r.id)];
      done.set(r.id, r);
      console.log(
        `[${done.size}/${mutants.length}] ${r.killed ? "killed  " : "SURVIVED"} ${m.where} ${m.from} -> ${m.to}   ${m.text}${r.killed ? `  (${(r.by ?? "").slice(0, 100)})` : ""}`,
      );
    }
    shown = Math.max(shown, got.length);
  };
  const timer = setInterval(show, 2000);
  await runHarness(jobFile);
  clearInterval(timer);
  show();
  redis.child.kill("SIGKILL");
  rmSync(redis.dir, { recursive: true, force: true });
  if (shown === 0) {
    // The harness finished nothing: do not loop forever.
    console.error("mutate-lua: the harness ran no mutant (see its output above)");
    process.exit(2);
  }
}
rmSync(workDir, { recursive: true, force: true });
const rechecked = mutants.map((m) => ({
  where: m.where,
  from: m.from,
  to: m.to,
  text: m.text,
  killed: done.get(m.id).killed,
  by: done.get(m.id).by,
}));
const now = new Map(rechecked.map((r) => [`${r.where} ${r.from} ${r.to}`, r]));
const results = recheck === undefined ? rechecked : [...earlier.entries()].map(([id, r]) => now.get(id) ?? r);
const idOf = (r) => `${r.where} ${r.from} ${r.to}`;
for (const r of results) r.equivalent = equivalents.has(idOf(r));
const killed = results.filter((r) => r.killed).length;
const counted = results.filter((r) => !r.equivalent);
const countedKilled = counted.filter((r) => r.killed).length;
const unexplained = counted.filter((r) => !r.killed);
const listedSurvived = results.filter((r) => r.equivalent && !r.killed);
const listedKilled = results.filter((r) => r.equivalent && r.killed);
const percent = (n, of) => (of === 0 ? 100 : (100 * n) / of);
const score = percent(countedKilled, counted.length);
const rawScore = percent(killed, results.length);
const seconds = Math.round((Date.now() - started) / 1000);
console.log(
  `\nLua mutants: ${results.length}${recheck === undefined ? "" : ` (${rechecked.length} rechecked)`}, killed ${killed}, survived ${results.length - killed}: ${listedSurvived.length} listed equivalent, ${unexplained.length} unexplained; in ${seconds} s`,
);
console.log(`  raw score ${killed}/${results.length} = ${rawScore.toFixed(1)}%`);
console.log(
  `  score without listed equivalents ${countedKilled}/${counted.length} = ${score.toFixed(1)}% (${results.length - counted.length} listed left out)`,
);
// Per file, as docs/testing.md records it.
const perFile = new Map();
for (const r of results) {
  const file = r.where.replace(/^src\/stores\/redis\/scripts\//, "").replace(/:.*$/, "");
  const f = perFile.get(file) ?? { mutants: 0, killed: 0, equivalent: 0 };
  f.mutants++;
  if (r.killed) f.killed++;
  else if (r.equivalent) f.equivalent++;
  perFile.set(file, f);
}
console.log("| file | mutants | killed | survived, listed equivalent | survived, unexplained | raw score |");
for (const [file, f] of [...perFile].sort())
  console.log(
    `| ${file} | ${f.mutants} | ${f.killed} | ${f.equivalent} | ${f.mutants - f.killed - f.equivalent} | ${percent(f.killed, f.mutants).toFixed(1)}% |`,
  );
for (const r of listedKilled)
  console.log(
    `  WARNING listed equivalent but killed (drop it from the list): ${r.where} ${r.from} -> ${r.to}   ${r.text}`,
  );
for (const r of unexplained) console.log(`  survived, unexplained: ${r.where} ${r.from} -> ${r.to}   ${r.text}`);
mkdirSync(dirname(outPath), { recursive: true });
writeFileSync(outPath, JSON.stringify({ score, rawScore, seconds, results }, null, 2));
process.exit(unexplained.length === 0 ? 0 : 1);
