// `throttle.fetch(input, { signal })`: the request's own signal removes it from the queue while
// it waits (say, through a pause), as the schedule option `signal` does. Found by an attack from
// outside: it was only passed to the request once sent, so an abort during a 2 s pause waited the
// pause out (src/throttle/upstream.ts).
import { createThrottle } from "sluice";
import { describe, expect, it } from "vitest";

describe("throttle.fetch with init.signal aborted while the job waits", () => {
  it("leaves the queue when init.signal aborts", {
    timeout: 20_000,
  }, async () => {
    let sent = 0;
    const throttle = createThrottle({
      concurrency: 1,
      fetch: (async () => {
        sent++;
        return new Response("ok");
      }) as typeof fetch,
    });
    await throttle.pause("api", 10_000);
    const controller = new AbortController();
    let outcome = "pending";
    const done = throttle.fetch("http://upstream.invalid/", { signal: controller.signal }, { key: "api" }).then(
      () => {
        outcome = "resolved";
      },
      (error: Error) => {
        outcome = `rejected ${error.name}`;
      },
    );
    expect(throttle.stats().queued).toBe(1);
    controller.abort();
    // A generous margin: the pause has ~9.5 s left after this.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const queued = throttle.stats().queued;
    const settled = outcome;
    await throttle.close(); // rejects what is still queued
    await done;
    expect(sent).toBe(0);
    expect(queued).toBe(0);
    expect(settled).toBe("rejected AbortError");
  });

  it("control: the schedule option `signal` leaves the queue at once", { timeout: 20_000 }, async () => {
    const throttle = createThrottle({ concurrency: 1, fetch: (async () => new Response("ok")) as typeof fetch });
    await throttle.pause("api", 10_000);
    const controller = new AbortController();
    const done = throttle.fetch("http://upstream.invalid/", undefined, { key: "api", signal: controller.signal }).then(
      () => "resolved",
      () => "rejected",
    );
    controller.abort();
    expect(await done).toBe("rejected");
    expect(throttle.stats().queued).toBe(0);
    await throttle.close();
  });
});
