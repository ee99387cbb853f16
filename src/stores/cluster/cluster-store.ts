/**
 * The client side of `sluice/cluster`: a Store whose decisions are made by one MemoryStore per
 * machine, so every process shares one exact limit without Redis. That store lives in the
 * node:cluster primary (`primary.ts`, over IPC) or, with the `socket` option, in whichever
 * process bound the Unix socket first (`socket-link.ts`: PM2 cluster mode, or any processes).
 * This file is the transport over the remote plumbing (../remote/): operations issued in one
 * event-loop turn are coalesced into one IPC message or socket frame and come back as one; each
 * batch is bounded by `timeoutMs`; a check the primary does not answer in time (or cannot
 * answer: no primary store, channel closed) is decided by `onError`, as with RedisStore.
 */
import type { Decision } from "../../algorithms/decision.ts";
import { markFreshAnswer, type Operation } from "../../core/decide-rule.ts";
import { describeValue } from "../../core/describe-value.ts";
import { ArgumentError, StoreError } from "../../core/errors.ts";
import type { FleetQueue, FleetQueueConfig } from "../../core/fleet-queue.ts";
import { checkOptions } from "../../core/options.ts";
import type { BoundRule, RuleBinding, Store } from "../../core/store.ts";
import { openHostedFleetQueue } from "../fleet-queue-client.ts";
import type { MemoryStoreOptions } from "../memory/memory-store.ts";
import { MemoryStore } from "../memory/memory-store.ts";
import { Breaker, type BreakerOptions, checkBreaker } from "../remote/breaker.ts";
import { Coalescer } from "../remote/coalescer.ts";
import { exchange } from "../remote/exchange.ts";
import {
  checkOnError,
  DEFAULT_POLICY,
  describePolicy,
  type FailurePolicy,
  type OnError,
  rulePolicy,
} from "../remote/failure-policy.ts";
import { firstFailureWarning } from "../remote/failure-warning.ts";
import { checkTimeoutMs } from "../remote/with-timeout.ts";
import { LeaseLedger } from "./lease-ledger.ts";
import { hasChannel, ipc, type Transport } from "./link.ts";
import { type BindRecord, CHANNEL, decode, type LeaseRecord, type Op, type OpName, type OpResult } from "./protocol.ts";
import { openClusterFleetQueue } from "./queue-client.ts";
import { DEFAULT_SOCKET_MODE, SocketLink, socketLink, socketQueueTransport } from "./socket-link.ts";
import { LOCK_SUFFIX } from "./takeover-lock.ts";

/** Options of {@link ClusterStore}. */
export interface ClusterStoreOptions {
  /** Longest a check may wait for the primary, in ms (default 1000); then `onError` answers. */
  timeoutMs?: number;
  /** What a check answers when the primary fails or times out (default `"deny"`), as for RedisStore. */
  onError?: OnError;
  /** Circuit breaker settings, or `false` to always ask the primary (default: open after 5 failures, probe after 1 s). */
  breaker?: BreakerOptions | false;
  /**
   * A Unix domain socket path (e.g. `/tmp/sluice-myapp.sock`) shared by the processes of one
   * machine, instead of a node:cluster primary: the first to bind it hosts the store, the others
   * connect; if the host dies, another takes over (with empty state, but for the leases the
   * processes still hold, which they re-register there). For PM2 cluster mode.
   */
  socket?: string;
  /** With `socket`: the MemoryStore options of the store this process holds when it hosts. */
  hostStore?: MemoryStoreOptions;
  /**
   * With `socket`: the socket file's mode (default `0o600`: only processes of the same user can
   * connect). Widen it (e.g. `0o660`) only for processes of several users sharing a group.
   */
  socketMode?: number;
}

/**
 * Longest socket path accepted: macOS allows 104 bytes with the terminator (Linux 108), and the
 * takeover lock binds a socket at the path plus ".lock" (takeover-lock.ts).
 */
const MAX_SOCKET_PATH = 103 - LOCK_SUFFIX.length;

/** Most operations in one message; more in one turn go as several (bounds message size). */
const MAX_BATCH = 1024;

