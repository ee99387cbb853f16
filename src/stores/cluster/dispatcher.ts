/**
 * The deciding side of `sluice/cluster`, shared by both transports (the node:cluster primary
 * over IPC, and the socket host): one MemoryStore, and the bindings each client registered.
 * `handle` decides a batch synchronously, in arrival order, so the limit holds exactly across
 * clients. One binding per rule definition is shared by every client that registers it.
 */
import { leaseMsOf } from "../../algorithms/concurrency.ts";
import type { Decision } from "../../algorithms/decision.ts";
import type { ConcurrencySpec } from "../../algorithms/specs.ts";
import { validateBan } from "../../core/ban.ts";
import type { Clock } from "../../core/clock.ts";
import { isFreshAnswer } from "../../core/decide-rule.ts";
import { describeValue } from "../../core/describe-value.ts";
import { compileRule } from "../../core/rule.ts";
import { validateSpec } from "../../core/spec.ts";
import type { BoundRule } from "../../core/store.ts";
import type { MemoryStore } from "../memory/memory-store.ts";
import { type BatchMessage, type BindRecord, CHANNEL, encode, type OpResult, type ReplyMessage } from "./protocol.ts";

/** Decides the batches of many clients (workers, socket connections) on one MemoryStore. */
export interface Dispatcher {
  /** Applies `client`'s batch; the reply to send back, or undefined when it carried no operations. */
  handle(client: number, message: BatchMessage): ReplyMessage | undefined;
  /** `client` is gone: drops its references (state stays, see `createDispatcher`). */
  disconnect(client: number): void;
  /** Forgets every client and releases every binding. */
  stop(): void;
}

/** A rule definition bound in the store, and how many client bindings use it. */
interface Shared {
  readonly key: string;
  readonly bound: BoundRule;
  /** The longest `leaseMs` of its concurrency members (0: it takes no leases). */
  readonly leaseMs: number;
  refs: number;
}

/**
 * How long, in ms, a new socket host still holds back new leases of a rule whose leases last
 * `leaseMs` (0: grant them): until every process that held leases at the old host has
 * re-registered them, at most `leaseMs` (socket-link.ts, "settling").
 */
export type LeaseGate = (leaseMs: number) => number;

/**
 * A dispatcher over `store`. State outlives clients: a client that goes away (or crashes and
 * comes back) drops its references but not the binding, so the limit goes on where it was;
 * only explicit releases (a limiter's `close()` in every client) let the MemoryStore drop it.
 */
