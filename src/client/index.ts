/**
 * `sluice/client`: call a central `sluice serve` from Node, with batching, keep-alive,
 * timeouts and RedisStore's failure policies.
 */

export type { FallbackLimiter, FixedPolicy } from "../stores/remote/failure-policy.ts";
export {
  type ClientCheckOptions,
  type ClientLeaseOptions,
  type ClientRefundOptions,
  createClient,
  type SluiceClient,
} from "./client.ts";
export type { ClientOnError, ClientOptions } from "./options.ts";
