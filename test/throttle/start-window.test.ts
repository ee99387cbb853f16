// The rate holds on the tasks' own starts across a fixed window's edge (issue 32), from outside:
// 2 real processes (test/throttle/start-window-child.mjs, the built package) on real Redis share
// one throttle, `fixed-window` 4 per 200 ms, on 5 keys. Each window of a key grants 2 jobs of each
// process, the stalling one's by a PUBLISH; that process blocks its event loop now and then for
// longer than a window (synchronous work), so grants published to it while it is blocked are heard
// a window or more after the store decided them. Counted by the tasks' own `Date.now()` (the one
// clock the processes and Redis share), in the windows as the store aligns them, no window of a
// key holds more than 4 starts: a task that would start in another window than its unit moves
// its unit there first. Before, such a grant was late only from when the process heard it (not
// late at all) and its tasks started in a later window beside that window's own 4. Seeded: START_WINDOW_SEED (printed).
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../cli/helpers.ts";
import { standaloneRedis, uniquePrefix } from "../support/redis-server.ts";
import { type ReadyChild, readyChild } from "./ready-child.ts";

const redis = await standaloneRedis("throttle start windows");
const CHILD = fileURLToPath(new URL("./start-window-child.mjs", import.meta.url));
const SEED = Number(process.env.START_WINDOW_SEED ?? 3201);
const LIMIT = 4;
const WINDOW_MS = 200;
const KEYS = 5;

function child(args: string[]): Promise<ReadyChild> {
  return readyChild(CHILD, args, { stderr: "ignore" });
}

/** One run of the two processes (seed `seed`): their outputs. */
async function run(seed: number): Promise<string[]> {
  const prefix = uniquePrefix("start-window");
  const options = { rate: { algorithm: "fixed-window", limit: LIMIT, windowMs: WINDOW_MS }, concurrency: 8 };
  const [steady, stalling] = await Promise.all(
    [0, WINDOW_MS + 40].map((stall, i) =>
      child([redis?.url ?? "", prefix, JSON.stringify(options), String(KEYS), String(seed + i), String(stall)]),
    ),
  );
  // The stalling process first: its own reply grants it the first window (priorities 0 and 1),
  // and from then on the steady one's tickets lead by two priorities, so each window's head is
  // the steady process's and the stalling one's 2 grants of the window are published to it.
  stalling?.proc.stdin?.end("go\n");
  await new Promise((resolve) => setTimeout(resolve, 150));
  steady?.proc.stdin?.end("go\n");
  return Promise.all([steady, stalling].map((c) => c?.output ?? ""));
}

describe.skipIf(redis === undefined)("a fixed window's starts, by the tasks' own clock, on a Redis fleet", () => {
  beforeAll(() => ensureBuilt());

  it("no window holds more than the limit, with a member whose event loop stalls past a window", {
    timeout: 60_000,
  }, async () => {
    console.log(`start-window seed ${SEED}`);
    // Three runs (seeds SEED, SEED + 10, SEED + 20): one run alone met the old code's late
    // starts with a full window in 2 to 4 runs of 5.
    for (const seed of [SEED, SEED + 10, SEED + 20]) {
      const outputs = await run(seed);
      const perWindow = new Map<string, number>();
      const failed: string[] = [];
      let starts = 0;
      for (const out of outputs) {
        for (const line of out.split("\n")) {
          const [kind, key, , at] = line.split(" ");
          if (kind === "S") {
            starts++;
            const w = `${key} ${Math.floor(Number(at) / WINDOW_MS) * WINDOW_MS}`;
            perWindow.set(w, (perWindow.get(w) ?? 0) + 1);
          } else if (kind === "D") failed.push(...JSON.parse(line.slice(2)).failed);
        }
      }
      expect(failed).toEqual([]);
      expect(starts).toBe(2 * KEYS * 20);
      const over = [...perWindow].filter(([, n]) => n > LIMIT).map(([w, n]) => `${w}: ${n}`);
      if (over.length > 0 && process.env.START_WINDOW_TRACE) console.log(outputs.join("\n=====\n"));
      expect(over, `seed ${seed}`).toEqual([]);
    }
  });
});
