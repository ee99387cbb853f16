/**
 * The socket host's check of a frame from a peer: a local socket is a trust boundary (any
 * process that can open it may write to it), so every batch is validated like a public API input
 * before anything is decided — shapes, costs (safe integers ≥ 1: a negative cost would hand a
 * key capacity back), keys, operation names, counts. A frame that fails is never decided: its
 * connection is closed and the reason reported.
 */
import { CHANNEL } from "./protocol.ts";

/** Most operations, bindings or releases in one frame (a client sends one frame per event-loop turn). */
export const MAX_FRAME_ITEMS = 100_000;
/** Longest key in one operation, in characters (the memory store keeps keys: no peer may make it hold huge ones). */
export const MAX_KEY_CHARS = 64 * 1024;
/** Longest rule id in one registration. */
const MAX_ID_CHARS = 4096;
/** Most members of one rule. */
const MAX_SPECS = 64;

const OPS = new Set(["check", "peek", "refund", "reset", "penalty", "block", "get", "release", "renew"]);
/** Operations that name a receipt: a refund may, a lease's release and renewal must. */
const RECEIPT_OPS = new Set(["refund", "release", "renew"]);

const isIndex = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

function list(frame: Record<string, unknown>, name: string): unknown[] | string {
  const value = frame[name];
  if (value === undefined) return [];
  if (!Array.isArray(value)) return `\`${name}\` is not an array`;
  if (value.length > MAX_FRAME_ITEMS) return `\`${name}\` has ${value.length} items (at most ${MAX_FRAME_ITEMS})`;
  return value;
}

/** Why `frame` is not a valid batch from a peer, or undefined when it is. */
export function invalidBatch(frame: unknown): string | undefined {
  if (typeof frame !== "object" || frame === null || Array.isArray(frame)) return "the frame is not an object";
  const f = frame as Record<string, unknown>;
  if (f.channel !== CHANNEL || f.type !== "batch") return "the frame is not a sluice batch";
  if (!isIndex(f.seq)) return "`seq` is not a non-negative safe integer";
  const binds = list(f, "binds");
  if (typeof binds === "string") return binds;
  for (const [i, b] of binds.entries()) {
    const why = invalidBind(b);
    if (why !== undefined) return `binds[${i}]: ${why}`;
  }
  const releases = list(f, "releases");
  if (typeof releases === "string") return releases;
  if (!releases.every(isIndex)) return "`releases` holds something other than binding numbers";
  const ops = list(f, "ops");
  if (typeof ops === "string") return ops;
  if (ops.length > 0 && f.seq === 0) return "a batch with operations has `seq` 0 (which gets no reply)";
  for (const [i, op] of ops.entries()) {
    const why = invalidOp(op);
    if (why !== undefined) return `ops[${i}]: ${why}`;
  }
  const leases = list(f, "leases");
  if (typeof leases === "string") return leases;
  for (const [i, lease] of leases.entries()) {
    const why = invalidLease(lease);
    if (why !== undefined) return `leases[${i}]: ${why}`;
  }
  if (f.resync !== undefined && (typeof f.resync !== "string" || f.resync.length === 0 || f.resync.length > 64)) {
    return "`resync` is not a peer token (a string of 1 to 64 characters)";
  }
  return undefined;
}

/** Why `lease` is not a re-registered lease [binding, key, receipt, cost]. */
function invalidLease(lease: unknown): string | undefined {
  if (!Array.isArray(lease) || lease.length !== 4) return "not a [binding, key, receipt, cost] tuple";
  const [binding, key, at, cost] = lease as unknown[];
  if (!isIndex(binding)) return "the binding is not a binding number";
  if (typeof key !== "string" || key.length > MAX_KEY_CHARS)
    return `the key is not a string of at most ${MAX_KEY_CHARS} characters`;
  if (typeof at !== "number" || !Number.isFinite(at)) return "the receipt is not a finite instant";
  if (typeof cost !== "number" || !Number.isSafeInteger(cost) || cost < 1) return "the cost is not a safe integer ≥ 1";
  return undefined;
}

function invalidBind(b: unknown): string | undefined {
  if (typeof b !== "object" || b === null || Array.isArray(b)) return "not an object";
  const r = b as Record<string, unknown>;
  if (!isIndex(r.binding)) return "`binding` is not a non-negative safe integer";
  if (typeof r.id !== "string" || r.id.length === 0 || r.id.length > MAX_ID_CHARS)
    return `\`id\` is not a string of 1 to ${MAX_ID_CHARS} characters`;
  if (!Array.isArray(r.specs) || r.specs.length === 0 || r.specs.length > MAX_SPECS)
    return `\`specs\` is not a list of 1 to ${MAX_SPECS} specs`;
  if (!r.specs.every((s) => typeof s === "object" && s !== null && !Array.isArray(s))) return "a spec is not an object";
  if (r.ban !== null && r.ban !== undefined && (typeof r.ban !== "object" || Array.isArray(r.ban)))
    return "`ban` is not an object or null";
  if (typeof r.clock !== "boolean") return "`clock` is not a boolean";
  return undefined; // specs and ban are validated in full when compiled (an error answers that binding's ops)
}

