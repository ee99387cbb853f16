// Types of shed-load.mjs (plain JavaScript so bench/shed.mjs runs it without a build).
import type { Options, Result } from "autocannon";

/** A running test/support/shed-server.mjs. */
export interface ShedServer {
  url: string;
  stats(): Promise<{
    shed: { limit?: number; inFlight: number; shed: number; shedByPriority: number[] } | undefined;
    served: number[];
    cpu: NodeJS.CpuUsage;
    limits: (number | undefined)[];
  }>;
  stop(): Promise<void>;
}
/** Starts a shed-server.mjs with `config`. */
export function startShedServer(config: Record<string, unknown>): Promise<ShedServer>;
/** What a load run saw: the 2xx latencies (ms) and the counts by status. */
export interface LoadRun {
  ok: number[];
  statuses: Record<number, number>;
}
/** Runs autocannon at `url`. */
export function drive(url: string, options: Omit<Options, "url">): Promise<LoadRun & { result: Result }>;
/** An open-loop load at `rate` requests a second. */
export function openLoop(
  url: string,
  options: { rate: number; seconds: number; timeoutMs?: number; headers?: Record<string, string> },
): Promise<LoadRun & { sent: number; timeouts: number; errors: number }>;
/** The `q` quantile of `values`. */
export function quantile(values: number[], q: number): number;
