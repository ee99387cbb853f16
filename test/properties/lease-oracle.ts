/**
 * An independent model of leases (SPEC §16's concurrency spec) for the attack suites: per key a
 * multiset of leases (receipt, cost, acquiredAt, expiresAt) and phantom units (penalties), a
 * block's end, and for composites the rate member as a plain list of admitted instants (a
 * sliding log written from scratch here, not the library's). Nothing here imports the library's
 * algorithms: the model must be able to disagree with them.
 */

/** One lease as the model has it. */
export interface ModelLease {
  id: number;
  key: string;
  cost: number;
  /** The instant of its last acquisition or renewal (its receipt). */
  receipt: number;
  /** Released by its holder (or reset away). */
  gone: boolean;
}

/** The rate member of a composite: `limit` units per sliding `windowMs`. */
export interface ModelRate {
  limit: number;
  windowMs: number;
}

/** The model of one concurrency rule (optionally composed with one sliding-log rate member). */
export class LeaseModel {
  limit: number;
  leaseMs: number;
  readonly rate: ModelRate | undefined;
  /** The latest clock reading seen: time never runs back for expiry (SPEC: a step back is "no time passed"). */
  hw = Number.NEGATIVE_INFINITY;
  readonly leases: ModelLease[] = [];
  /** Penalty units: they count as leases nobody can release, until they expire. */
  readonly phantoms = new Map<string, number[]>();
  readonly rateLog = new Map<string, number[]>();
  readonly blockedUntil = new Map<string, number>();
  #next = 0;

  constructor(limit: number, leaseMs: number, rate?: ModelRate) {
    this.limit = limit;
    this.leaseMs = leaseMs;
    this.rate = rate;
  }

  /** Moves the model's time to `now` (a reading behind the latest changes nothing). */
  see(now: number): number {
    this.hw = Math.max(this.hw, now);
    return this.hw;
  }

  /**
   * updateRule with a new leaseMs at reading `now`: leases and penalty units already expired
   * under the old leaseMs stay gone (their slots may have been given to others since); the
   * ones still held count under the new leaseMs from their receipt.
   */
  changeLeaseMs(leaseMs: number, now: number): void {
    this.see(now);
    for (const l of this.leases) if (!this.holds(l)) l.gone = true;
    for (const [key, p] of this.phantoms) {
      this.phantoms.set(
        key,
        p.filter((t) => t + this.leaseMs > this.hw),
      );
    }
    this.leaseMs = leaseMs;
  }

  /** Whether `lease` still counts: not released and not `leaseMs` old at the latest reading. */
  holds(lease: ModelLease): boolean {
    return !lease.gone && lease.receipt + this.leaseMs > this.hw;
  }

  /** Units in flight for `key`: held leases and unexpired penalty units. */
  held(key: string): number {
    let n = this.requests(key);
    for (const p of this.phantoms.get(key) ?? []) if (p + this.leaseMs > this.hw) n++;
    return n;
  }

  /** Requests in flight for `key`: held leases only (what SPEC §16 caps at `limit`). */
  requests(key: string): number {
    let n = 0;
    for (const l of this.leases) if (l.key === key && this.holds(l)) n += l.cost;
    return n;
  }

  /**
   * Whether a penalty of `key` still counts. A penalty's units are log entries like a lease's
   * (the store adds at most `limit` per penalty, and a release at the penalty's instant may take
   * one of them): the model does not follow that, and compares such a key for safety only.
   */
  penalised(key: string): boolean {
    return (this.phantoms.get(key) ?? []).some((p) => p + this.leaseMs > this.hw);
  }

  /** Units the rate member counts for `key` (the newest `limit` entries inside the window). */
  rateUsed(key: string): number {
    if (this.rate === undefined) return 0;
    const { limit, windowMs } = this.rate;
    const inWindow = (this.rateLog.get(key) ?? []).filter((t) => t > this.hw - windowMs).length;
    return Math.min(limit, inWindow);
  }

  blocked(key: string): boolean {
    return (this.blockedUntil.get(key) ?? Number.NEGATIVE_INFINITY) > this.hw;
  }

  /** Whether an acquisition of `cost` fits every member (and no block stands). */
  fits(key: string, cost: number): boolean {
    if (this.blocked(key)) return false;
    if (this.held(key) + cost > this.limit) return false;
    return this.rate === undefined || this.rateUsed(key) + cost <= this.rate.limit;
  }

  /** Records an admitted acquisition at `now` (the store's receipt `at`). */
  acquire(key: string, cost: number, at: number): ModelLease {
    const lease: ModelLease = { id: this.#next++, key, cost, receipt: at, gone: false };
    this.leases.push(lease);
    if (this.rate !== undefined) {
      const log = this.rateLog.get(key) ?? [];
      for (let i = 0; i < cost; i++) log.push(this.hw);
      this.rateLog.set(key, log);
    }
    return lease;
  }

  /** A penalty of `cost` units: phantom leases at now, and the rate member's units (forced). */
  penalty(key: string, cost: number): void {
    const p = this.phantoms.get(key) ?? [];
    for (let i = 0; i < cost; i++) p.push(this.hw);
    this.phantoms.set(key, p);
    if (this.rate !== undefined) {
      const log = this.rateLog.get(key) ?? [];
      for (let i = 0; i < cost; i++) log.push(this.hw);
      this.rateLog.set(key, log);
    }
  }

  /** A reset forgets everything the key holds. */
  reset(key: string): void {
    for (const l of this.leases) if (l.key === key) l.gone = true;
    this.phantoms.delete(key);
    this.rateLog.delete(key);
    this.blockedUntil.delete(key);
  }

  /** Whether some lease or phantom of `key` other than `except` still counts with receipt `at`. */
  sharesReceipt(key: string, at: number, except?: ModelLease): boolean {
    if (this.leases.some((l) => l !== except && l.key === key && l.receipt === at && this.holds(l))) return true;
    return (this.phantoms.get(key) ?? []).some((p) => p === at && p + this.leaseMs > this.hw);
  }
}
