/**
 * Seeded random traces of lease operations replayed against a real store and the independent
 * model of lease-oracle.ts. Every store runs the same driver (awaiting each answer, so async
 * stores run it too). `exact` traces (a clock that never steps back, an uncapped store) compare
 * every answer with the model; the others check safety only: an admission never takes a key
 * past `limit` in flight.
 */
import { type Decision, ManualClock, RateLimiterService, type Store } from "sluice";
import { mulberry32 } from "../../src/core/seeded-random.ts";
import { LeaseModel, type ModelLease } from "./lease-oracle.ts";

/** How a trace is run. */
export interface TraceOptions {
  seed: number;
  /** A fresh store (called again for a restart when `restart` is given). */
  store: () => Store;
  /** Compare every answer with the model (monotone clock, uncapped store). */
  exact: boolean;
  /** Small steps back of the clock (safety only). */
  stepBack?: boolean;
  /** Floods of other keys between steps (a capped store pushing keys out). */
  flood?: boolean;
  /** Snapshot the store and restore it into a new one mid-trace (MemoryStore). */
  restart?: (old: Store, now: number) => Store;
  /** Decisions' handles used after updateRule (ClusterStore loses them: see test/redis/lease-update.test.ts). */
  handlesAcrossUpdate?: boolean;
  /** updateRule may lower the limit (a held lease past the new limit: see lease-known.test.ts). */
  limitDown?: boolean;
  /** updateRule with a new leaseMs (leases in flight keep counting: see lease-known.test.ts). */
  leaseMsChange?: boolean;
  steps?: number;
  start?: number;
}

/** What a trace found. */
export interface TraceResult {
  violations: string[];
  counts: Record<string, number>;
}

interface Held {
  model: ModelLease;
  decision: Decision | undefined;
  /** The handle may be used (same store, same rule binding, receipt still the handle's). */
  handle: boolean;
  releasedByHandle: boolean;
}

const free = (d: Decision): number => (d.allowed ? d.remaining + 1 : 0);

