/**
 * Rules in words, for `check-config` and the status page: what a spec admits, said the way a
 * person choosing a limit thinks about it ("at most 100 per rolling minute; bursts up to 10").
 */
import type { AlgorithmSpec } from "../index.ts";
import { durationWords, rateWords } from "./units.ts";

/** One spec in words. */
export function describeSpec(spec: AlgorithmSpec): string {
  switch (spec.algorithm) {
    case "fixed-window":
      if (spec.anchor === "first") {
        return `at most ${spec.limit} per ${durationWords(spec.windowMs)} from each key's first counted request (up to ${2 * spec.limit} across a window's end)`;
      }
      return `at most ${spec.limit} per clock-aligned ${durationWords(spec.windowMs)} (up to ${2 * spec.limit} across a window boundary)`;
    case "sliding-log":
      return `at most ${spec.limit} per rolling ${durationWords(spec.windowMs)} (exact)`;
    case "sliding-window":
      return `about ${spec.limit} per rolling ${durationWords(spec.windowMs)} (two-window estimate)`;
    case "token-bucket":
      return `${rateWords(spec.refillPerSecond)} on average; bursts up to ${spec.capacity}`;
    case "gcra": {
      const perMs = spec.periodMs / spec.limit;
      const spacing = Number.isInteger(perMs) ? `${perMs} ms` : `${perMs.toFixed(1)} ms`;
      return `${spec.limit} per ${durationWords(spec.periodMs)}, one every ${spacing}; bursts up to ${spec.burst ?? spec.limit}`;
    }
    case "concurrency":
      return `at most ${spec.limit} in flight at once (a lease not released expires after ${durationWords(spec.leaseMs ?? 60_000)})`;
    case "leaky-bucket":
      return `drains ${rateWords(spec.leakPerSecond)}; queues up to ${spec.capacity} (admitted requests wait delayMs)`;
  }
}

/** A rule (one spec or a composite) in words; composite members are joined with "and". */
export function describeRule(specs: readonly AlgorithmSpec[]): string {
  if (specs.length === 1) return describeSpec(specs[0] as AlgorithmSpec);
  return `all of: ${specs.map(describeSpec).join("; and ")}`;
}
