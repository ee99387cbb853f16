// An upstream that tells when its window resets, as the outside attack's simulator did (F1): a
// local HTTP server admitting `limit` requests per fixed window of `windowMs` on a grid anchored
// at its first request (not at epoch multiples), answering an admitted request after `latencyMs`
// and the rest at once with 429, `X-RateLimit-Remaining: 0` and `X-RateLimit-Reset: <the
// window's end in epoch seconds, rounded up>` (so a pause lasts what is left of the window, or
// up to a second more). Logged as test/support/upstream-server.mjs logs (the same entries).
import { createServer } from "node:http";
import { listening } from "../support/upstream-server.mjs";

/** Starts the upstream on 127.0.0.1 port 0. */
export async function startResetUpstream({ limit, windowMs = 1000, latencyMs = 150 }) {
  const log = [];
  let start = -1;
  let current = 0;
  let used = 0;
  const server = createServer((req, res) => {
    const at = Date.now();
    if (start < 0) start = at;
    const window = Math.floor((at - start) / windowMs);
    const end = start + (window + 1) * windowMs;
    if (window !== current) {
      current = window;
      used = 0;
    }
    const job = req.headers["x-job"];
    if (used >= limit) {
      log.push({ at, status: 429, job, window });
      res.writeHead(429, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(Math.ceil(end / 1000)) });
      res.end("slow down");
      return;
    }
    used++;
    log.push({ at, status: 200, job, window });
    setTimeout(() => res.end("ok"), latencyMs);
  });
  return listening(server, log);
}
