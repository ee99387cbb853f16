import type { Upstream } from "../support/upstream-server.mjs";

/** Starts an upstream answering X-RateLimit-Reset on a grid anchored at its first request (reset-upstream.mjs). */
export function startResetUpstream(options: {
  limit: number;
  windowMs?: number;
  latencyMs?: number;
}): Promise<Upstream>;
