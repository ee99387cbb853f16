// The load the Redis instruction-count benches put on a limiter: `n` checks spread over `keys`
// (a fixed stride, so every run visits keys in the same order), `inFlight` at a time. A check
// answered by the failure policy throws: a count taken over failures would measure nothing.

/** Runs `n` tryAcquire calls on `limiter` over `keys`, `inFlight` at a time. */
export async function decideMany(limiter, keys, n, inFlight) {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const d = await limiter.tryAcquire(keys[(i * 7919) % keys.length]);
      if (d.failure !== undefined) throw d.failure.error;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}