/** One operation waiting for the primary. */
interface Pending {
  rule: ClusterBoundRule;
  key: string;
  cost: number;
  op: OpName;
  /** The call's instant (undefined: the primary's clock), for the failure policy's fallback. */
  now: number | undefined;
  /** The call's receipt (a refund's or a lease's), for the failure policy's fallback. */
  at: number | undefined;
  resolve: (value: Decision | Promise<Decision> | undefined) => void;
  reject: (error: unknown) => void;
}

/** One message's content: registrations, releases and operations, with the callers waiting for the operations. */
class ClusterBatch {
  readonly binds: BindRecord[] = [];
  readonly releases: number[] = [];
  readonly ops: Op[] = [];
  readonly pending: Pending[] = [];

  /** Operations in the message (registrations and releases are small and not counted). */
  get size(): number {
    return this.ops.length;
  }
}

/** The one destination of a ClusterStore's messages (the primary, or the socket's host). */
const HOST = 0;

let nextBinding = 1;

/**
 * A Store shared by the processes of one machine: the `node:cluster` workers of a primary that
 * runs `startClusterStore()`, or, with `socket`, any processes (PM2 cluster mode) through a
 * Unix socket one of them hosts.
 *
 * @example
 * const store = new ClusterStore({ timeoutMs: 200, onError: "deny" });
 * const limiter = createLimiter({ algorithm: "gcra", limit: 100, periodMs: 60_000 }, { store, name: "api" });
 * const d = await limiter.tryAcquire(userId);
 */
