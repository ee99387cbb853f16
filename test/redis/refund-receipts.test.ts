// Refund receipts on Redis (the Lua twin, op `r<at>`): random traces of checks and refunds that
// name an earlier check (late or not) decide exactly as the in-process store does, for every
// algorithm and a composite; plus the fixed-window case of issue 14.
import { describe, expect, it } from "vitest";
import { runReceiptFixedWindowCase, runReceiptTraces } from "../support/receipt-trace.ts";
import { standaloneRedis, useStandaloneClients } from "../support/redis-server.ts";

const redis = await standaloneRedis("refund receipts");

describe.skipIf(redis === undefined)("refund receipts on Redis", () => {
  const clients = useStandaloneClients(redis);

  // The cases live in test/support/receipt-trace.ts (the Lua mutation run reruns them).
  it("fixed window, limit 1: A at 999, B at 1,000, A's refund at 1,001, C at 1,002: C is refused", () =>
    runReceiptFixedWindowCase(clients.io));

  it("random traces with receipts decide as the in-process store does", async () => {
    expect(await runReceiptTraces(clients.io)).toBeGreaterThan(50);
  }, 120_000);
});
