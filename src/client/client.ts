/**
 * `createClient`: a Node service's handle on a central `sluice serve`, the HTTP transport over
 * the remote plumbing (../stores/remote/). The checks (and peeks) issued in one turn of the
 * event loop are coalesced into ONE request (an array body, split at `maxBatch`, re-split when
 * the service answers 413), over kept-alive sockets; every call is bounded by `timeoutMs` from
 * when it was made, the circuit breaker is RedisStore's, and an outage is answered by the same
 * failure policies as RedisStore.
 */
import type { Decision } from "../algorithms/decision.ts";
import { describeValue } from "../core/describe-value.ts";
import { ArgumentError, type SluiceError, StoreError } from "../core/errors.ts";
import { readProblem, slugOf } from "../http/problem.ts";
import { holdLease } from "../lease.ts";
import { checkCost, checkKey } from "../limiter.ts";
import { CHECK_OPTIONS } from "../service.ts";
import { Breaker } from "../stores/remote/breaker.ts";
import { Coalescer } from "../stores/remote/coalescer.ts";
import { localMs, timeoutError } from "../stores/remote/with-timeout.ts";
import { ClientFailurePolicy, type Op } from "./failure.ts";
import { type ClientOptions, type ResolvedOptions, resolveOptions } from "./options.ts";
import { type Reply, Transport } from "./transport.ts";
import { readDecision, refusal } from "./wire.ts";

/** Per-call options of `check` and `peek`. */
export interface ClientCheckOptions {
  /** Units to take (default 1). */
  cost?: number;
  /** The rule's tier to use (default: the rule's own spec). */
  tier?: string;
}

/** Per-call options of `refund`. */
export interface ClientRefundOptions extends ClientCheckOptions {
  /** The refunded check's `decision.at` (its receipt): only what that check took, and the algorithm still counts, comes back. */
  at?: number;
}

/** Per-call options of `release` and `renew`. */
export interface ClientLeaseOptions extends ClientCheckOptions {
  /** The leases' receipt: the `decision.at` of the check that took them (or of their last renewal). */
  at: number;
}

/** A client of `sluice serve`. */
export interface SluiceClient {
  /** Takes `cost` units of `rule` for `key` (the service's `POST /v1/check`). */
  check(rule: string, key: string, options?: ClientCheckOptions): Promise<Decision>;
  /** What `check` would say now; changes nothing (`POST /v1/peek`). */
  peek(rule: string, key: string, options?: ClientCheckOptions): Promise<Decision>;
  /** Forgets `key` under `rule` (`POST /v1/reset`); rejects with StoreError when the service cannot. */
  reset(rule: string, key: string, options?: Pick<ClientCheckOptions, "tier">): Promise<void>;
  /** Gives `cost` units back (`POST /v1/refund`; pass the check's `at`); resolves to what a peek then says, rejects with StoreError when the service cannot. */
  refund(rule: string, key: string, options?: ClientRefundOptions): Promise<Decision>;
  /**
   * Gives back the leases a check of a rule with a concurrency member took (`POST /v1/release`,
   * pass the check's `at`); resolves to what a peek then says. An allowed check's Decision also
   * carries `release()` and `renew()`, which call this and {@link SluiceClient.renew} in order.
   */
  release(rule: string, key: string, options: ClientLeaseOptions): Promise<Decision>;
  /** Starts the leases' `leaseMs` again (`POST /v1/renew`): allowed with their new receipt `at`, or denied when no longer held. */
  renew(rule: string, key: string, options: ClientLeaseOptions): Promise<Decision>;
  /** Waits for calls in flight, then closes the sockets; later calls reject. */
  close(): Promise<void>;
  /** True while the circuit breaker answers calls by the policy without asking the service. */
  readonly circuitOpen: boolean;
}

/** The JSON item the service takes. */
interface Item {
  rule: string;
  key: string;
  cost?: number;
  tier?: string;
  at?: number;
}

/** A call waiting for its answer. */
interface Pending {
  op: Op;
  item: Item;
  /** When the caller stops waiting (localMs). */
  deadline: number;
  resolve(d: Decision): void;
  reject(e: unknown): void;
}

