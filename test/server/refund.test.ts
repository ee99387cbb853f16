// Refund receipts over the service: `/v1/check` answers with `at` (the instant it decided), and
// `/v1/refund` (and `sluice/client`'s refund, which passes it) gives back only what that check
// took and the algorithm still counts, through a real `sluice serve` process.
import { createClient, type SluiceClient } from "sluice/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve, tempDir } from "../cli/helpers.ts";

const tmp = tempDir();
const HOUR = 3_600_000;
let s: Served;
let client: SluiceClient;

beforeAll(async () => {
  ensureBuilt();
  const config = tmp.file("rules.yaml", "rules:\n  receipts: { algorithm: sliding-log, limit: 2, windowMs: 1h }\n");
  s = await serve(["--config", config]);
  client = createClient({ url: s.url });
}, 60_000);
afterAll(async () => {
  await client?.close();
  await s?.stop();
  tmp.cleanup();
});

const post = (path: string, body: unknown) =>
  fetch(`${s.url}/v1/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("refund receipts through sluice serve", () => {
  it("the client's refund passes the check's `at`: a unit no longer counted gives nothing back, the check's own does", async () => {
    const a = await client.check("receipts", "k");
    const b = await client.check("receipts", "k");
    expect([a.allowed, b.allowed]).toEqual([true, true]);
    expect(typeof a.at).toBe("number");
    expect(Object.keys(a)).not.toContain("at"); // a receipt, not a field decisions compare on
    // A receipt from two hours before: that check's unit has left the window, so nothing comes
    // back (a refund without a receipt would give back the newest unit, someone else's).
    const stale = await client.refund("receipts", "k", { at: (a.at as number) - 2 * HOUR });
    expect(stale).toMatchObject({ allowed: false, remaining: 0 });
    expect((await client.peek("receipts", "k")).allowed).toBe(false);
    const own = await client.refund("receipts", "k", { at: b.at as number });
    expect(own).toMatchObject({ allowed: true, remaining: 0 });
    expect((await client.check("receipts", "k")).allowed).toBe(true);
    expect((await client.check("receipts", "k")).allowed).toBe(false);
  });

  it("answers /v1/check with `at` and refunds a batch by receipts over the JSON API", async () => {
    const checks = (await (
      await post("check", [
        { rule: "receipts", key: "j" },
        { rule: "receipts", key: "j" },
      ])
    ).json()) as Array<{ allowed: boolean; at: number }>;
    expect(checks.map((d) => [d.allowed, typeof d.at])).toEqual([
      [true, "number"],
      [true, "number"],
    ]);
    const res = await post("refund", [
      { rule: "receipts", key: "j", at: (checks[0]?.at as number) - 2 * HOUR },
      { rule: "receipts", key: "j", at: checks[1]?.at },
    ]);
    expect(res.status).toBe(200);
    const answers = (await res.json()) as Array<{ allowed: boolean; remaining: number }>;
    expect(answers.map((d) => [d.allowed, d.remaining])).toEqual([
      [false, 0],
      [true, 0],
    ]);
  });

  it("refuses a receipt that is not an instant, and `at` where no receipt belongs, naming the field", async () => {
    const bad = await post("refund", { rule: "receipts", key: "k", at: "yesterday" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { detail: string }).detail).toMatch(/`at` must be a finite instant/);
    const onCheck = await post("check", { rule: "receipts", key: "k", at: 1 });
    expect(onCheck.status).toBe(400);
    expect(((await onCheck.json()) as { detail: string }).detail).toMatch(/unknown field "at"/);
    await expect(client.refund("receipts", "k", { at: Number.NaN })).rejects.toThrow(/`at` must be a finite instant/);
  });
});