export class ClusterStore implements Store {
  /** Checks return promises. */
  readonly synchronous = false;
  /** Decides `penalty`, `block` and `get` on the primary's MemoryStore. */
  readonly flexibleCalls = true;
  /** The bound on every operation, in ms. */
  readonly timeoutMs: number;
  readonly #onError: OnError;
  readonly #onFailure: (error: StoreError) => void;
  readonly #breaker: Breaker;
  readonly #link: Transport;
  /** Rules bound and not released, registered again with a new host (socket transport). */
  readonly #live = new Set<ClusterBoundRule>();
  readonly #batches = new Coalescer<typeof HOST, ClusterBatch>(
    () => new ClusterBatch(),
    (batch) => this.#send(batch),
    MAX_BATCH,
  );

  constructor(options: ClusterStoreOptions = {}) {
    checkOptions(options, "ClusterStore", ["timeoutMs", "onError", "breaker", "socket", "hostStore", "socketMode"]);
    const { socket, hostStore = {}, socketMode = DEFAULT_SOCKET_MODE } = options;
    if (!Number.isInteger(socketMode) || socketMode < 0 || socketMode > 0o777 || (socketMode & 0o600) !== 0o600) {
      throw new ArgumentError(
        `\`socketMode\` must be a file mode from 0o600 to 0o777 that lets the owner read and write (got ${describeValue(socketMode)})`,
      );
    }
    const timeoutMs = checkTimeoutMs(options.timeoutMs);
    const breaker = checkBreaker(options.breaker);
    const onError = checkOnError<RuleBinding>(options.onError ?? DEFAULT_POLICY);
    if (socket === undefined) {
      if (options.hostStore !== undefined) throw new ArgumentError("`hostStore` applies only with `socket`");
      if (options.socketMode !== undefined) throw new ArgumentError("`socketMode` applies only with `socket`");
      if (!hasChannel()) {
        throw new ArgumentError(
          "ClusterStore must run in a node:cluster worker, with an IPC channel to the primary (this process is not one); " +
            "elsewhere (PM2 cluster mode, separate processes) pass `socket`",
        );
      }
    } else if (typeof socket !== "string" || socket === "" || Buffer.byteLength(socket) > MAX_SOCKET_PATH) {
      throw new ArgumentError(
        `\`socket\` must be a socket path of 1 to ${MAX_SOCKET_PATH} bytes (got ${describeValue(socket)})`,
      );
    } else {
      new MemoryStore(hostStore); // validates the options now, not when this process first hosts
    }
    this.#link = socket === undefined ? ipc : socketLink(socket, hostStore, socketMode);
    this.#link.attach(this);
    this.timeoutMs = timeoutMs;
    this.#onError = onError;
    this.#onFailure = firstFailureWarning("ClusterStore", describePolicy(onError));
    this.#breaker = new Breaker(breaker);
    const link = this.#link;
    this.openFleetQueue =
      link instanceof SocketLink
        ? (config) => openHostedFleetQueue(socketQueueTransport(link), config, Math.max(timeoutMs, 1000))
        : (config) => openClusterFleetQueue(config, Math.max(timeoutMs, 1000));
  }

  /**
   * @internal Opens a throttle's fleet queue (SPEC §16; ../fleet-queue-host.ts) in the node:cluster
   * primary, or with `socket` in the elected host (opened again at a new host after a re-election).
   */
  readonly openFleetQueue: (config: FleetQueueConfig) => Promise<FleetQueue>;

  /** With `socket`: true while this process hosts the shared store (false on the IPC transport). */
  get hosting(): boolean {
    return this.#link instanceof SocketLink && this.#link.hosting;
  }

  /** True while the circuit breaker keeps checks away from an unresponsive primary. */
  get circuitOpen(): boolean {
    return this.#breaker.open;
  }

  /** Binds a rule and registers it with the primary (by id and normalised specs) in the next message. */
  bind(rule: RuleBinding): BoundRule {
    const bound = new ClusterBoundRule(this, rule, nextBinding++, rulePolicy(this.#onError, rule, this.#onFailure));
    this.#live.add(bound);
    this.register(bound);
    return bound;
  }

  /** Queues `rule`'s registration for the next message. Internal. */
  register(rule: ClusterBoundRule): void {
    rule.registered = true;
    const batch = this.#batches.open(HOST, undefined);
    batch.binds.push(rule.record);
    this.#batches.added(HOST, batch);
  }

  /** The registrations a new host needs (rules live and already registered). Internal. */
  records(): BindRecord[] {
    const records: BindRecord[] = [];
    for (const rule of this.#live) if (rule.registered) records.push(rule.record);
    return records;
  }

  /** @internal The leases this process holds (not released, not expired), for a new host. */
  leases(): LeaseRecord[] {
    const leases: LeaseRecord[] = [];
    for (const rule of this.#live)
      if (rule.registered) {
        // Receipts on the system clock expire by it; an injected clock's only by the newest receipt seen.
        rule.ledger?.collect(rule.binding, leases, rule.record.clock ? undefined : Date.now());
      }
    return leases;
  }

  /** Queues a release for the next message. Internal. */
  unregister(rule: ClusterBoundRule): void {
    this.#live.delete(rule);
    const batch = this.#batches.open(HOST, undefined);
    batch.releases.push(rule.binding);
    this.#batches.added(HOST, batch);
  }

  /** Queues one operation; it settles with the primary's answer or by the failure policy. Internal. */
  submit(
    rule: ClusterBoundRule,
    key: string,
    cost: number,
    now: number | undefined,
    op: OpName,
    at?: number,
  ): Promise<unknown> {
    if (!this.#breaker.allow()) {
      return this.#fail(
        { rule, key, cost, op, now, at },
        new StoreError("cluster store circuit breaker is open (recent checks failed)"),
      );
    }
    if (!rule.registered) this.register(rule);
    const ledger = rule.ledger;
    if (ledger !== undefined && now !== undefined) {
      // The leases this process holds, kept so a new socket host can be told of them.
      if (op === "release" && at !== undefined) ledger.drop(key, at, cost);
      else if (op === "reset") ledger.forget(key);
      else if (op === "check" || op === "renew") {
        return this.#queue(rule, key, cost, now, op, at).then((d) => {
          const decided = d as Decision;
          if (decided.allowed && decided.failure === undefined) {
            if (op === "renew") ledger.drop(key, at as number, cost);
            ledger.add(key, now, cost);
          }
          return d;
        });
      }
    } else if (ledger !== undefined && op === "reset") ledger.forget(key);
    return this.#queue(rule, key, cost, now, op, at);
  }

  /** Queues one operation in the next message. */
  #queue(
    rule: ClusterBoundRule,
    key: string,
    cost: number,
    now: number | undefined,
    op: OpName,
    at: number | undefined,
  ): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const n = now === undefined ? null : now;
      const batch = this.#batches.open(HOST, undefined);
      batch.ops.push(at === undefined ? [rule.binding, key, cost, n, op] : [rule.binding, key, cost, n, op, at]);
      batch.pending.push({ rule, key, cost, op, now, at, resolve, reject });
      this.#batches.added(HOST, batch);
    });
  }

  /** Sends one message; its operations settle with the reply, or by the failure policy. */
  #send(batch: ClusterBatch): void {
    const { binds, releases, ops, pending } = batch;
    const link = this.#link;
    if (ops.length === 0) {
      link.post({ channel: CHANNEL, type: "batch", seq: 0, binds, releases, ops });
      return;
    }
    const seq = link.sequence();
    const reply = new Promise<unknown>((resolve, reject) => {
      link.post({ channel: CHANNEL, type: "batch", seq, binds, releases, ops }, { settle: resolve, fail: reject });
    });
    exchange(reply, this.timeoutMs, link.peer, this.#breaker, {
      late: () => link.forget(seq),
      reply: (results) => {
        if (!Array.isArray(results) || results.length !== pending.length) {
          this.#breaker.failure();
          this.#failAll(
            pending,
            new StoreError(`unexpected reply from ${link.peer}: ${pending.length} results expected`),
          );
          return;
        }
        this.#breaker.success();
        for (let i = 0; i < pending.length; i++) this.#deliver(pending[i] as Pending, results[i] as OpResult);
      },
      fail: (error) => this.#failAll(pending, error),
    });
  }

  #deliver(p: Pending, result: OpResult): void {
    if (result === 0) {
      p.resolve(undefined);
    } else if (Array.isArray(result)) {
      p.resolve(decode(result));
    } else if ("fresh" in result) {
      p.resolve(markFreshAnswer(decode(result.fresh)));
    } else {
      if (result.unbound === true) p.rule.registered = false; // the primary started after we registered
      this.#settle(p, this.#fail(p, new StoreError(`${this.#link.peer}: ${result.error}`)));
    }
  }

  /** Every check of a batch answered by the failure policy. */
  #failAll(pending: readonly Pending[], error: StoreError): void {
    for (const p of pending) this.#settle(p, this.#fail(p, error));
  }

  #settle(p: Pending, outcome: Promise<unknown>): void {
    outcome.then(p.resolve as (v: unknown) => void, p.reject);
  }

  /** The failure policy's answer: a decision for checks; a reset rejects. */
  async #fail(call: Pick<Pending, "rule" | "key" | "cost" | "op" | "now" | "at">, error: StoreError): Promise<unknown> {
    const { rule, key, cost, op, now, at } = call;
    if (op === "reset") throw error;
    // The call's own instant and receipt: a fallback deciding on another clock than the
    // limiter's would see the limiter's leases expired (or not yet taken).
    return rule.policy.decide(key, cost, now, op, error, at);
  }
}