/** The calls of one turn, in the order they were made. */
class Calls {
  readonly items: Pending[] = [];

  /** Calls queued (never sent mid-turn: #sendAll cuts them at the service's batch size). */
  get size(): number {
    return this.items.length;
  }
}

/** The one destination of a client's calls: its service. */
const SERVICE = 0;

const CALL_KEYS: ReadonlySet<string> = new Set(CHECK_OPTIONS);
const RECEIPT_KEYS: ReadonlySet<string> = new Set([...CHECK_OPTIONS, "at"]);
const RESET_KEYS: ReadonlySet<string> = new Set(["tier"] satisfies (typeof CHECK_OPTIONS)[number][]);

function checkCall(rule: unknown, key: unknown, options: unknown, keys: ReadonlySet<string>): Item {
  if (typeof rule !== "string" || rule === "") {
    throw new ArgumentError(`rule must be a non-empty string (got ${describeValue(rule)})`);
  }
  checkKey(key);
  const item: Item = { rule, key };
  if (options === undefined) return item;
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ArgumentError(`options must be an object { cost?, tier? } (got ${describeValue(options)})`);
  }
  for (const k of Object.keys(options)) {
    if (!keys.has(k)) throw new ArgumentError(`unknown option \`${k}\` (expected ${[...keys].join(", ")})`);
  }
  const { cost, tier } = options as ClientCheckOptions;
  if (cost !== undefined) {
    checkCost(cost);
    item.cost = cost;
  }
  if (tier !== undefined) {
    if (typeof tier !== "string") throw new ArgumentError(`tier must be a string (got ${describeValue(tier)})`);
    item.tier = tier;
  }
  return item;
}

