/**
 * One rule bound to a RedisStore: everything a check needs that does not depend on the key
 * (script parameters, the record key infix, limits, failure policy) is computed here, once, so
 * a check only hashes its key into a tag, asks the deny cache and hands the batcher a few strings.
 */

import { leaseMsOf } from "../../algorithms/concurrency.ts";
import type { Decision } from "../../algorithms/decision.ts";
import { emissionInterval } from "../../algorithms/gcra.ts";
import type { BanPolicy } from "../../core/ban.ts";
import type { Operation } from "../../core/decide-rule.ts";
import { StoreError } from "../../core/errors.ts";
import type { AlgorithmSpec } from "../../core/spec.ts";
import type { BoundRule, RuleBinding } from "../../core/store.ts";
import { type DecideFailed, type FailurePolicy, type OnError, rulePolicy } from "../remote/failure-policy.ts";
import { timeoutError, withTimeout } from "../remote/with-timeout.ts";
import type { BatchRule } from "./batch.ts";
import type { Batcher } from "./batcher.ts";
import type { RedisCommands } from "./client.ts";
import type { DenyCache } from "./deny-cache.ts";
import type { Invalidation } from "./invalidation.ts";
import { hashTag, memberCode, recordKeyOf, ruleDigest, slotOf, tagSeed } from "./keys.ts";
import type { Nodes } from "./nodes.ts";
import { replyWidth } from "./reply.ts";

