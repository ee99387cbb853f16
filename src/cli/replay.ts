/** `sluice replay`: events in (file or stdin), one decision per line out. */
import type { Readable, Writable } from "node:stream";
import { createLimiter, type Decision, ManualClock } from "../index.ts";
import { parseFlags } from "./args.ts";
import { openInput, readEvents, type TraceEvent } from "./events.ts";
import { printable, toJson, write } from "./io.ts";
import { specFromFlags } from "./spec-source.ts";

/** Help text of `sluice replay`. */
export const REPLAY_HELP = `Usage: sluice replay [FILE] (--spec SPEC | --rule NAME --config FILE [--tier T]) [--json]

Decides every event of a trace, in order, as a live limiter would at each event's time.
Reads FILE, or stdin when FILE is absent or "-". One event per line:
  CSV         timestamp[,key[,cost]]          e.g. 1000,alice,2
  JSON lines  {"at": 1000, "key": "alice", "cost": 2}
Timestamps are ms (or ISO 8601 dates); key defaults to "default", cost to 1.
Blank lines, # comments and a CSV header line are skipped.

Options:
  --spec SPEC      the rule as JSON or YAML, e.g. '{"type":"sliding","limit":2,"windowMs":1000}'
                   (durations like "1s" and rates like "100/min" are accepted)
  --rule NAME      a rule from --config FILE (with --tier T for one of its tiers)
  --json           JSON lines: the event and its Decision (Infinity written as null)
  --quiet          no summary on stderr
  -h, --help       this help

Output (one line per event, tab-separated):
  <at>  <key>  allowed|denied  remaining=<n>  retryAfterMs=<ms|never>  [delayMs=<ms>]
Keys are printed with backslashes doubled and control characters escaped (\t, \n, \u001b).

Example (the seed's two pings per second):
  printf '0\\n300\\n600\\n999\\n1000\\n1300\\n1999\\n2000\\n' |
    sluice replay --spec '{"type":"sliding","limit":2,"windowMs":1000}'
`;

function textLine(event: TraceEvent, d: Decision): string {
  const retry = Number.isFinite(d.retryAfterMs) ? String(d.retryAfterMs) : "never";
  const delay = d.delayMs > 0 ? `\tdelayMs=${d.delayMs}` : "";
  return `${event.at}\t${printable(event.key)}\t${d.allowed ? "allowed" : "denied"}\tremaining=${d.remaining}\tretryAfterMs=${retry}${delay}\n`;
}

/** Runs `sluice replay`; returns the exit status. */
export async function replayCommand(
  argv: string[],
  io: { stdin: Readable; stdout: Writable; stderr: Writable },
): Promise<number> {
  const parsed = parseFlags(
    argv,
    {
      spec: { type: "string" },
      rule: { type: "string" },
      config: { type: "string" },
      tier: { type: "string" },
      json: { type: "boolean" },
      quiet: { type: "boolean" },
    },
    1,
  );
  if (parsed.values.help) {
    io.stdout.write(REPLAY_HELP);
    return 0;
  }
  const spec = await specFromFlags(parsed);
  const { stream, name } = await openInput(parsed.positionals[0], io.stdin);
  // A streaming twin of the core `replay`: same limiter, same manual clock per event, but the
  // trace never has to fit in memory.
  const clock = new ManualClock();
  const limiter = createLimiter(spec, { clock });
  let allowed = 0;
  let denied = 0;
  for await (const event of readEvents(stream, name)) {
    clock.set(event.at);
    const d = limiter.tryAcquire(event.key, event.cost);
    if (d.allowed) allowed++;
    else denied++;
    const line = parsed.values.json
      ? `${toJson({ at: event.at, key: event.key, cost: event.cost, ...d })}\n`
      : textLine(event, d);
    if (!(await write(io.stdout, line))) break; // the reader has gone (e.g. `| head`)
  }
  if (!parsed.values.quiet) {
    const events = allowed + denied;
    io.stderr.write(`replay: ${events} event${events === 1 ? "" : "s"}, ${allowed} allowed, ${denied} denied\n`);
  }
  return 0;
}
