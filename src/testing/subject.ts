/**
 * What the conformance kit drives: a rule service (RateLimiterService over the store under test,
 * or a client of a remote service) and the rules a case declares. Optional calls a subject lacks
 * make the cases that need them inapplicable, listed with the reason, never silently dropped.
 */
import type { Decision } from "../algorithms/decision.ts";
import type { BanPolicy } from "../core/ban.ts";
import type { LimitSpec } from "../core/spec.ts";

/** A rule a case declares: its spec (an array is a composite), an optional ban and tiers. */
export interface ConformanceRule {
  /** The rule's spec, or its members. */
  spec: LimitSpec | LimitSpec[];
  /** Escalation after repeated denials. */
  ban?: BanPolicy;
  /** Alternative specs chosen per call with `{ tier }`. */
  tiers?: Record<string, LimitSpec | LimitSpec[]>;
}

/** Per-call options the kit passes. */
export interface SubjectCallOptions {
  /** Units (default 1). */
  cost?: number;
  /** The rule's tier. */
  tier?: string;
}

/** A rule service the kit can drive (RateLimiterService has every call). */
export interface ConformanceSubject {
  /** Takes `cost` units of `rule` for `key`. */
  check(rule: string, key: string, options?: SubjectCallOptions): Decision | Promise<Decision>;
  /** What `check` would say; changes nothing. */
  peek(rule: string, key: string, options?: SubjectCallOptions): Decision | Promise<Decision>;
  /** Forgets `key` under `rule`. */
  reset(rule: string, key: string): unknown;
  /** Gives units back (with `at`, the receipt of the check that took them). */
  refund?(rule: string, key: string, options: { cost: number; at?: number }): Decision | Promise<Decision>;
  /** Replaces a rule's spec, keeping state of the same shape. */
  updateRule?(name: string, spec: LimitSpec | LimitSpec[], options?: { ban?: BanPolicy }): unknown;
  /** rate-limiter-flexible's penalty: takes units whether or not they fit. */
  penalty?(rule: string, key: string, options: { cost: number }): Decision | Promise<Decision>;
  /** rate-limiter-flexible's block: refuses the key for `ms`. */
  block?(rule: string, key: string, ms: number): Decision | Promise<Decision>;
  /** rate-limiter-flexible's get: a peek of one unit, or null for a key like a fresh one. */
  get?(rule: string, key: string): Decision | null | Promise<Decision | null>;
  /** Gives back `cost` leases (a concurrency rule's) acquired, or last renewed, at `at`. */
  release?(rule: string, key: string, options: { cost: number; at: number }): Decision | Promise<Decision>;
  /** Renews `cost` leases acquired, or last renewed, at `at`: they count from now on. */
  renew?(rule: string, key: string, options: { cost: number; at: number }): Decision | Promise<Decision>;
}

/** Calls a case may need beyond check, peek and reset. */
export type Feature = "refund" | "receipts" | "updateRule" | "flexible" | "failure" | "leases";
