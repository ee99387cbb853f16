/**
 * The deny cache's subscription lives on a duplicate of the user's client, a connection the
 * user never sees. A script that quits its own client without `store.close()` would then be
 * kept alive by that hidden connection forever (scripts, test runners and serverless handlers
 * hang). So the duplicate follows its parent: once the parent client has ended for good (its
 * owner quit or closed it, or it gave up reconnecting), the subscription closes itself.
 */
import type { Emitter } from "./client.ts";

/**
 * Calls `onEnd` once when `parent` has ended for good: on one of `events`, when `ended()` says
 * so (events such as node-redis Cluster's 'disconnect' are also sent for passing trouble).
 * Returns a function that stops listening (when the subscription is closed first).
 */
export function onParentEnd(parent: Emitter, events: string[], ended: () => boolean, onEnd: () => void): () => void {
  let done = false;
  const listener = () => {
    if (done || !ended()) return;
    stop();
    onEnd();
  };
  const stop = () => {
    done = true;
    for (const name of events) parent.off?.(name, listener);
  };
  for (const name of events) parent.on(name, listener);
  return stop;
}
