/**
 * The one timeout race in sluice. Stores and the service bound every call to a remote store
 * with it, so no request waits on a dead server, and the timer never outlives the race.
 */

/**
 * Settles with `promise` if it settles within `ms`; otherwise with `onTimeout()` (which may
 * throw or reject to fail the race). The timer is cleared as soon as either side wins, and a
 * late rejection of `promise` is swallowed (nobody is waiting for it any more).
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => T | Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      try {
        resolve(onTimeout());
      } catch (error) {
        reject(error);
      }
    }, ms);
    promise.then(
      (value) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
