/**
 * One rule bound to a RedisStore: everything a check needs that does not depend on the key
 * (script parameters, the record key infix, limits, failure policy) is computed here, once, so
 * a check only hashes its key into a tag and hands the batcher a few strings.
 */
import type { Decision } from "../../algorithms/decision.ts";
import type { BanPolicy } from "../../ban.ts";
import type { Operation } from "../../decide-rule.ts";
import { StoreError } from "../../errors.ts";
import type { AlgorithmSpec } from "../../spec.ts";
import type { BoundRule, RuleBinding } from "../../store.ts";
import type { Batch, Batcher, BatchRule } from "./batcher.ts";
import type { Breaker } from "./breaker.ts";
import type { RedisCommands } from "./client.ts";
import { type FailurePolicy, failurePolicy, type OnError } from "./failure.ts";
import { ALGORITHM_CODES, hashTag, ruleDigest, slotOf, tagSeed } from "./keys.ts";
import { replyWidth } from "./reply.ts";

/** The two script parameters of a member (see the constructor of each Lua twin). */
function memberParams(spec: AlgorithmSpec): [string, string] {
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return [String(spec.limit), String(spec.windowMs)];
    case "token-bucket":
      return [String(spec.capacity), String(spec.refillPerSecond)];
    case "gcra":
      // The same double the TS step computes, passed exactly (shortest round-trip text).
      return [String(spec.periodMs / spec.limit), String(spec.burst ?? spec.limit)];
    case "leaky-bucket":
      return [String(1000 / spec.leakPerSecond), String(spec.capacity)];
  }
}

/** The three ban parameters of a rule (after 0: no ban; see rule.lua). */
function banParams(ban: BanPolicy | undefined): [string, string, string] {
  return ban === undefined ? ["0", "0", "0"] : [String(ban.after), String(ban.withinMs), String(ban.forMs)];
}

/** What a bound rule shares with its store. */
export interface StoreParts {
  readonly prefix: string;
  readonly timeoutMs: number;
  readonly commands: RedisCommands;
  readonly breaker: Breaker;
  readonly batcher: Batcher;
  readonly onError: OnError;
}

/** A rule bound to a RedisStore (a BoundRule for the limiter, a BatchRule for the batcher). */
export class RedisBoundRule implements BoundRule, BatchRule {
  readonly limits: readonly number[];
  readonly hasBan: boolean;
  readonly width: number;
  readonly descriptor: readonly string[];
  readonly infixes: readonly string[];
  batch: Batch | undefined = undefined;
  batchIndex = "";
  readonly #store: StoreParts;
  readonly #policy: FailurePolicy;
  readonly #seed: number;

  constructor(store: StoreParts, rule: RuleBinding) {
    this.#store = store;
    this.#policy = failurePolicy(store.onError, rule);
    this.#seed = tagSeed(rule.id);
    const { members, ban, shape } = rule.rule;
    this.limits = members.map((a) => a.limit);
    this.hasBan = ban !== undefined;
    this.width = replyWidth(members.length, this.hasBan);
    // One key per (rule, key) record; the digest covers the rule's shape (algorithms, windows,
    // ban), so a record written under one shape is never read under another.
    this.infixes = [ruleDigest(rule.id, shape)];
    this.descriptor = [
      String(members.length),
      ...banParams(ban),
      ...members.flatMap((a) => [ALGORITHM_CODES[a.kind], ...memberParams(a.spec)]),
    ];
    // Limiters may call these detached (`const check = bound.check`), as the memory store allows.
    this.check = this.check.bind(this);
    this.reset = this.reset.bind(this);
  }

  /** Runs `op` for `cost` units of `key` in Redis (batched), or by the failure policy. */
  check(key: string, cost: number, now: number | undefined, op: Operation): Promise<Decision> {
    const store = this.#store;
    if (!store.breaker.allow()) {
      return this.fail(key, cost, op, new StoreError("Redis circuit breaker is open (recent checks failed)"));
    }
    const tag = hashTag(this.#seed, key);
    const group = store.commands.cluster ? slotOf(tag) : 0;
    const head = `${store.prefix}{${tag}}`;
    return store.batcher.submit(this, group, head, key, cost, op, now === undefined ? "" : String(now));
  }

  /**
   * The failure policy's decision (or rejection, under "throw"). A refund Redis could not make
   * is answered like a peek: nothing was given back.
   */
  fail(key: string, cost: number, op: Operation, error: StoreError): Promise<Decision> {
    return this.#policy.decide(key, cost, op !== "check", error);
  }

  /** Deletes `key`'s record (and its state in the fallback limiter), within `timeoutMs`. */
  async reset(key: string): Promise<void> {
    const store = this.#store;
    const head = `${store.prefix}{${hashTag(this.#seed, key)}}`;
    const keys = this.infixes.map((infix) => head + infix + key);
    await this.#policy.forget(key);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new StoreError(`Redis did not answer within timeoutMs (${store.timeoutMs} ms)`, { timeout: true })),
        store.timeoutMs,
      );
    });
    try {
      await Promise.race([store.commands.del(keys), timeout]);
    } catch (error) {
      throw error instanceof StoreError
        ? error
        : new StoreError(`Redis reset failed: ${error instanceof Error ? error.message : String(error)}`, {
            cause: error,
          });
    } finally {
      clearTimeout(timer);
    }
  }

  /** Nothing to release: state lives in Redis and expires on its own. */
  release(): void {}
}
