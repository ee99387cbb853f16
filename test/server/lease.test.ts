/**
 * Concurrency leases through the service (issue 33): a `/v1/check` of a rule with a concurrency
 * member takes a lease whose receipt is the answer's `at`; `POST /v1/release` gives it back
 * (idempotent), `POST /v1/renew` starts its `leaseMs` again (denied once released). Over HTTP
 * with fetch, and through `sluice/client` (whose allowed decisions carry `release()` and
 * `renew()`), on the in-process store and on Redis, against the bin.
 */
import { randomUUID } from "node:crypto";
import { createClient, type SluiceClient } from "sluice/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, type Served, serve, tempDir } from "../cli/helpers.ts";

const tmp = tempDir();
const RULES =
  "rules:\n  jobs: { algorithm: concurrency, limit: 2, leaseMs: 60000 }\n" +
  "  api: { algorithm: fixed-window, limit: 5, windowMs: 60000 }\n";

beforeAll(ensureBuilt);
afterAll(() => tmp.cleanup());

interface Answer {
  allowed: boolean;
  remaining: number;
  at?: number;
  type?: string;
  detail?: string;
}

async function post(s: Served, path: string, body: unknown): Promise<{ status: number; body: Answer }> {
  const res = await fetch(`${s.url}/v1/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Answer };
}

const stores: Array<[string, string[]]> = [
  ["in-process", []],
  ["redis", ["--redis", "redis://127.0.0.1:6379", "--prefix", `sluice-lease-test:${randomUUID()}:`]],
];

describe.each(stores)("leases through sluice serve (%s store)", (_name, storeArgs) => {
  let s: Served;
  let client: SluiceClient;
  beforeAll(async () => {
    s = await serve(["--config", tmp.file(`rules-${_name}.yaml`, RULES), ...storeArgs]);
    client = createClient({ url: s.url });
  });
  afterAll(async () => {
    await client.close();
    await s.stop();
  });

  it("HTTP: check takes a slot, release gives it back once, renew moves the receipt, a released lease cannot be renewed", async () => {
    const key = `http-${randomUUID()}`;
    const first = await post(s, "check", { rule: "jobs", key });
    const second = await post(s, "check", { rule: "jobs", key });
    expect([first.body.allowed, second.body.allowed]).toEqual([true, true]);
    expect((await post(s, "check", { rule: "jobs", key })).body.allowed).toBe(false); // 2 in flight
    // Renewing the second lease gives it a new receipt; the old one then names nothing.
    const renewed = await post(s, "renew", { rule: "jobs", key, at: second.body.at });
    expect(renewed).toMatchObject({ status: 200, body: { allowed: true } });
    expect(renewed.body.at).toBeGreaterThanOrEqual(second.body.at as number);
    const released = await post(s, "release", { rule: "jobs", key, at: first.body.at });
    expect(released).toMatchObject({ status: 200, body: { allowed: true } }); // a slot is free
    // Idempotent: releasing the same lease again frees nothing more.
    await post(s, "release", { rule: "jobs", key, at: first.body.at });
    expect((await post(s, "check", { rule: "jobs", key })).body.allowed).toBe(true);
    expect((await post(s, "check", { rule: "jobs", key })).body.allowed).toBe(false);
    // The first lease is gone: renewing it is denied and changes nothing.
    expect((await post(s, "renew", { rule: "jobs", key, at: first.body.at })).body.allowed).toBe(false);
    // The second, by its new receipt, is still held: released, its slot comes back.
    await post(s, "release", { rule: "jobs", key, at: renewed.body.at });
    expect((await post(s, "check", { rule: "jobs", key })).body.allowed).toBe(true);
  });

  it("HTTP: a lease call needs `at`, and a rule with a concurrency member; a batch works as for checks", async () => {
    const key = `bad-${randomUUID()}`;
    expect(await post(s, "release", { rule: "jobs", key })).toMatchObject({
      status: 400,
      body: { type: "urn:sluice:problem:invalid-check" },
    });
    const rate = await post(s, "renew", { rule: "api", key, at: 1 });
    expect(rate.status).toBe(400);
    expect(rate.body.detail).toMatch(/concurrency member/);
    const a = (await post(s, "check", { rule: "jobs", key })).body;
    const b = (await post(s, "check", { rule: "jobs", key })).body;
    const both = await fetch(`${s.url}/v1/release`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([
        { rule: "jobs", key, at: a.at },
        { rule: "jobs", key, at: b.at },
      ]),
    });
    expect(both.status).toBe(200);
    expect(((await both.json()) as Answer[]).map((d) => d.allowed)).toEqual([true, true]);
    expect((await post(s, "peek", { rule: "jobs", key })).body).toMatchObject({ allowed: true, remaining: 1 });
  });

  it("sluice/client: an allowed decision's release() and renew(), and client.release/renew", async () => {
    const key = `client-${randomUUID()}`;
    const d1 = await client.check("jobs", key);
    const d2 = await client.check("jobs", key);
    expect((await client.check("jobs", key)).allowed).toBe(false);
    const r = await (d1 as { renew(): Promise<{ allowed: boolean; at?: number }> }).renew();
    expect(r.allowed).toBe(true);
    await (d1 as { release(): Promise<unknown> }).release(); // releases by the renewed receipt
    await (d1 as { release(): Promise<unknown> }).release(); // idempotent
    const d3 = await client.check("jobs", key);
    expect(d3.allowed).toBe(true);
    expect((await client.check("jobs", key)).allowed).toBe(false);
    expect((await (d1 as { renew(): Promise<{ allowed: boolean }> }).renew()).allowed).toBe(false);
    await client.release("jobs", key, { at: d2.at as number });
    await client.release("jobs", key, { at: d3.at as number });
    expect(await client.peek("jobs", key)).toMatchObject({ allowed: true, remaining: 1 });
    await expect(client.release("jobs", key, {} as { at: number })).rejects.toThrow(/`at` must be a finite instant/);
    await expect(client.release("api", key, { at: 1 })).rejects.toThrow(/concurrency member/);
  });
});