function invalidOp(op: unknown): string | undefined {
  // A refund with a receipt, a release and a renewal carry a sixth item: the instant the check
  // (or the lease's last renewal) was decided.
  if (!Array.isArray(op) || (op.length !== 5 && op.length !== 6)) return "not a 5-tuple (or a receipt's 6-tuple)";
  const [binding, key, cost, now, name, at] = op as unknown[];
  if (!isIndex(binding)) return "the binding is not a non-negative safe integer";
  if (typeof key !== "string" || key.length > MAX_KEY_CHARS)
    return `the key is not a string of at most ${MAX_KEY_CHARS} characters`;
  if (typeof name !== "string" || !OPS.has(name)) return "unknown operation";
  if (typeof cost !== "number" || !Number.isSafeInteger(cost) || cost < 1)
    return `the cost is not a positive safe integer (got ${JSON.stringify(cost)})`;
  if (now !== null && (typeof now !== "number" || !Number.isFinite(now) || now < 0))
    return "`now` is not null or a finite instant ≥ 0";
  if (op.length === 6) {
    if (!RECEIPT_OPS.has(name)) return "only a refund, a release or a renewal carries a sixth item (its receipt)";
    if (typeof at !== "number" || !Number.isFinite(at)) return `the ${name}'s receipt \`at\` is not a finite instant`;
  } else if (name === "release" || name === "renew") {
    return `a ${name} carries a sixth item: the receipt of the leases it names`;
  }
  return undefined;
}

const QUEUE_OPS = new Set(["o", "e", "c", "r", "n", "h", "x"]);
const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isInstant = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/**
 * Why `frame` is not a valid fleet queue call from a peer (fleet-queue-host.ts), or undefined.
 * Shapes only: the host answers a call whose content it cannot use with an error of its own,
 * and a peer acts only on owners it opened on its connection.
 */
export function invalidQueueCall(frame: unknown): string | undefined {
  const f = frame as Record<string, unknown>;
  if (!isIndex(f.seq)) return "`seq` is not a non-negative safe integer";
  if (typeof f.owner !== "string" || f.owner.length > MAX_ID_CHARS) return "`owner` is not a string";
  if (typeof f.op !== "string" || !QUEUE_OPS.has(f.op)) return "unknown fleet queue operation";
  if (typeof f.key !== "string" || f.key.length > MAX_KEY_CHARS)
    return `the key is not a string of at most ${MAX_KEY_CHARS} characters`;
  const args = list(f, "args");
  if (typeof args === "string") return args;
  if (!args.every((a) => (typeof a === "string" && a.length <= MAX_ID_CHARS) || isInstant(a)))
    return "`args` holds something other than ids and numbers";
  if (f.op !== "o")
    return f.rules === undefined && f.held === undefined && f.paused === undefined
      ? undefined
      : "only an open carries rules";
  const rules = f.rules as Record<string, unknown> | undefined;
  if (typeof rules !== "object" || rules === null || Array.isArray(rules)) return "an open carries no rules";
  if (!isCount(rules.ownerTtlMs) || rules.ownerTtlMs < 1) return "`ownerTtlMs` is not a positive integer";
  if (rules.lookaheadMs !== undefined && !isCount(rules.lookaheadMs)) return "`lookaheadMs` is not an integer ≥ 0";
  const rate = rules.rate as Record<string, unknown> | null;
  if (rate !== null && (typeof rate !== "object" || typeof rate.id !== "string" || !Array.isArray(rate.specs)))
    return "`rate` is not null or a rule id and specs";
  const slots = rules.concurrency as Record<string, unknown> | null;
  if (slots !== null && (typeof slots !== "object" || typeof slots.id !== "string" || typeof slots.spec !== "object"))
    return "`concurrency` is not null or a rule id and spec";
  if (f.paused !== undefined) {
    const paused = list(f, "paused");
    if (typeof paused === "string") return paused;
    for (const [i, p] of paused.entries()) {
      // PausedKey: [key, ms], or [key, ms, coolMs] (its cool-down), or [key, ms, coolMs, coolId].
      const [key, ms, coolMs, coolId] = (Array.isArray(p) ? p : []) as unknown[];
      if (
        !Array.isArray(p) ||
        p.length < 2 ||
        p.length > 4 ||
        typeof key !== "string" ||
        key.length > MAX_KEY_CHARS ||
        !isInstant(ms) ||
        (p.length >= 3 && !isInstant(coolMs)) ||
        (p.length === 4 && (typeof coolId !== "string" || coolId.length > MAX_ID_CHARS))
      )
        return `paused[${i}] is not a key and a number of ms (then the cool-down's ms and its job's id)`;
    }
  }
  if (f.held === undefined) return undefined;
  const held = list(f, "held");
  if (typeof held === "string") return held;
  for (const [i, h] of held.entries()) {
    if (!Array.isArray(h) || (h.length !== 5 && h.length !== 6)) return `held[${i}] is not a 5-tuple (or 6)`;
    const [key, id, leased, cost, at, leaseAt] = h as unknown[];
    if (h.length === 6 && !isInstant(leaseAt)) return `held[${i}]: the lease receipt is not finite`;
    if (typeof key !== "string" || key.length > MAX_KEY_CHARS || typeof id !== "string" || id.length > MAX_ID_CHARS)
      return `held[${i}]: the key or id is not a string`;
    if ((leased !== 0 && leased !== 1) || !Number.isSafeInteger(cost) || (cost as number) < 1)
      return `held[${i}]: \`leased\` is not 0 or 1, or the cost not a positive integer`;
    if (at !== null && !isInstant(at)) return `held[${i}]: the rate instant is not null or finite`;
  }
  return undefined;
}
