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
import { ZoomCapture } from "./zoom.ts";

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

/** Most events `--generate` may make: compare decides each six times (and probes denials). */
export const MAX_GENERATED_EVENTS = 10_000_000;

/** Most chart columns; past it the columns double in width (about 120–240 are drawn). */
const MAX_COLUMNS = 240;

/** Largest nominal limit (`--limit`). */
const MAX_LIMIT = 1_000_000_000;

/** One event of the trace being compared. */
interface CompareEvent {
  at: number;
  key: string;
  cost: number;
}

/** A trace, read (or generated) one event at a time: never held whole in memory. */
interface Trace {
  events: AsyncIterable<CompareEvent> | Iterable<CompareEvent>;
  title: string;
}

/** About how many events a generated trace has (its mean; the bound is checked before any is made). */
export function expectedEvents(kind: TraceKind, durationMs: number, rate: number, limit: number, windowMs: number) {
  if (kind === "boundary") return 2 * limit * Math.ceil(Math.max(0, durationMs - windowMs) / (2 * windowMs));
  if (kind === "bursty")
    return (rate * Math.min(durationMs, Math.ceil(durationMs / (5 * windowMs)) * windowMs) * 5) / 1000;
  return (rate * durationMs) / 1000;
}

function* generated(times: Iterable<number>): Generator<CompareEvent> {
  for (const at of times) yield { at, key: "default", cost: 1 };
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
    if (durationMs === undefined || durationMs <= 0 || !Number.isFinite(durationMs))
      throw new UsageError(`--duration must be a duration like 60s or 5m (got ${JSON.stringify(durationText)})`);
    const rateText = str(parsed, "rate");
    const rate = rateText === undefined ? (1.5 * limit * 1000) / windowMs : parseRate(rateText);
    if (rate === undefined || rate <= 0 || !Number.isFinite(rate))
      throw new UsageError(`--rate must be a rate like 15/s or 900/min (got ${JSON.stringify(rateText)})`);
    const expected = expectedEvents(kind as TraceKind, durationMs, rate, limit, windowMs);
    if (!(expected <= MAX_GENERATED_EVENTS)) {
      throw new UsageError(
        `--generate ${kind} would make about ${Math.round(expected).toLocaleString("en-US")} events, more than ${MAX_GENERATED_EVENTS.toLocaleString("en-US")}: lower ${kind === "boundary" ? "--limit or --duration" : "--rate, --limit or --duration"}`,
      );
    }
    return {
      events: generated(generateTrace({ kind: kind as TraceKind, seed, durationMs, rate, limit, windowMs })),
      title: `--generate ${kind} --seed ${seed} --duration ${durationText}${kind === "boundary" ? "" : ` --rate ${rateText ?? `${rate}/s`}`}`,
    };
  }
  if (file === undefined) throw new UsageError("give a trace FILE (or - for stdin), or --generate KIND");
  const { stream, name } = await openInput(file, stdin);
  return { events: readEvents(stream, name), title: name };
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
  if (limit > MAX_LIMIT) {
    throw new UsageError(`--limit must be at most ${MAX_LIMIT.toLocaleString("en-US")} (got ${str(parsed, "limit")})`);
  }
  const windowText = str(parsed, "window") ?? "1s";
  const windowMs = parseDuration(windowText);
  if (windowMs === undefined || !Number.isSafeInteger(windowMs) || windowMs < 1) {
    throw new UsageError(
      `--window must be a whole number of ms written like 1s, 500ms, 1m (got ${JSON.stringify(windowText)})`,
    );
  }
  const trace = await loadTrace(parsed, limit, windowMs, io.stdin);
  const runs = nominalSpecs(limit, windowMs).map((spec) => new AlgorithmRun(spec, windowMs));
  const progress = io.stderr === process.stderr && process.stderr.isTTY;
  // Chart columns start 1 ms wide at the first event and double (merging pairs) whenever the
  // trace outgrows MAX_COLUMNS: the span need not be known before the trace is read.
  let start: number | undefined;
  let bucketMs = 1;
  let n = 0;
  // The report's zoomed chart follows fixed-window's peak as it rises: its busiest rolling
  // window always spans a window boundary (within one window it cannot pass the limit).
  const zoom = str(parsed, "html") === undefined ? undefined : new ZoomCapture(windowMs, runs.length);
  const fixed = runs.find((run) => run.spec.algorithm === "fixed-window") as AlgorithmRun;
  let highest = 0;
  for await (const { at, key, cost } of trace.events) {
    start ??= at;
    let bucket = Math.max(0, Math.floor((at - start) / bucketMs));
    while (bucket >= MAX_COLUMNS) {
      bucketMs *= 2;
      for (const run of runs) run.halveSeries();
      bucket = Math.max(0, Math.floor((at - start) / bucketMs));
    }
    if (zoom === undefined) for (const run of runs) run.feed(at, key, cost, bucket);
    else {
      let admitted = 0;
      for (let i = 0; i < runs.length; i++)
        if ((runs[i] as AlgorithmRun).feed(at, key, cost, bucket)) admitted |= 1 << i;
      zoom.record(at, key, cost, admitted);
      if (fixed.peak > highest) {
        highest = fixed.peak;
        const peak = fixed.peakAt as { at: number; key: string };
        zoom.centre(peak.at, peak.key);
      }
    }
    n++;
    if (progress && n % 100_000 === 0) io.stderr.write(`\rcompare: ${n.toLocaleString("en-US")} events`);
  }
  if (progress && n >= 100_000) io.stderr.write("\r\x1b[K");
  if (n === 0) throw new InputError(`${trace.title}: the trace has no events`);
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
      const input = { title: trace.title, results, limit, windowMs, bucketMs, events: n, origin: start as number };
      const captured = zoom?.result();
      await writeFile(html, renderReport(captured === undefined ? input : { ...input, zoom: captured }));
    } catch (error) {
      throw new InputError(`cannot write ${JSON.stringify(html)} (${(error as NodeJS.ErrnoException).code ?? error})`);
    }
    io.stderr.write(`compare: wrote ${html}\n`);
  }
  return 0;
}
