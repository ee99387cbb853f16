// coarseClock's staleness bound (SPEC §2: a reading is never older than the current event-loop
// turn's run so far) across a blocking poll: a reading taken in a timer callback must not be
// served to the I/O callback that ends a later block of libuv's poll phase. Found by an outside
// attack (2026-12-07, finding 5): the end-of-turn immediate was unref'd, so the poll blocked with
// it pending and a TCP accept seconds later was decided on the timer's reading (1–6.3 s stale;
// a connection in a new window was refused).
// The shape runs in a process of its own: a test worker's loop is woken by the runner's own
// traffic, which hid the defect. A timer reads the clock; a client connects WAIT ms later from a
// third process; the accept's decision instant must be near the accept, not the timer. The bound
// asserted (WAIT / 2) is loose on purpose: the old clock served a reading ~WAIT ms old.
import { execFile } from "node:child_process";
import { describe, expect, it } from "vitest";

const WAIT = 800;

const SCRIPT = `
const { createServer } = require("node:net");
const { spawn } = require("node:child_process");
import("sluice").then(({ coarseClock, createLimiter, systemClock }) => {
  const clock = coarseClock();
  const limiter = createLimiter({ algorithm: "fixed-window", limit: 100, windowMs: 1000 }, { clock, name: "io" });
  const server = createServer((socket) => {
    const now = systemClock.now();
    const d = limiter.tryAcquire("conn");
    socket.destroy();
    server.close();
    console.log(JSON.stringify({ staleMs: now - d.at }));
  });
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address();
    spawn(process.execPath, ["-e", "setTimeout(() => require('net').connect(" + port + ", '127.0.0.1').on('error', () => {}), ${WAIT})"], { stdio: "ignore" });
    setTimeout(() => limiter.tryAcquire("timer"), 20);
  });
});
`;

describe("coarseClock across a blocking poll", () => {
  it("an I/O callback after the poll blocked is not served a timer's reading", { timeout: 20_000 }, async () => {
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ["-e", SCRIPT], { timeout: 15_000 }, (e, stdout) => (e ? reject(e) : resolve(stdout))),
    );
    const { staleMs } = JSON.parse(out.trim()) as { staleMs: number };
    expect(staleMs).toBeLessThan(WAIT / 2);
  });
});
