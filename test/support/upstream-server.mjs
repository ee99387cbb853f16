// An upstream with its own limit, for the throttle's tests and bench/throttle.mjs: a local HTTP
// server admitting `limit` requests per fixed window of `windowMs` (aligned to epoch multiples,
// on the system clock), answering the rest 429 with the headers of `mode`:
// - "retry-after": `Retry-After: <seconds until the window ends, rounded up>`;
// - "ratelimit": the IETF draft-11 field `RateLimit: "default";r=0;t=<seconds>`;
// - "x-ratelimit": `X-RateLimit-Remaining: 0` and `X-RateLimit-Reset: <epoch seconds>` (GitHub's).
// Every request is logged with the instant it arrived, its status, and its `x-job` header.
import { createServer } from "node:http";

/** Starts the upstream on 127.0.0.1 port 0. */
export async function startUpstream({ limit, windowMs = 1000, mode = "retry-after" }) {
  const log = [];
  const counts = new Map();
  const server = createServer((req, res) => {
    const at = Date.now();
    const window = Math.floor(at / windowMs);
    const used = counts.get(window) ?? 0;
    const end = (window + 1) * windowMs;
    const seconds = Math.ceil((end - at) / 1000);
    const job = req.headers["x-job"];
    if (used >= limit) {
      log.push({ at, status: 429, job, window });
      if (mode === "retry-after") res.setHeader("retry-after", String(seconds));
      else if (mode === "ratelimit") res.setHeader("ratelimit", `"default";r=0;t=${seconds}`);
      else {
        res.setHeader("x-ratelimit-remaining", "0");
        res.setHeader("x-ratelimit-reset", String(Math.ceil(end / 1000)));
      }
      res.statusCode = 429;
      res.end("slow down");
      return;
    }
    counts.set(window, used + 1);
    counts.delete(window - 2);
    log.push({ at, status: 200, job, window });
    res.end("ok");
  });
  return listening(server, log);
}

/**
 * Listens on 127.0.0.1 port 0 (keep-alive 1 s) and answers `{ url, log, close }`: what every
 * upstream simulator of the throttle tests returns.
 */
export async function listening(server, log) {
  server.keepAliveTimeout = 1000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/`,
    log,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
