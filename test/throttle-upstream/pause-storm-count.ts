// Counts an upstream simulator's 429s per pause for the requests a fleet sent after its first
// pause ended (the start's own burst, and requests already sent before the fleet heard the first
// 429, are not a pause's end): for the pause-end storm tests.
import type { UpstreamEntry } from "../support/upstream-server.mjs";

/** When a request was sent: the "@<ms>" its `x-job` header ends with, else when the upstream read it. */
function sentAt(e: UpstreamEntry): number {
  const at = e.job?.lastIndexOf("@") ?? -1;
  return at < 0 ? e.at : Number(e.job?.slice(at + 1));
}

/**
 * The requests sent after the first pause ended (the first 429 paused the fleet for its
 * Retry-After: the seconds to its window's end, rounded up, as upstream-server.mjs answers) and
 * their 429s per upstream window (each window's 429 pauses the fleet once), windows in order. A
 * request's send instant is its own (`sentAt`): on a loaded machine the upstream may read a request
 * of the start's burst more than a second after it was sent.
 */
export function afterFirstPause(
  log: readonly UpstreamEntry[],
  windowMs: number,
): { after: number; perPause: number[] } {
  const first = log.find((e) => e.status === 429);
  if (first === undefined) return { after: 0, perPause: [] };
  const end = first.at + Math.ceil(((first.window + 1) * windowMs - first.at) / 1000) * 1000;
  const later = log.filter((e) => sentAt(e) >= end);
  const per = new Map<number, number>();
  for (const e of later) if (e.status === 429) per.set(e.window, (per.get(e.window) ?? 0) + 1);
  const perPause = [...per.entries()].sort((a, b) => a[0] - b[0]).map(([, n]) => n);
  return { after: later.length, perPause };
}
