/**
 * Keeping a Cluster subscription honest: a cluster client's subscription lives on one node and
 * moves when that node fails, and messages published meanwhile may be missed. So any sign of
 * node trouble reports the link lost (the deny cache clears and stops answering) until the
 * subscription has been made again.
 */
import type { Emitter, LinkListener } from "./client.ts";

/** Pause before re-subscribing after cluster trouble (lets the client settle on a new node). */
const RELINK_DELAY_MS = 100;

/**
 * On any of `events` (trouble somewhere in a cluster subscriber), the link is reported lost and,
 * shortly after, `resubscribe()` is run; once it succeeds the link is reported live again.
 * Messages may have been missed in between, which is why the cache clears on both reports.
 * Returns a function that stops it (when the subscription is closed).
 */
export function relinkOn(
  events: Emitter,
  names: string[],
  onLink: LinkListener,
  resubscribe: () => Promise<unknown>,
): () => void {
  let scheduled = false;
  let stopped = false;
  const schedule = () => {
    if (scheduled || stopped) return;
    scheduled = true;
    setTimeout(attempt, RELINK_DELAY_MS).unref();
  };
  const attempt = () => {
    scheduled = false;
    if (stopped) return;
    resubscribe().then(() => {
      if (!stopped) onLink(true);
    }, schedule);
  };
  for (const name of names) {
    events.on(name, () => {
      onLink(false);
      schedule();
    });
  }
  return () => {
    stopped = true;
  };
}
