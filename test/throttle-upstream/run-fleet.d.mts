import type { UpstreamEntry } from "../support/upstream-server.mjs";

/** What a fleet run shows. */
export interface FleetOutcome {
  /** What each caller finally got (a status, or the error's text). */
  statuses: Array<number | string>;
  /** Pauses the processes took (sluice only). */
  pauses: number;
  /** Requests sent by a process that knew the key paused at that instant (sluice only). */
  sentPaused: number;
  /** By process id (sluice only): when it heard each pause (its own 429's, or the store's word), by Date.now(). */
  heard: Record<string, number[]>;
  /** Requests the upstream saw, and how many it admitted. */
  requests: number;
  ok: number;
  /** 429s it answered; windows that saw any; the most in one window. */
  tooMany: number;
  windowsWith429: number;
  most429InAWindow: number;
  /** For each 429 after its window's first, how many ms after that first one it arrived. */
  after429Ms: number[];
  elapsedMs: number;
  /** Every request the upstream saw, in arrival order. */
  log: UpstreamEntry[];
}

/** Runs `processes` fleet-child.mjs processes of `mode` against a fresh upstream simulator. */
export function runFleet(options: {
  mode: "sluice" | "plain" | "bottleneck";
  redisUrl: string;
  prefix: string;
  processes?: number;
  jobs: number;
  options?: object;
  limit: number;
  windowMs?: number;
  header?: "retry-after" | "ratelimit" | "x-ratelimit";
}): Promise<FleetOutcome>;
