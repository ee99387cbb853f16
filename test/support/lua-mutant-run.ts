/**
 * The in-process half of the Lua mutation run (scripts/mutate-lua.mjs starts it with vitest; it
 * is not part of `npm test`). Starting vitest and importing the library costs far more than a
 * parity run on this machine, so one process runs every mutant of its job: for each, the module
 * registry is reset, the mutated file's text replaces the embedded one in the fresh
 * `LUA_SOURCES` (the .lua files on disk are never touched), and the parity edges and traces of
 * the rules that use the file run against the job's private redis-server, stopping at the
 * first difference (the mutant is killed). After each mutant the results so far are written to
 * the job's `out` file, so the parent can resume after a mutant that hung Redis.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { Redis } from "ioredis";
import { expect, test, vi } from "vitest";
import type { ParityRule } from "./redis-parity.ts";

/** One mutant: an id, the file under scripts/ (as LUA_SOURCES names it) and its mutated text. */
interface Mutant {
  id: string;
  file: string;
  text: string;
}

/** What scripts/mutate-lua.mjs hands over (the path is in SLUICE_LUA_JOB). */
interface Job {
  url: string;
  seeds: number;
  out: string;
  mutants: Mutant[];
}

/** How one mutant fared: killed (with the first failure's message) or survived. */
interface Result {
  id: string;
  killed: boolean;
  by?: string | undefined;
}

const ALGORITHM_FILES = ["fixed-window", "sliding-log", "sliding-window", "token-bucket", "gcra"];

/** The algorithms a rule's specs (and respecs) use: the seed's `sliding` is the sliding log, leaky-bucket runs on gcra. */
function algorithmsOf(rule: ParityRule): Set<string> {
  const specs = [rule.spec, ...(rule.respecs ?? []), ...(rule.bucketRespecs ?? [])].flatMap((s) =>
    Array.isArray(s) ? s : [s],
  ) as Array<{ algorithm?: string; type?: string }>;
  const out = new Set<string>();
  for (const s of specs) {
    const a =
      s.algorithm ?? (s.type === "sliding" ? "sliding-log" : s.type === "fixed" ? "fixed-window" : "token-bucket");
    out.add(a === "leaky-bucket" ? "gcra" : a);
  }
  return out;
}

/** The rules a mutant of `file` is checked with: those using its algorithm, its ban, or (shared code) all. */
function rulesFor(file: string, rules: ParityRule[]): ParityRule[] {
  const base = file.replace(/^.*\//, "").replace(/\.lua$/, "");
  if (ALGORITHM_FILES.includes(base)) return rules.filter((r) => algorithmsOf(r).has(base));
  if (base === "ban") return rules.filter((r) => r.ban !== undefined);
  return rules;
}

/** Whether `edge` can see a mutant of `file`: it loads that algorithm's code (or the file is shared). */
function edgeSees(file: string, edge: { algorithms?: string[] }): boolean {
  const base = file.replace(/^.*\//, "").replace(/\.lua$/, "");
  return edge.algorithms === undefined || !ALGORITHM_FILES.includes(base) || edge.algorithms.includes(base);
}

/** Runs `work`, failing if it takes longer than `ms` (a mutant that loops in Lua never replies). */
function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

const jobPath = process.env.SLUICE_LUA_JOB;

test("Lua mutants against the parity suite", { timeout: 24 * 3600_000 }, async () => {
  expect(jobPath, "SLUICE_LUA_JOB names the job file (run through scripts/mutate-lua.mjs)").toBeDefined();
  const job = JSON.parse(readFileSync(jobPath as string, "utf8")) as Job;
  const io = new Redis(job.url, { maxRetriesPerRequest: 1 });
  const admin = new Redis(job.url, { maxRetriesPerRequest: 1 });
  const results: Result[] = [];
  try {
    for (const m of job.mutants) {
      vi.resetModules();
      const { LUA_SOURCES } = await import("../../src/stores/redis/lua-sources.ts");
      expect(LUA_SOURCES[m.file], `${m.file} is embedded`).toBeDefined();
      (LUA_SOURCES as Record<string, string>)[m.file] = m.text;
      const { MODEL_RULES, PARITY_RULES, runParitySuite } = await import("./redis-parity.ts");
      const { PARITY_EDGES } = await import("./parity-edges.ts");
      const { LUA_EDGES } = await import("./lua-edges.ts");
      const { LUA_STEP_EDGES } = await import("./lua-step-edges.ts");
      const { RLF_TRACES, runRlfTrace } = await import("./rlf-trace.ts");
      const { runReceiptFixedWindowCase, runReceiptTraces } = await import("./receipt-trace.ts");
      const { RedisStore } = await import("sluice/redis");
      const { uniquePrefix } = await import("./redis-server.ts");
      const store = () =>
        new RedisStore({
          client: io,
          prefix: uniquePrefix("lua-mutant"),
          expiryGraceMs: 600_000,
          denyCache: false,
        });
      const run = async () => {
        // Cheapest and most often killing first (a survivor costs every step): the fixed-instant
        // edges, one penalty/block/get trace, the Lua edges, the other traces (with the parity
        // grace: the harness runs slower than the ManualClock, and expiry is the edges' business).
        for (const edge of PARITY_EDGES) if (edgeSees(m.file, edge)) await edge.run(io);
        await runReceiptFixedWindowCase(io);
        const [first, ...others] = RLF_TRACES;
        if (first !== undefined) await runRlfTrace(io, first.seed, first.base, 600_000);
        for (const edge of [...LUA_EDGES, ...LUA_STEP_EDGES]) if (edgeSees(m.file, edge)) await edge.run(io);
        for (const { seed, base } of others) await runRlfTrace(io, seed, base, 600_000);
        await runReceiptTraces(io, true);
        for (const rule of rulesFor(m.file, MODEL_RULES)) await runParitySuite(rule, store, job.seeds, true);
        for (const rule of rulesFor(m.file, PARITY_RULES)) await runParitySuite(rule, store, job.seeds);
      };
      // A mutant that loops in Lua never replies and leaves Redis answering BUSY: stop the
      // script (its call then fails: killed); one that wrote before looping cannot be stopped,
      // so Redis is shut down and the parent restarts it for the remaining mutants.
      let hung = false;
      const watchdog = setInterval(() => {
        admin.ping().catch(async (error: Error) => {
          if (!/BUSY/.test(error.message)) return;
          // Checks run as a function (FCALL) where the server has them, else as a script.
          const kill = (what: string) => admin.call(what, "KILL");
          await kill("FUNCTION")
            .catch(() => kill("SCRIPT"))
            .catch(async (refused: Error) => {
              if (!/UNKILLABLE/.test(refused.message)) return;
              hung = true;
              await admin.call("SHUTDOWN", "NOSAVE").catch(() => undefined);
            });
        });
      }, 3000);
      let result: Result;
      try {
        await within(600_000, run());
        result = { id: m.id, killed: false };
      } catch (error) {
        result = { id: m.id, killed: true, by: String((error as Error).message).split("\n")[0] };
      } finally {
        clearInterval(watchdog);
      }
      results.push(result);
      writeFileSync(job.out, JSON.stringify(results));
      if (hung) return;
      try {
        await admin.call("SCRIPT", "FLUSH");
        await admin.call("FUNCTION", "FLUSH");
        await admin.flushdb();
      } catch {
        // Still busy (a killed script not yet gone): end here, the parent restarts Redis.
        return;
      }
    }
  } finally {
    io.disconnect();
    admin.disconnect();
  }
});