class Client implements SluiceClient {
  readonly #options: ResolvedOptions;
  readonly #transport: Transport;
  readonly #breaker: Breaker;
  readonly #policy: ClientFailurePolicy;
  #maxBatch: number;
  readonly #calls = new Coalescer<typeof SERVICE, Calls>(
    () => new Calls(),
    (calls) => this.#sendCalls(calls.items),
  );
  /** The sending of the calls #flush just took, if it took any. */
  #sending: Promise<void> | undefined;
  #closed = false;
  readonly #inFlight = new Set<Promise<unknown>>();

  constructor(options: ResolvedOptions) {
    this.#options = options;
    this.#transport = new Transport(options.base, options.token, options.maxSockets);
    this.#breaker = new Breaker(options.breaker);
    this.#policy = new ClientFailurePolicy(options.onError, options.base.origin);
    this.#maxBatch = options.maxBatch;
  }

  /** Settles once the last `reset` has been answered: later calls are sent after it. */
  #barrier: Promise<unknown> = Promise.resolve();

  get circuitOpen(): boolean {
    return this.#breaker.open;
  }

  check(rule: string, key: string, options?: ClientCheckOptions): Promise<Decision> {
    return this.#enqueue("check", rule, key, options);
  }

  peek(rule: string, key: string, options?: ClientCheckOptions): Promise<Decision> {
    return this.#enqueue("peek", rule, key, options);
  }

  async reset(rule: string, key: string, options?: Pick<ClientCheckOptions, "tier">): Promise<void> {
    const item = checkCall(rule, key, options, RESET_KEYS);
    this.#open();
    // Calls queued before the reset go first, and calls queued after it wait for it (the
    // barrier below), so `check; reset; check` reaches the service in that order.
    const run = (async () => {
      await this.#flush();
      await this.#policy.forget(rule, key);
      return this.#track(this.#transport.post("v1/reset", item, this.#options.timeoutMs));
    })();
    this.#barrier = run.catch(() => undefined);
    const reply = await run;
    if (reply.status >= 200 && reply.status < 300) return;
    throw this.#refusalOf(reply, rule);
  }

  refund(rule: string, key: string, options?: ClientRefundOptions): Promise<Decision> {
    return this.#receiptCall("refund", rule, key, options, false);
  }

  release(rule: string, key: string, options: ClientLeaseOptions): Promise<Decision> {
    return this.#receiptCall("release", rule, key, options, true);
  }

  renew(rule: string, key: string, options: ClientLeaseOptions): Promise<Decision> {
    return this.#receiptCall("renew", rule, key, options, true);
  }

  /** A call naming a check's receipt `at` (optional for a refund, required for a lease call). */
  async #receiptCall(
    call: "refund" | "release" | "renew",
    rule: string,
    key: string,
    options: ClientRefundOptions | undefined,
    required: boolean,
  ): Promise<Decision> {
    const item = checkCall(rule, key, options, RECEIPT_KEYS);
    const at = options?.at;
    if (at !== undefined || required) {
      if (typeof at !== "number" || !Number.isFinite(at)) {
        throw new ArgumentError(
          `${call} \`at\` must be a finite instant in ms (a decision's \`at\`) (got ${describeValue(at)})`,
        );
      }
      item.at = at;
    }
    this.#open();
    // In order with the calls around it, as reset.
    const run = (async () => {
      await this.#flush();
      return this.#track(this.#transport.post(`v1/${call}`, item, this.#options.timeoutMs));
    })();
    this.#barrier = run.catch(() => undefined);
    const reply = await run;
    if (reply.status === 200) return readDecision(reply.body);
    throw this.#refusalOf(reply, rule);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#flush();
    this.#closed = true;
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
    this.#transport.close();
  }

  #open(): void {
    if (this.#closed) throw new StoreError("this sluice client is closed");
  }

  #track<T>(promise: Promise<T>): Promise<T> {
    this.#inFlight.add(promise);
    void promise.then(
      () => this.#inFlight.delete(promise),
      () => this.#inFlight.delete(promise),
    );
    return promise;
  }

  #enqueue(op: Op, rule: unknown, key: unknown, options: unknown): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) => {
      const item = checkCall(rule, key, options, CALL_KEYS);
      this.#open();
      const deadline = localMs() + this.#options.timeoutMs;
      // Sent on the next macrotask, after this turn's synchronous code and promise
      // continuations: all the calls a request handler (or a Promise.all) makes share one request.
      const calls = this.#calls.open(SERVICE, undefined);
      calls.items.push({ op, item, deadline, resolve, reject });
      this.#calls.added(SERVICE, calls);
    });
  }

  /** Sends what is queued now; settles once it has been answered. */
  #flush(): Promise<void> {
    this.#sending = undefined;
    this.#calls.flush();
    const sending = this.#sending ?? Promise.resolve();
    this.#sending = undefined;
    return sending;
  }

  /** Sends one turn's calls: consecutive calls of one kind as one batch, batches in order. */
  #sendCalls(queue: Pending[]): void {
    const groups: Pending[][] = [];
    for (const p of queue) {
      const last = groups.at(-1);
      if (last !== undefined && last[0]?.op === p.op) last.push(p);
      else groups.push([p]);
    }
    const barrier = this.#barrier;
    this.#sending = this.#track(
      (async () => {
        await barrier; // a reset issued before these calls has reached the service
        for (const group of groups) await this.#sendAll(group);
      })(),
    );
  }

  /**
   * Sends one kind of call, split at the service's batch size. Chunks go one after the other:
   * the service decides a batch in order, and a turn's calls must be decided in the order they
   * were made (`check(k, {cost: 5})` then `check(k, {cost: 1})` on a limit of 5 admits the first).
   */
  async #sendAll(group: Pending[]): Promise<void> {
    // Cut first: a 413 while sending lowers #maxBatch, and the chunk it refused re-splits itself.
    const size = this.#maxBatch;
    const chunks: Pending[][] = [];
    for (let i = 0; i < group.length; i += size) chunks.push(group.slice(i, i + size));
    for (const chunk of chunks) await this.#send(chunk);
  }

  async #send(chunk: Pending[]): Promise<void> {
    const op = (chunk[0] as Pending).op;
    const wait = Math.min(...chunk.map((p) => p.deadline)) - localMs();
    if (!this.#breaker.allow()) {
      // Not a failed round trip (nothing was sent): counting it would push the probe back on
      // every call, and a busy client would never see the service return.
      this.#outage(chunk, new StoreError("sluice service circuit breaker is open (recent calls failed)"));
      return;
    }
    let reply: Reply;
    try {
      if (wait < 1) throw timeoutError("sluice service", this.#options.timeoutMs);
      reply = await this.#transport.post(
        `v1/${op}`,
        chunk.map((p) => p.item),
        Math.ceil(wait),
      );
    } catch (error) {
      this.#breaker.failure();
      this.#outage(chunk, error as StoreError);
      return;
    }
    const { status, body } = reply;
    if (status >= 500) {
      this.#breaker.failure();
      this.#outage(chunk, this.#refusalOf(reply, "") as StoreError);
      return;
    }
    this.#breaker.success();
    if (status === 200) {
      this.#answer(chunk, body);
      return;
    }
    const problem = readProblem(body);
    if (status === 413 && chunk.length > 1) {
      // Nothing was decided: learn the service's batch size (or halve) and send again.
      const max =
        typeof problem.maxBatch === "number"
          ? problem.maxBatch
          : Number(/at most (\d+) checks/.exec(problem.detail ?? "")?.[1] ?? Number.NaN);
      const next = Number.isSafeInteger(max) && max >= 1 && max < chunk.length ? max : Math.ceil(chunk.length / 2);
      if (slugOf(problem) === "batch-too-large") this.#maxBatch = Math.min(this.#maxBatch, next);
      // In order, as #sendAll: each part is decided before the next is sent.
      for (let i = 0; i < chunk.length; i += next) await this.#send(chunk.slice(i, i + next));
      return;
    }
    const index = problem.index;
    if ((status === 400 || status === 404) && typeof index === "number" && chunk[index] !== undefined) {
      // The service validates a whole batch before deciding any of it, so the others are
      // untouched: refuse the bad one and send the rest again.
      const bad = chunk[index] as Pending;
      bad.reject(refusal(status, problem, bad.item.rule));
      const rest = chunk.filter((_, i) => i !== index);
      if (rest.length > 0) await this.#send(rest);
      return;
    }
    for (const p of chunk) p.reject(refusal(status, problem, p.item.rule));
  }

  #answer(chunk: Pending[], body: unknown): void {
    if (!Array.isArray(body) || body.length !== chunk.length) {
      this.#outage(
        chunk,
        new StoreError(`the service answered ${chunk.length} calls with ${JSON.stringify(body)?.slice(0, 200)}`),
      );
      return;
    }
    chunk.forEach((p, i) => {
      try {
        const d = readDecision(body[i]);
        this.#policy.learn(p.item.rule, d);
        p.resolve(p.op === "check" ? this.#withLease(d, p.item) : d);
      } catch (error) {
        this.#outage([p], error as StoreError);
      }
    });
  }

  /**
   * An allowed check's `release()` and `renew()` (src/lease.ts: idempotent, in order), for its
   * leases on a rule with a concurrency member; on any other rule they reject with the
   * service's ArgumentError (the client does not know the rule's specs).
   */
  #withLease(d: Decision, item: Item): Decision {
    const { rule, key } = item;
    const options = (at: number): ClientLeaseOptions => ({
      at,
      ...(item.cost === undefined ? {} : { cost: item.cost }),
      ...(item.tier === undefined ? {} : { tier: item.tier }),
    });
    return holdLease(
      d,
      (op, at) => this[op](rule, key, options(at)),
      () => this.peek(rule, key, item.tier === undefined ? undefined : { tier: item.tier }),
    );
  }

  /** Answers calls the service could not make by the failure policy. */
  #outage(chunk: Pending[], error: StoreError): void {
    for (const p of chunk) {
      this.#policy.decide(p.item.rule, p.item.key, p.item.cost ?? 1, p.op, error).then(p.resolve, p.reject);
    }
  }

  #refusalOf(reply: Reply, rule: string): SluiceError {
    return refusal(reply.status, readProblem(reply.body), rule);
  }
}

/**
 * Connects to a `sluice serve` at `options.url`. No request is made until the first call.
 *
 * @example
 * const sluice = createClient({ url: "http://127.0.0.1:8080", timeoutMs: 200, onError: "allow" });
 * const d = await sluice.check("api", userId);
 * if (!d.allowed) reply429(d.retryAfterMs);
 */
export function createClient(options: ClientOptions): SluiceClient {
  return new Client(resolveOptions(options));
}