/** The three script parameters of a member (see the constructor of each Lua twin; unused ones are "0"). */
function memberParams(spec: AlgorithmSpec): [string, string, string] {
  switch (spec.algorithm) {
    case "fixed-window":
    case "sliding-log":
    case "sliding-window":
      return [String(spec.limit), String(spec.windowMs), "0"];
    case "concurrency":
      // The sliding-log twin with the lease length as its window (see concurrency.lua).
      return [String(spec.limit), String(leaseMsOf(spec)), "0"];
    case "token-bucket":
      return [String(spec.capacity), String(spec.refillPerSecond), "0"];
    case "gcra":
    case "leaky-bucket": {
      // The exact interval the TS step uses, as integer ticks (see emissionInterval).
      const { per, den, burst } = emissionInterval(spec);
      return [String(per), String(den), String(burst)];
    }
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
  readonly nodes: Nodes;
  readonly batcher: Batcher;
  readonly onError: OnError;
  /** Hears every failure (the store's once-only warning). */
  readonly onFailure: (error: StoreError) => void;
  /** The deny cache (undefined with `denyCache: false`). */
  readonly denyCache: DenyCache | undefined;
  /** Where resets and releases are published for every node's cache (whether or not this store has one). */
  readonly invalidation: Invalidation;
}

function storeError(what: string, error: unknown): StoreError {
  return error instanceof StoreError
    ? error
    : new StoreError(`Redis ${what} failed: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
}

/** A rule bound to a RedisStore (a BoundRule for the limiter, a BatchRule for the batcher). */
export class RedisBoundRule implements BoundRule, BatchRule {
  readonly limits: readonly number[];
  readonly hasBan: boolean;
  readonly leased: boolean;
  readonly width: number;
  readonly descriptor: readonly string[];
  readonly infixes: readonly string[];
  readonly #id: string;
  readonly #store: StoreParts;
  readonly #policy: FailurePolicy;
  readonly #seed: number;

  constructor(store: StoreParts, rule: RuleBinding) {
    this.#id = rule.id;
    this.#store = store;
    this.#policy = rulePolicy(store.onError, rule, store.onFailure);
    this.#seed = tagSeed(rule.id);
    const { members, ban, shape } = rule.rule;
    this.limits = members.map((a) => a.limit);
    this.hasBan = ban !== undefined;
    this.leased = members.some((a) => a.renew !== undefined);
    this.width = replyWidth(members.length, this.hasBan);
    // One key per (rule, key) record; the digest covers the rule's shape (algorithms, windows,
    // ban), so a record written under one shape is never read under another.
    this.infixes = [ruleDigest(rule.id, shape)];
    this.descriptor = [
      String(members.length),
      ...banParams(ban),
      ...members.flatMap((a) => [memberCode(a.spec), ...memberParams(a.spec)]),
    ];
    // Limiters may call these detached (`const check = bound.check`), as the memory store allows.
    this.check = this.check.bind(this);
    this.reset = this.reset.bind(this);
    this.release = this.release.bind(this);
  }

  /** Runs `op` for `cost` units of `key`: from the deny cache, in Redis (batched), or by the failure policy. */
  check(key: string, cost: number, now: number | undefined, op: Operation, at?: number): Promise<Decision> {
    // A refund frees units: it never comes from the deny cache, and it clears what caches hold.
    if (op === "refund") return this.#refund(key, cost, now, at);
    // A block may shorten a ban the caches hold: they forget the key, as for a refund.
    if (op === "block") return this.#refund(key, cost, now, undefined, "block");
    // A penalty must reach Redis to take its units; a get reports the record as Redis holds it.
    if (op === "penalty" || op === "get") return this.#send(key, cost, now, op);
    // Leases are never in the deny cache (below): a release or renewal goes straight to Redis.
    if (op === "release" || op === "renew") return this.#send(key, cost, now, op, at);
    const cached = this.#store.denyCache?.lookup(this, this.#id, key, cost, now);
    if (cached !== undefined) return Promise.resolve(cached);
    return this.#send(key, cost, now, op);
  }

  /** Gives units back (or blocks) in Redis, then tells every node's deny cache the key may pass again. */
  async #refund(
    key: string,
    cost: number,
    now: number | undefined,
    at?: number,
    op: "refund" | "block" = "refund",
  ): Promise<Decision> {
    const store = this.#store;
    store.denyCache?.invalidate(this.#id, key);
    const decision = await this.#send(key, cost, now, op, at);
    if (decision.failure === undefined) await store.invalidation.publish(this.#id, key).catch(() => undefined);
    return decision;
  }

  /** Hands the call to the batcher for its slot's node, or to the policy while that node's breaker is open. */
  #send(key: string, cost: number, now: number | undefined, op: Operation, at?: number): Promise<Decision> {
    const store = this.#store;
    const tag = hashTag(this.#seed, key);
    const group = store.commands.cluster ? slotOf(tag) : 0;
    const node = store.nodes.forSlot(group);
    if (!node.breaker.allow()) {
      const where = node.address === "" ? "" : ` for node ${node.address}`;
      return this.fail(
        key,
        cost,
        now,
        op,
        new StoreError(`Redis circuit breaker is open${where} (recent checks failed)`),
        at,
      );
    }
    return store.batcher.submit(this, group, node, `${store.prefix}{${tag}}`, key, cost, op, now, at);
  }

  /** The failure policy's decision (or rejection, under "throw"); `at` is the call's receipt. */
  fail(...call: Parameters<DecideFailed>): Promise<Decision> {
    return this.#policy.decide(...call);
  }

  /** Keeps a denial Redis made, so repeats are answered locally until its retryAfterMs. */
  denied(key: string, cost: number, now: number | undefined, sentAt: number, decision: Decision): void {
    const store = this.#store;
    if (store.denyCache === undefined) return;
    // Only a denial whose every figure is known until its retryAfterMs is kept: one unit of a
    // one-member rule without a ban, with a finite wait. Under a ban every denial must reach
    // Redis to count toward it; a costlier denial's `remaining` can grow while it still denies;
    // a composite's other members recover meanwhile; an endless denial's figures move on.
    // A blocked answer (banned: a rule without a ban, src/core/block.ts) is no member denial to replay.
    // A lease rule's denial lasts until a release no cache hears of (its retryAfterMs is only an
    // upper bound): never kept.
    if (
      this.leased ||
      this.hasBan ||
      decision.banned === true ||
      cost !== 1 ||
      this.limits.length > 1 ||
      !Number.isFinite(decision.retryAfterMs)
    ) {
      return;
    }
    if (!store.denyCache.live) {
      store.invalidation.start();
      return;
    }
    store.denyCache.remember(this, this.#id, key, cost, now, sentAt, decision);
  }

  /**
   * Deletes `key`'s state in every member (and in the fallback), within `timeoutMs`, then tells
   * every node's deny cache (this one's at once, before and after the delete).
   */
  async reset(key: string): Promise<void> {
    const store = this.#store;
    const head = `${store.prefix}{${hashTag(this.#seed, key)}}`;
    const tail = recordKeyOf(key);
    const keys = this.infixes.map((infix) => head + infix + tail);
    store.denyCache?.invalidate(this.#id, key);
    await this.#policy.forget(key);
    try {
      await withTimeout(store.commands.del(keys), store.timeoutMs, () => {
        throw timeoutError("Redis", store.timeoutMs);
      });
      await store.invalidation.publish(this.#id, key);
    } catch (error) {
      throw storeError("reset", error);
    }
  }

  /** State lives in Redis and expires on its own; other nodes' deny caches forget this rule. */
  release(): void {
    this.#policy.release();
    const store = this.#store;
    store.denyCache?.invalidate(this.#id, null);
    store.invalidation.publish(this.#id, null).catch(() => undefined);
  }
}
