// `Retry-After` as an HTTP date names a whole second (the date has no finer field), but the
// upstream's window may end anywhere within it: a retry sent at the named second itself came up
// to 999 ms early and got a second 429 (the outside attack's finding 8: windows ending 370 ms
// into a second, 2 429s in a window in 2 runs of 2). The date is now read as the end of its
// second. An upstream of 1 request per 2 s window, windows ending 600 ms into a second: the
// refused request waits past the window's end and gets no second 429 there.
import { createThrottle } from "sluice";
import { describe, expect, it } from "vitest";

const WINDOW_MS = 2000;
/** Windows end 600 ms into a second: [2000k + 600, 2000k + 2600). */
const OFFSET_MS = 600;

describe("Retry-After as an HTTP date", () => {
  it("a window ending mid-second: one 429, the retry after the window's end", { timeout: 20_000 }, async () => {
    const windowOf = (t: number) => Math.floor((t - OFFSET_MS) / WINDOW_MS);
    const refused = new Map<number, number>();
    const served = new Map<number, number>();
    const upstream = async (): Promise<Response> => {
      const t = Date.now();
      const w = windowOf(t);
      if ((served.get(w) ?? 0) >= 1) {
        refused.set(w, (refused.get(w) ?? 0) + 1);
        const end = (w + 1) * WINDOW_MS + OFFSET_MS;
        return new Response("slow down", { status: 429, headers: { "retry-after": new Date(end).toUTCString() } });
      }
      served.set(w, 1);
      return new Response("ok");
    };
    // Start just after a window opened: the refused request hears the date well before its second.
    const now = Date.now();
    const wait = (((OFFSET_MS - now) % WINDOW_MS) + WINDOW_MS) % WINDOW_MS;
    await new Promise((resolve) => setTimeout(resolve, wait + 20));
    const throttle = createThrottle({ concurrency: 1, retries: 3, fetch: upstream as typeof fetch });
    const answers = await Promise.all([
      throttle.fetch("http://upstream.test/"),
      throttle.fetch("http://upstream.test/"),
    ]);
    await throttle.close();
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    // At most one 429 in any window: the first.
    expect([...refused.values()].filter((n) => n > 1)).toEqual([]);
    expect([...refused.values()].reduce((a, b) => a + b, 0)).toBe(1);
  });
});