/** A rule bound to a ClusterStore. */
export class ClusterBoundRule implements BoundRule {
  /** This binding's number in the messages. */
  readonly binding: number;
  /** What registers it with the primary. */
  readonly record: BindRecord;
  /** The failure policy of this rule. */
  readonly policy: FailurePolicy;
  /** Whether the registration was sent (cleared when the primary says it does not know it). */
  registered = false;
  /** The leases this process holds under this rule (a rule with a concurrency member). */
  readonly ledger: LeaseLedger | undefined;
  readonly #store: ClusterStore;
  #released = false;

  constructor(store: ClusterStore, rule: RuleBinding, binding: number, policy: FailurePolicy) {
    this.#store = store;
    this.binding = binding;
    this.policy = policy;
    this.record = {
      binding,
      id: rule.id,
      specs: rule.rule.members.map((a) => a.spec),
      ban: rule.rule.ban ?? null,
      clock: rule.clock !== undefined,
    };
    this.ledger = LeaseLedger.of(this.record.specs);
    // Limiters may call these detached (`const check = bound.check`), as the memory store allows.
    this.check = this.check.bind(this);
    this.reset = this.reset.bind(this);
  }

  /** Runs `op` for `cost` units of `key` in the primary (batched), or by the failure policy. */
  check(key: string, cost: number, now: number | undefined, op: Operation, at?: number): Promise<Decision> {
    return this.#store.submit(this, key, cost, now, op, at) as Promise<Decision>;
  }

  /** Forgets `key` in the primary (and in the fallback limiter), within `timeoutMs`. */
  reset(key: string): Promise<void> {
    // Queued before anything awaits, so a reset keeps its place among the turn's operations.
    const done = this.#store.submit(this, key, 1, undefined, "reset");
    return Promise.all([this.policy.forget(key), done]).then(() => undefined);
  }

  /** Tells the primary this binding is no longer used. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#store.unregister(this);
  }
}
