/**
 * A failing store says so, once: the first check a remote store (Redis, the cluster store, the
 * service client) cannot decide emits one `process.emitWarning` naming the cause and the policy
 * that answered, so a forgotten `connect()` or a wrong address is not silent. Later failures
 * are visible per check in `decision.failure` and in metrics; warning on each would flood logs.
 */

import { warn } from "../../core/warn.ts";

/** `process.emitWarning` code of a store's first failure. */
export const STORE_FAILURE_WARNING = "SLUICE_STORE_FAILURE";

/**
 * Returns a reporter that emits one warning, on its first call only: `<store>: <cause>; checks
 * are answered by <policy>`. `store` names the store (e.g. `RedisStore (prefix "sluice:")`).
 */
export function firstFailureWarning(store: string, policy: string): (cause: Error) => void {
  let warned = false;
  return (cause) => {
    if (warned) return;
    warned = true;
    const message = `${store} failed: ${cause.message.replace(/\.$/, "")}. Until it answers again, checks are answered by ${policy}. This warning is emitted once per store.`;
    warn(message, STORE_FAILURE_WARNING);
  };
}
