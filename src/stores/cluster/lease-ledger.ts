/**
 * The leases one ClusterStore rule holds in this process (SPEC §16, issue 33): what a new socket
 * host is told after a failover, since a host that starts empty would otherwise grant the slots
 * of requests still running here. A lease is (key, receipt, count); released, renewed (moved to
 * its new receipt) and expired leases leave it. Receipts are this process's instants, as the
 * host logged them.
 */
import { leaseMsOf } from "../../algorithms/concurrency.ts";
import type { AlgorithmSpec, ConcurrencySpec } from "../../algorithms/specs.ts";
import type { LeaseRecord } from "./protocol.ts";

/** Additions between two sweeps of every key for expired leases (bounds the ledger's memory). */
const SWEEP_EVERY = 1024;

/** The leases held under one rule: key → receipt → count. */
export class LeaseLedger {
  /** The longest `leaseMs` of the rule's concurrency members: a lease older than this is gone. */
  readonly leaseMs: number;
  readonly #keys = new Map<string, Map<number, number>>();
  #adds = 0;
  #latest = Number.NEGATIVE_INFINITY;

  constructor(leaseMs: number) {
    this.leaseMs = leaseMs;
  }

  /** A ledger for a rule of `specs`, or undefined when it has no concurrency member. */
  static of(specs: readonly AlgorithmSpec[]): LeaseLedger | undefined {
    let leaseMs = 0;
    for (const spec of specs) {
      if (spec.algorithm === "concurrency") leaseMs = Math.max(leaseMs, leaseMsOf(spec as ConcurrencySpec));
    }
    return leaseMs > 0 ? new LeaseLedger(leaseMs) : undefined;
  }

  /** `count` leases of `key` taken (or renewed) at `at`. */
  add(key: string, at: number, count: number): void {
    let receipts = this.#keys.get(key);
    if (receipts === undefined) this.#keys.set(key, (receipts = new Map()));
    receipts.set(at, (receipts.get(at) ?? 0) + count);
    if (at > this.#latest) this.#latest = at;
    if (++this.#adds % SWEEP_EVERY === 0) this.#sweep(this.#latest);
  }

  /** `count` leases of `key` at receipt `at` released (or moved by a renewal). */
  drop(key: string, at: number, count: number): void {
    const receipts = this.#keys.get(key);
    const held = receipts?.get(at);
    if (receipts === undefined || held === undefined) return;
    if (held > count) receipts.set(at, held - count);
    else {
      receipts.delete(at);
      if (receipts.size === 0) this.#keys.delete(key);
    }
  }

  /** `key` was reset: it holds no lease. */
  forget(key: string): void {
    this.#keys.delete(key);
  }

  /** Number of leases held (for tests). */
  get size(): number {
    let n = 0;
    for (const receipts of this.#keys.values()) for (const count of receipts.values()) n += count;
    return n;
  }

  /** Appends the leases still held (not expired at `now`, by default the newest receipt seen) as records of `binding`. */
  collect(binding: number, into: LeaseRecord[], now: number = this.#latest): void {
    this.#sweep(Math.max(now, this.#latest));
    for (const [key, receipts] of this.#keys) {
      for (const [at, count] of receipts) into.push([binding, key, at, count]);
    }
  }

  /** Drops leases that expired by `now` (a receipt `leaseMs` or more before it). */
  #sweep(now: number): void {
    for (const [key, receipts] of this.#keys) {
      for (const at of receipts.keys()) if (at + this.leaseMs <= now) receipts.delete(at);
      if (receipts.size === 0) this.#keys.delete(key);
    }
  }
}
