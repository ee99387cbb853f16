/**
 * `sluice serve` protecting itself (`--shed-limit`, `--shed-max-delay`): the `loadShed`
 * shedder of src/shed, unchanged, over both doors. Each call gets a priority by what it is:
 * - probes (`/healthz`, `/healthcheck`, gRPC health) are never shed: a load balancer must see an
 *   overloaded service as alive, not restart it;
 * - `/metrics` is 1, with a share of the limit held back for it: an overload must stay visible;
 * - decisions (`/v1/check` and the other calls on keys, forward-auth, `ShouldRateLimit`) are 5;
 * - everything else (status page, `/v1/status`, `/v1/rules`, `/openapi.json`) is 9, shed first.
 * A shed HTTP call is answered 503 with `Retry-After` and problem+json, as the middleware answers;
 * a shed gRPC call UNAVAILABLE (Envoy then applies its `failure_mode_deny`).
 */
import type { ServerResponse } from "node:http";
import { releaseOnEnd, type ShedAnswer, shedAnswer, writeShed } from "../http/shed.ts";
import { Shedder } from "../shed/shedder.ts";

/** What `--shed-limit` and `--shed-max-delay` set. */
export interface ServeShedOptions {
  /** Calls in flight over both doors: a number, or "adaptive" (follows measured latency). */
  limit?: number | "adaptive";
  /** Shed from the least critical calls up while the event loop's mean delay passes this (ms). */
  maxEventLoopDelayMs?: number;
}

/** The label of a gRPC rate limit call, for priorities and metrics. */
export const GRPC_CHECK = "grpc:ShouldRateLimit";

const PROBES = new Set(["/healthz", "/healthcheck"]);
const DECISIONS = new Set([
  "/v1/check",
  "/v1/peek",
  "/v1/reset",
  "/v1/refund",
  "/v1/release",
  "/v1/renew",
  "/v1/forward-auth",
  GRPC_CHECK,
]);

/** The priority of a call by its route (src/server/router.ts `routeOf`) or {@link GRPC_CHECK}. */
export function priorityOfRoute(route: string): number {
  if (route === "/metrics") return 1;
  return DECISIONS.has(route) ? 5 : 9;
}

/** The service's shedder over both doors. */
export class ServiceShedder {
  readonly shedder: Shedder<string>;
  readonly #answer: ShedAnswer;

  constructor(options: ServeShedOptions) {
    this.shedder = new Shedder<string>({
      ...(options.limit === undefined ? {} : { limit: options.limit }),
      ...(options.maxEventLoopDelayMs === undefined ? {} : { maxEventLoopDelayMs: options.maxEventLoopDelayMs }),
      priority: priorityOfRoute,
      // Held back for /metrics (and nothing more critical is counted): an overload stays visible.
      reserve: { 1: 0.05 },
      name: "sluice_serve",
    });
    this.#answer = shedAnswer(this.shedder as Shedder<never>);
  }

  /** Admits an HTTP call (releasing when its response ends); false when it was answered 503. */
  admitHttp(route: string, res: ServerResponse): boolean {
    if (PROBES.has(route)) return true;
    // Without a fleet store the answer is never a promise.
    const release = this.shedder.admit(route);
    if (typeof release !== "function") {
      writeShed(res, this.#answer);
      return false;
    }
    releaseOnEnd(res, release);
    return true;
  }

  /** Runs a gRPC rate limit call if admitted; undefined when it is shed. */
  admitGrpc(): ((ok: boolean) => void) | undefined {
    const release = this.shedder.admit(GRPC_CHECK);
    if (typeof release !== "function") return undefined;
    return (ok) => release(ok);
  }

  /** `Retry-After` of a shed call, in seconds. */
  get retryAfterSeconds(): number {
    return this.shedder.retryAfterSeconds;
  }

  /** The shedder's metrics as Prometheus text, for `/metrics`. */
  prometheus(): string {
    return this.shedder.prometheus();
  }

  /** Stops its event-loop sampler. */
  close(): void {
    this.shedder.close();
  }
}