/** Runs one seeded trace; returns its violations (strings naming the step) and what it exercised. */
export async function runLeaseTrace(o: TraceOptions): Promise<TraceResult> {
  const rnd = mulberry32(o.seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const start = o.start ?? pick([0, 1_765_000_000_000, 1_800_000_123_457]);
  const clock = new ManualClock(start);
  const limit = int(1, 5);
  const leaseMs = pick([1, 5, 100, 1000, 60_000, 3 * 365 * 86_400_000]);
  const composite = rnd() < 0.35;
  const rate = composite ? { limit: int(2, 8), windowMs: pick([50, 500, 3000]) } : undefined;
  const model = new LeaseModel(limit, leaseMs, rate);
  const specOf = () => {
    const c = { algorithm: "concurrency" as const, limit: model.limit, leaseMs: model.leaseMs };
    return rate === undefined ? c : [c, { algorithm: "sliding-log" as const, ...rate }];
  };
  let store = o.store();
  let service = new RateLimiterService({ clock, store }).addRule("r", specOf());
  const keys = ["a", "b", "c"].slice(0, int(1, 3));
  const held: Held[] = [];
  const violations: string[] = [];
  const counts: Record<string, number> = {};
  const hit = (label: string) => {
    counts[label] = (counts[label] ?? 0) + 1;
  };
  const log: string[] = [];
  const fail = (what: string) => {
    // LEASE_TRACE_FULL=1 prints the whole trace (to minimise it by hand).
    const tail = process.env.LEASE_TRACE_FULL === "1" ? log : log.slice(-25);
    violations.push(`seed ${o.seed} step ${log.length}: ${what}\n  trace: ${tail.join("; ")}`);
  };
  model.see(clock.now());
  const steps = o.steps ?? 120;
  for (let step = 0; step < steps && violations.length === 0; step++) {
    const r = rnd();
    const key = pick(keys);
    const now = clock.now();
    if (r < 0.3) {
      const cost = int(1, 3);
      model.see(now);
      const expected = model.fits(key, cost);
      const before = model.held(key);
      const requests = model.requests(key);
      const exact = o.exact && !model.penalised(key);
      const d = (await service.check("r", key, { cost })) as Decision;
      log.push(`t+${now - start} acquire ${key} cost ${cost} -> ${d.allowed} (model held ${before}/${model.limit})`);
      hit(d.allowed ? "acquire allowed" : "acquire denied");
      if (d.allowed && requests + cost > model.limit) {
        fail(`admitted cost ${cost} with ${requests} of ${model.limit} in flight`);
      }
      if (exact && d.allowed !== expected) fail(`acquire: store ${d.allowed}, model ${expected}`);
      if (exact && d.allowed && rate === undefined && d.remaining !== model.limit - before - cost) {
        fail(`acquire remaining ${d.remaining}, model ${model.limit - before - cost}`);
      }
      if (d.allowed) {
        if (typeof d.release !== "function" || typeof d.renew !== "function" || d.at === undefined) {
          fail("an allowed decision without release()/renew()/at");
        } else {
          held.push({ model: model.acquire(key, cost, d.at), decision: d, handle: true, releasedByHandle: false });
        }
      } else if (d.release !== undefined) {
        fail("a denied decision carries release()");
      }
    } else if (r < 0.45 && held.length > 0) {
      // Release one's own lease: through its handle, or through the service with its receipt.
      const h = pick(held);
      model.see(now);
      const wasHeld = model.holds(h.model);
      const useHandle = h.handle && h.decision !== undefined && rnd() < 0.7;
      // A receipt of a lease gone (reset) that another lease now shares names that one: by design
      // (key, receipt) names a lease, so that is not asked.
      if (!wasHeld && !h.releasedByHandle && model.sharesReceipt(h.model.key, h.model.receipt)) {
        hit("release skipped (receipt names another lease)");
        continue;
      }
      if (!useHandle && h.releasedByHandle) continue;
      const d = (await (useHandle
        ? (h.decision as Decision).release?.()
        : service.release("r", h.model.key, { cost: h.model.cost, at: h.model.receipt }))) as Decision;
      // A handle's later calls return its first call's answer (documented): only a first release is compared.
      const first = !h.releasedByHandle;
      if (useHandle) h.releasedByHandle = true;
      else h.handle = false;
      h.model.gone = true;
      log.push(
        `t+${now - start} release ${h.model.key}#${h.model.id} (cost ${h.model.cost}, at t+${h.model.receipt - start}, ${wasHeld ? "held" : "not held"}) by ${useHandle ? "handle" : "service"}`,
      );
      hit(wasHeld ? "release held" : first ? "release stale" : "double release");
      if (o.exact && first && rate === undefined && !model.blocked(h.model.key) && !model.penalised(h.model.key)) {
        const want = Math.max(0, model.limit - model.held(h.model.key));
        if (free(d) !== want) fail(`after release: ${free(d)} free slots, model ${want}`);
      }
    } else if (r < 0.5 && held.some((h) => h.releasedByHandle)) {
      // A second release through the handle: idempotent, frees nothing more.
      const h = pick(held.filter((x) => x.releasedByHandle));
      await (h.decision as Decision).release?.();
      log.push(`t+${now - start} release again ${h.model.key}#${h.model.id}`);
      hit("double release");
    } else if (r < 0.53) {
      // A stale receipt: one that names no lease that still counts.
      const at = now - int(0, 2 * model.leaseMs + 10);
      if (model.sharesReceipt(key, at)) continue;
      await service.release("r", key, { cost: int(1, 3), at });
      log.push(`t+${now - start} release ${key} stale at t+${at - start}`);
      hit("release stale receipt");
    } else if (r < 0.63 && held.length > 0) {
      const h = pick(held);
      model.see(now);
      const wasHeld = model.holds(h.model);
      const blocked = model.blocked(h.model.key);
      const useHandle = h.handle && h.decision !== undefined && (h.releasedByHandle || rnd() < 0.7);
      if (!useHandle && !wasHeld) {
        hit("renew skipped (not held, no handle)");
        continue;
      }
      if (!wasHeld && !h.releasedByHandle && model.sharesReceipt(h.model.key, h.model.receipt)) continue;
      const d = (await (useHandle
        ? (h.decision as Decision).renew?.()
        : service.renew("r", h.model.key, { cost: h.model.cost, at: h.model.receipt }))) as Decision;
      const expected = wasHeld && !blocked;
      log.push(
        `t+${now - start} renew ${h.model.key}#${h.model.id} (at t+${h.model.receipt - start}, ${wasHeld ? "held" : "not held"}${blocked ? ", blocked" : ""}) by ${useHandle ? "handle" : "service"} -> ${d.allowed}`,
      );
      hit(wasHeld ? "renew held" : "renew not held");
      // (With steps back the store reads time per key, the model for the whole trace: a lease the
      // model calls expired may still count for its key, so this is compared on exact traces only.)
      if (o.exact && d.allowed && !wasHeld) fail("renewed a lease no longer held");
      if (o.exact && !model.penalised(h.model.key) && d.allowed !== expected)
        fail(`renew: store ${d.allowed}, model ${expected}`);
      if (d.allowed) {
        if (d.at === undefined) fail("an allowed renewal without `at`");
        else h.model.receipt = d.at;
        if (!useHandle) h.handle = false;
      }
    } else if (r < 0.8) {
      const far = rnd() < 0.2;
      const ms = far ? int(0, Math.min(2 * model.leaseMs, 10_000_000)) : int(0, 30);
      clock.advance(ms);
      log.push(`advance ${ms}`);
      hit("advance");
    } else if (r < 0.84 && o.stepBack) {
      const ms = int(1, 5);
      clock.set(now - ms);
      log.push(`step back ${ms}`);
      hit("step back");
    } else if (r < 0.86) {
      await service.reset("r", key);
      model.reset(key);
      log.push(`t+${now - start} reset ${key}`);
      hit("reset");
    } else if (r < 0.9) {
      const change = o.leaseMsChange === true && rnd() < 0.3;
      if (change) model.changeLeaseMs(pick([100, 1000, 60_000]), now);
      else model.limit = o.limitDown === true ? int(1, 6) : int(model.limit, 6);
      service.updateRule("r", specOf());
      if (o.handlesAcrossUpdate === false) for (const h of held) h.handle = false;
      log.push(`updateRule limit ${model.limit} leaseMs ${model.leaseMs}`);
      hit(change ? "update leaseMs" : "update limit");
    } else if (r < 0.92) {
      const cost = int(1, 2);
      model.see(now);
      await service.penalty("r", key, { cost });
      model.penalty(key, cost);
      log.push(`t+${now - start} penalty ${key} ${cost}`);
      hit("penalty");
    } else if (r < 0.94) {
      const ms = int(1, 200);
      model.see(now);
      await service.block("r", key, ms);
      model.blockedUntil.set(key, model.hw + ms);
      log.push(`t+${now - start} block ${key} ${ms}`);
      hit("block");
    } else if (r < 0.96 && o.restart !== undefined) {
      store = o.restart(store, now);
      service = new RateLimiterService({ clock, store }).addRule("r", specOf());
      for (const h of held) h.handle = false;
      log.push(`t+${now - start} restart (snapshot, restore)`);
      hit("restart");
    } else if (r < 0.99 && o.flood) {
      const n = int(50, 300);
      for (let i = 0; i < n; i++) {
        const d = (await service.check("r", `flood-${step}-${i}`)) as Decision;
        if (rnd() < 0.5) await d.release?.();
      }
      log.push(`flood ${n}`);
      hit("flood");
    } else {
      continue;
    }
    // After every step: an exact trace agrees with the model on every key's free slots.
    if (o.exact && rate === undefined) {
      model.see(clock.now());
      for (const k of keys) {
        if (model.blocked(k) || model.penalised(k)) continue;
        const got = free((await service.peek("r", k)) as Decision);
        const want = Math.max(0, model.limit - model.held(k));
        if (got !== want) {
          fail(`peek ${k}: ${got} free slots, model ${want}`);
          break;
        }
        hit("peek compared");
      }
    }
  }
  return { violations, counts };
}
