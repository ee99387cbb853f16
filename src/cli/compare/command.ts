/** `sluice compare`: one trace through all six algorithms at the same nominal limit. */
import { writeFile } from "node:fs/promises";
import type { Readable, Writable } from "node:stream";
import { parseDuration, parseRate } from "../../config/units.ts";
import { InputError, num, type Parsed, parseFlags, str, UsageError } from "../args.ts";
import { openInput, readEvents } from "../events.ts";
import { AlgorithmRun } from "./measure.ts";
import { nominalSpecs } from "./nominal.ts";
import { renderReport } from "./report.ts";
import { formatTable } from "./table.ts";
import { generateTrace, TRACE_KINDS, type TraceKind } from "./traces.ts";

/** Help text of `sluice compare`. */
export const COMPARE_HELP = `Usage: sluice compare [FILE | --generate KIND] [--limit N] [--window DURATION] [--html OUT]

Runs one trace through all six algorithms at the same nominal limit ("N per window") and
prints a table per algorithm. The trace is FILE (or stdin with "-"; the same CSV / JSON lines
as \`sluice replay\`), or a generated one.

Options:
  --limit N            nominal limit (default 10)
  --window DURATION    nominal window, e.g. 1s, 500ms, 1m (default 1s)
  --generate KIND      ${TRACE_KINDS.join(" | ")}
  --seed N             generator seed (default 1)
  --duration DURATION  generated trace length (default 60s)
  --rate RATE          generated mean rate, e.g. 15/s or 900/min (default 1.5 × the limit)
  --html FILE          also write a self-contained HTML report with charts
  --json               print the results as JSON instead of the table
  -h, --help           this help

Each algorithm gets the nominal limit N per window W as:
  fixed-window, sliding-log, sliding-window   limit N, windowMs W
  token-bucket                                capacity N, refillPerSecond N/W
  gcra                                        limit N, periodMs W, burst N
  leaky-bucket                                capacity N, leakPerSecond N/W

Example:
  sluice compare --generate boundary --limit 10 --window 1s --html report.html
`;

interface Trace {
  at: Float64Array;
  cost: Uint32Array;
  keys: string[];
  title: string;
}

async function loadTrace(parsed: Parsed, limit: number, windowMs: number, stdin: Readable): Promise<Trace> {
  const kind = str(parsed, "generate");
  const file = parsed.positionals[0];
  if (kind !== undefined) {
    if (file !== undefined) throw new UsageError("give either a trace FILE or --generate, not both");
    if (!(TRACE_KINDS as readonly string[]).includes(kind)) {
      throw new UsageError(`--generate must be one of ${TRACE_KINDS.join(", ")} (got ${JSON.stringify(kind)})`);
    }
    const seed = num(parsed, "seed", 1);
    const durationText = str(parsed, "duration") ?? "60s";
    const durationMs = parseDuration(durationText);
    if (durationMs === undefined || durationMs <= 0)
      throw new UsageError(`--duration must be a duration like 60s or 5m (got ${JSON.stringify(durationText)})`);
    const rateText = str(parsed, "rate");
    const rate = rateText === undefined ? (1.5 * limit * 1000) / windowMs : parseRate(rateText);
    if (rate === undefined || rate <= 0)
      throw new UsageError(`--rate must be a rate like 15/s or 900/min (got ${JSON.stringify(rateText)})`);
    const times = [...generateTrace({ kind: kind as TraceKind, seed, durationMs, rate, limit, windowMs })];
    return {
      at: Float64Array.from(times),
      cost: new Uint32Array(times.length).fill(1),
      keys: [],
      title: `--generate ${kind} --seed ${seed} --duration ${durationText}${kind === "boundary" ? "" : ` --rate ${rateText ?? `${rate}/s`}`}`,
    };
  }
  if (file === undefined) throw new UsageError("give a trace FILE (or - for stdin), or --generate KIND");
  const { stream, name } = await openInput(file, stdin);
  const at: number[] = [];
  const cost: number[] = [];
  const keys: string[] = [];
  for await (const event of readEvents(stream, name)) {
    at.push(event.at);
    cost.push(event.cost);
    keys.push(event.key);
  }
  if (at.length === 0) throw new InputError(`${name}: the trace has no events`);
  return { at: Float64Array.from(at), cost: Uint32Array.from(cost), keys, title: name };
}

/** Runs `sluice compare`; returns the exit status. */
export async function compareCommand(
  argv: string[],
  io: { stdin: Readable; stdout: Writable; stderr: Writable },
): Promise<number> {
  const parsed = parseFlags(
    argv,
    {
      limit: { type: "string" },
      window: { type: "string" },
      generate: { type: "string" },
      seed: { type: "string" },
      duration: { type: "string" },
      rate: { type: "string" },
      html: { type: "string" },
      json: { type: "boolean" },
    },
    1,
  );
  if (parsed.values.help) {
    io.stdout.write(COMPARE_HELP);
    return 0;
  }
  const limit = num(parsed, "limit", 10);
  const windowText = str(parsed, "window") ?? "1s";
  const windowMs = parseDuration(windowText);
  if (windowMs === undefined || !Number.isSafeInteger(windowMs) || windowMs < 1) {
    throw new UsageError(
      `--window must be a whole number of ms written like 1s, 500ms, 1m (got ${JSON.stringify(windowText)})`,
    );
  }
  const trace = await loadTrace(parsed, limit, windowMs, io.stdin);
  const n = trace.at.length;
  let start = Number.POSITIVE_INFINITY;
  let end = Number.NEGATIVE_INFINITY;
  for (const t of trace.at) {
    if (t < start) start = t;
    if (t > end) end = t;
  }
  if (n === 0) start = end = 0;
  // About 120 columns per chart, never narrower than 1 ms.
  const bucketMs = Math.max(1, Math.ceil((end - start + 1) / 120));
  const runs = nominalSpecs(limit, windowMs).map((spec) => new AlgorithmRun(spec, windowMs, bucketMs));
  const progress = io.stderr === process.stderr && process.stderr.isTTY && n >= 200_000;
  const step = Math.max(1, Math.floor(n / 100));
  for (let i = 0; i < n; i++) {
    const at = trace.at[i] as number;
    const key = trace.keys[i] ?? "default";
    const cost = trace.cost[i] as number;
    for (const run of runs) run.feed(at, key, cost, at - start);
    if (progress && i % step === 0) io.stderr.write(`\rcompare: ${Math.floor((100 * i) / n)}% of ${n} events`);
  }
  if (progress) io.stderr.write("\r\x1b[K");
  const results = runs.map((r) => r.result());
  if (parsed.values.json) {
    const out = results.map(({ series: _series, ...rest }) => rest);
    io.stdout.write(`${JSON.stringify({ events: n, limit, windowMs, results: out }, null, 2)}\n`);
  } else {
    io.stdout.write(formatTable(results, limit, windowMs, n));
  }
  const html = str(parsed, "html");
  if (html !== undefined) {
    try {
      await writeFile(html, renderReport({ title: trace.title, results, limit, windowMs, bucketMs, events: n }));
    } catch (error) {
      throw new InputError(`cannot write ${JSON.stringify(html)} (${(error as NodeJS.ErrnoException).code ?? error})`);
    }
    io.stderr.write(`compare: wrote ${html}\n`);
  }
  return 0;
}
