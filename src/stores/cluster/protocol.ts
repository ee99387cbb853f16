/**
 * The IPC protocol between `ClusterStore` (workers) and `startClusterStore` (the primary).
 * A worker sends one `BatchMessage` per event-loop turn: the rules it bound or released since
 * the last one, and every operation issued in that turn; the primary answers the operations
 * with one `ReplyMessage`, results in the same order. Messages are plain JSON (the default
 * `node:cluster` serialization, and what PM2 forwards), so `Infinity` travels as `null`;
 * decisions travel as arrays (see `WireDecision`).
 * An operation is a tuple whose last element names it, so new operations add a name, not a shape.
 */
import type { Decision } from "../../algorithms/decision.ts";
import type { BanPolicy } from "../../core/ban.ts";
import type { Operation } from "../../core/decide-rule.ts";
import type { AlgorithmSpec } from "../../core/spec.ts";

/** Marks sluice's messages among whatever else the application sends over the IPC channel. */
export const CHANNEL = "sluice:cluster";

/** What an operation asks of a bound rule: a `BoundRule.check` operation, or a reset. */
export type OpName = Operation | "reset";

/**
 * One operation: binding number, user key, cost, injected `now` (null: the primary's time), name;
 * a refund with a receipt, a lease's release and renewal add the instant its check (or its last
 * renewal) was decided (`at`).
 */
export type Op =
  | [binding: number, key: string, cost: number, now: number | null, op: OpName]
  | [binding: number, key: string, cost: number, now: number | null, op: OpName, at: number];

/** A rule registered by a worker: its binding number there, its id and normalised specs. */
export interface BindRecord {
  /** The worker's number for this binding (unique within the worker process). */
  readonly binding: number;
  /** The rule id; bindings with the same id share state, across workers. */
  readonly id: string;
  /** The members' normalised specs, from which the primary rebuilds the algorithms. */
  readonly specs: readonly AlgorithmSpec[];
  /** The rule's ban policy (null: none); the primary compiles specs and ban into the rule. */
  readonly ban: BanPolicy | null;
  /** Whether the worker injects `now` (its instants are then not compared with the primary's clock). */
  readonly clock: boolean;
}

/** Worker → primary. */
export interface BatchMessage {
  readonly channel: typeof CHANNEL;
  readonly type: "batch";
  /** Matches the reply; unique within the worker process (0 when `ops` is empty: no reply). */
  readonly seq: number;
  readonly binds: readonly BindRecord[];
  readonly releases: readonly number[];
  readonly ops: readonly Op[];
  /**
   * Socket transport, the first batch to a new host: the leases this process still holds
   * (re-registered before any operation of the batch is decided), and its peer token (the host
   * then knows this process came back: see socket-link.ts, "settling").
   */
  readonly leases?: readonly LeaseRecord[];
  readonly resync?: string;
}

/**
 * A lease a client holds, re-registered at a new host: binding number, user key, receipt (the
 * instant its check, or its last renewal, was decided) and how many leases of that receipt.
 */
export type LeaseRecord = [binding: number, key: string, at: number, cost: number];

/** Socket host → every client: the peer tokens of the processes connected now (a new host waits for them). */
export interface PeersMessage {
  readonly channel: typeof CHANNEL;
  readonly type: "peers";
  readonly tokens: readonly string[];
}

/**
 * A decision on the wire: `[allowed (1|0), limit, remaining, retryAfterMs, resetMs, delayMs]`,
 * then `parts` (encoded alike, or 0 when absent), then an object of any other fields. Arrays of
 * numbers cost the primary and the workers far less JSON work than objects with named fields.
 */
export type WireDecision = [
  number,
  number,
  number,
  number | null,
  number | null,
  number,
  (0 | WireDecision[])?,
  object?,
];

/**
 * The result of one operation: a decision, `0` for a done reset, `{ fresh }` for a `get` of a
 * key equivalent to a fresh one, or an error message.
 */
export type OpResult =
  | WireDecision
  | 0
  | { readonly fresh: WireDecision }
  | { readonly error: string; readonly unbound?: true };

/** Primary → worker. */
export interface ReplyMessage {
  readonly channel: typeof CHANNEL;
  readonly type: "reply";
  readonly seq: number;
  readonly results: readonly OpResult[];
}

/** True when `message` is one of sluice's, of `type`. */
export function isMessage<T extends BatchMessage | ReplyMessage | PeersMessage>(
  message: unknown,
  type: T["type"],
): message is T {
  return (
    typeof message === "object" &&
    message !== null &&
    (message as { channel?: unknown }).channel === CHANNEL &&
    (message as { type?: unknown }).type === type
  );
}

const KNOWN = new Set(["allowed", "limit", "remaining", "retryAfterMs", "resetMs", "delayMs", "parts"]);

/** Encodes a decision for the wire (see {@link WireDecision}). */
export function encode(d: Decision): WireDecision {
  const wire: WireDecision = [d.allowed ? 1 : 0, d.limit, d.remaining, d.retryAfterMs, d.resetMs, d.delayMs];
  let extra: Record<string, unknown> | undefined;
  for (const key in d) {
    if (!KNOWN.has(key)) (extra ??= {})[key] = (d as unknown as Record<string, unknown>)[key];
  }
  if (d.parts !== undefined || extra !== undefined) wire.push(d.parts === undefined ? 0 : d.parts.map(encode));
  if (extra !== undefined) wire.push(extra);
  return wire;
}

/** Decodes a wire decision; `null` (what JSON makes of `Infinity`) becomes `Infinity` again. */
export function decode(wire: WireDecision): Decision {
  const [allowed, limit, remaining, retryAfterMs, resetMs, delayMs, parts, extra] = wire;
  const d: Decision = {
    allowed: allowed === 1,
    limit,
    remaining,
    retryAfterMs: retryAfterMs ?? Number.POSITIVE_INFINITY,
    resetMs: resetMs ?? Number.POSITIVE_INFINITY,
    delayMs,
  };
  if (parts !== undefined && parts !== 0) d.parts = parts.map(decode);
  return extra === undefined ? d : Object.assign(d, extra);
}