export function createDispatcher(store: MemoryStore, gate: LeaseGate = () => 0): Dispatcher {
  const shared = new Map<string, Shared>();
  const clients = new Map<number, Map<number, Shared | string>>();
  /** One clock identity per rule id for injected time, so sweeps never compare it with the store's. */
  const clocks = new Map<string, Clock>();

  const bind = (record: BindRecord): Shared | string => {
    try {
      if (typeof record.id !== "string" || !Array.isArray(record.specs) || record.specs.length === 0) {
        return `malformed rule registration (got ${describeValue(record)})`;
      }
      const key = JSON.stringify([record.id, record.specs, record.ban ?? null, record.clock === true]);
      const existing = shared.get(key);
      if (existing !== undefined) {
        existing.refs++;
        return existing;
      }
      const rule = compileRule(
        record.specs.map((spec) => validateSpec(spec)),
        validateBan(record.ban ?? undefined),
      );
      let clock: Clock | undefined;
      if (record.clock) {
        clock = clocks.get(record.id);
        if (clock === undefined) clocks.set(record.id, (clock = { now: () => Number.NaN }));
      }
      let leaseMs = 0;
      for (const spec of rule.members.map((m) => m.spec)) {
        if (spec.algorithm === "concurrency") leaseMs = Math.max(leaseMs, leaseMsOf(spec as ConcurrencySpec));
      }
      const entry: Shared = { key, bound: store.bind({ id: record.id, rule, clock }), leaseMs, refs: 1 };
      shared.set(key, entry);
      return entry;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  };

  /** Drops one client's reference; `release` (an explicit release) lets the last one free the state. */
  const drop = (entry: Shared, release: boolean) => {
    entry.refs--;
    if (release && entry.refs <= 0 && shared.get(entry.key) === entry) {
      shared.delete(entry.key);
      entry.bound.release();
    }
  };

  return {
    handle(client, message) {
      let bindings = clients.get(client);
      if (bindings === undefined) clients.set(client, (bindings = new Map()));
      for (const record of message.binds ?? []) {
        const old = bindings.get(record.binding);
        if (typeof old === "object") drop(old, true);
        bindings.set(record.binding, bind(record));
      }
      for (const binding of message.releases ?? []) {
        const old = bindings.get(binding);
        if (typeof old === "object") drop(old, true);
        bindings.delete(binding);
      }
      // Leases a client still holds from an old host, each at its own receipt (a check at that
      // instant logs the lease there: concurrency.ts), before any operation of the batch.
      for (const [binding, key, at, cost] of message.leases ?? []) {
        const entry = bindings.get(binding);
        if (typeof entry !== "object" || entry.leaseMs === 0) continue;
        try {
          void entry.bound.check(key, cost, at, "check"); // the memory store decides synchronously
        } catch {
          // a lease that cannot be logged (its rule refuses the instant) is left to expire with its holder's request
        }
      }
      const ops = message.ops ?? [];
      if (ops.length === 0) return undefined;
      const results: OpResult[] = new Array(ops.length);
      for (let i = 0; i < ops.length; i++) {
        const [binding, key, cost, now, op, at] = ops[i] as BatchMessage["ops"][number];
        const entry = bindings.get(binding);
        if (typeof entry !== "object") {
          results[i] =
            entry === undefined
              ? { error: `rule binding ${binding} is not registered`, unbound: true }
              : { error: entry };
          continue;
        }
        const bound = entry.bound;
        try {
          const wait = op === "check" && entry.leaseMs > 0 ? gate(entry.leaseMs) : 0;
          if (wait > 0) {
            // A new host settling: leases it never saw may still run, so no new one is granted yet.
            const d = bound.check(key, cost, now ?? undefined, "peek") as Decision;
            d.allowed = false;
            d.remaining = 0;
            d.retryAfterMs = Math.max(d.retryAfterMs, Math.ceil(wait));
            results[i] = encode(d);
          } else if (op === "reset") {
            void bound.reset(key); // the memory store resets synchronously
            results[i] = 0;
          } else if (
            op === "check" ||
            op === "peek" ||
            op === "refund" ||
            op === "penalty" ||
            op === "block" ||
            op === "release" ||
            op === "renew"
          ) {
            // Validated: only a refund, a release or a renewal carries a receipt, and those two always do.
            const receipt = typeof at === "number" && Number.isFinite(at) ? at : undefined;
            results[i] = encode(bound.check(key, cost, now ?? undefined, op, receipt) as Decision);
          } else if (op === "get") {
            // A key equivalent to a fresh one travels as such: the worker's limiter answers null.
            const d = bound.check(key, 1, now ?? undefined, "get") as Decision;
            results[i] = isFreshAnswer(d) ? { fresh: encode(d) } : encode(d);
          } else {
            results[i] = { error: `unknown operation ${describeValue(op)}` };
          }
        } catch (error) {
          results[i] = { error: error instanceof Error ? error.message : String(error) };
        }
      }
      return { channel: CHANNEL, type: "reply", seq: message.seq, results };
    },
    disconnect(client) {
      const bindings = clients.get(client);
      clients.delete(client);
      if (bindings !== undefined) for (const b of bindings.values()) if (typeof b === "object") drop(b, false);
    },
    stop() {
      clients.clear();
      for (const entry of shared.values()) entry.bound.release();
      shared.clear();
    },
  };
}
