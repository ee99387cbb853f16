import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/index.ts";
import { type RunningServer, startServer } from "../../src/server/server.ts";
import { type RlsClient, rlsClient } from "./envoy-client.ts";

const FIXTURES = join(import.meta.dirname, "envoy-fixtures");
const DAY = 86_400_000;
// Mid-window, so window alignment is visible: 10:00:30.250 on day 100 since the epoch.
const clock = new ManualClock(100 * DAY + 10 * 3_600_000 + 30_250);
let running: RunningServer;
let rls: RlsClient;

beforeAll(async () => {
  running = await startServer({
    envoyConfig: FIXTURES,
    grpcPort: 0,
    port: 0,
    host: "127.0.0.1",
    maxBodyBytes: 65536,
    maxBatch: 100,
    watch: false,
    shutdownTimeoutMs: 2000,
    log: () => undefined,
    clock,
  });
  rls = rlsClient(`127.0.0.1:${running.context.envoy?.grpc.port}`);
});
afterAll(async () => {
  rls?.close();
  await running?.close();
});

const codes = (r: { statuses: Array<{ code: string }> }) => r.statuses.map((s) => s.code);
const remaining = (r: { statuses: Array<{ limit_remaining: number }> }) => r.statuses.map((s) => s.limit_remaining);

describe("ShouldRateLimit against envoyproxy/ratelimit config files", () => {
  it("nested descriptors: each key/value path has its own limit and counter per value", async () => {
    const both = await rls.ask("messaging", [
      {
        entries: [
          ["message_type", "marketing"],
          ["to_number", "111"],
        ],
      },
      { entries: [["to_number", "111"]] },
    ]);
    expect(both.overall_code).toBe("OK");
    expect(both.statuses.map((s) => s.current_limit)).toEqual([
      { requests_per_unit: 5, unit: "DAY", name: "" },
      { requests_per_unit: 100, unit: "DAY", name: "" },
    ]);
    expect(remaining(both)).toEqual([4, 99]);
    // Another number has counters of its own.
    const other = await rls.ask("messaging", [
      {
        entries: [
          ["message_type", "marketing"],
          ["to_number", "222"],
        ],
      },
    ]);
    expect(remaining(other)).toEqual([4]);
    // A shorter request than the config's depth matches nothing: OK without a limit.
    const short = await rls.ask("messaging", [{ entries: [["message_type", "marketing"]] }]);
    expect(short.statuses[0]).toMatchObject({ code: "OK", current_limit: null });
  });

  it("most specific match: an exact value beats the key-only default", async () => {
    const ok = await rls.ask("edge", [{ entries: [["remote_address", "50.0.0.1"]] }]);
    expect(ok.statuses[0]).toMatchObject({ code: "OK", limit_remaining: 9, current_limit: { requests_per_unit: 10 } });
    const blocked = await rls.ask("edge", [{ entries: [["remote_address", "50.0.0.5"]] }]);
    expect(blocked.overall_code).toBe("OVER_LIMIT");
    expect(blocked.statuses[0]).toMatchObject({ code: "OVER_LIMIT", limit_remaining: 0 });
    // requests_per_unit 0 resets at the end of the current second, like any window.
    expect(blocked.statuses[0]?.duration_until_reset).toEqual({ seconds: 0, nanos: 750_000_000 });
  });

  it("wildcards count per value; share_threshold shares one counter across the values", async () => {
    for (let i = 0; i < 2; i++) await rls.ask("edge", [{ entries: [["path", "/files/a"]] }]);
    const a = await rls.ask("edge", [{ entries: [["path", "/files/a"]] }]);
    expect(a.overall_code).toBe("OVER_LIMIT");
    const b = await rls.ask("edge", [{ entries: [["path", "/files/b"]] }]);
    expect(b.statuses[0]).toMatchObject({ code: "OK", limit_remaining: 1 });

    const shared = [];
    for (const file of ["a", "b", "c", "d"])
      shared.push(await rls.ask("edge", [{ entries: [["path", `/shared/${file}.pdf`]] }]));
    expect(shared.map((r) => r.overall_code)).toEqual(["OK", "OK", "OK", "OVER_LIMIT"]);
    expect(shared.map((r) => r.statuses[0]?.limit_remaining)).toEqual([2, 1, 0, 0]);
    // `*` sits in the middle of the pattern: a .txt file does not match it.
    const txt = await rls.ask("edge", [{ entries: [["path", "/shared/a.txt"]] }]);
    expect(txt.statuses[0]).toMatchObject({ code: "OK", current_limit: null });
  });

  it("unlimited: always OK, remaining at the uint32 maximum, no counter", async () => {
    for (let i = 0; i < 3; i++) {
      const r = await rls.ask("edge", [{ entries: [["ldap", "x"]] }], 1000);
      expect(r.statuses[0]).toEqual({
        code: "OK",
        current_limit: null,
        limit_remaining: 4_294_967_295,
        duration_until_reset: null,
        quota: null,
      });
    }
  });

  it("shadow_mode: counted and reported in metrics, never denies", async () => {
    const rs = [];
    for (let i = 0; i < 3; i++)
      rs.push(
        await rls.ask("edge", [
          {
            entries: [
              ["service", "s"],
              ["user", "user-a"],
            ],
          },
        ]),
      );
    expect(rs.map((r) => r.overall_code)).toEqual(["OK", "OK", "OK"]);
    expect(rs.map((r) => r.statuses[0]?.limit_remaining)).toEqual([0, 0, 0]);
    const b = [];
    for (let i = 0; i < 3; i++)
      b.push(
        await rls.ask("edge", [
          {
            entries: [
              ["service", "s"],
              ["user", "user-b"],
            ],
          },
        ]),
      );
    expect(b.map((r) => r.overall_code)).toEqual(["OK", "OK", "OVER_LIMIT"]);
    const text = await (await fetch(`${running.url}/metrics`)).text();
    expect(text).toContain('sluice_envoy_shadow_mode_total{path="edge.service.user_user-a"} 2');
    expect(text).toContain('sluice_envoy_total_hits_total{path="edge.service.user_user-a"} 3');
    expect(text).toContain('sluice_envoy_over_limit_total{path="edge.service.user_user-b"} 1');
  });

  it("replaces: a matching limit named in `replaces` is dropped from the request", async () => {
    const r = await rls.ask("edge", [
      {
        entries: [
          ["key_1", "value_1"],
          ["user", "bkthomps"],
        ],
      },
      {
        entries: [
          ["key_2", "value_2"],
          ["user", "bkthomps"],
        ],
      },
    ]);
    expect(r.statuses[0]).toMatchObject({ code: "OK", current_limit: null });
    expect(r.statuses[1]).toMatchObject({ code: "OK", limit_remaining: 9, current_limit: { requests_per_unit: 10 } });
    // Alone, the named limit applies, and the replaced request left its counter untouched.
    const alone = await rls.ask("edge", [
      {
        entries: [
          ["key_1", "value_1"],
          ["user", "bkthomps"],
        ],
      },
    ]);
    expect(alone.statuses[0]).toMatchObject({ limit_remaining: 4, current_limit: { name: "specific_limit" } });
  });

  it("all descriptors of a request are decided at once: one over the limit, none consumes", async () => {
    const last = await rls.ask("edge", [
      {
        entries: [
          ["service", "t"],
          ["user", "user-b"],
        ],
      },
      { entries: [["remote_address", "9.9.9.9"]] },
    ]);
    expect(remaining(last)).toEqual([1, 9]);
    await rls.ask("edge", [
      {
        entries: [
          ["service", "t"],
          ["user", "user-b"],
        ],
      },
    ]);
    const over = await rls.ask("edge", [
      { entries: [["remote_address", "9.9.9.9"]] },
      {
        entries: [
          ["service", "t"],
          ["user", "user-b"],
        ],
      },
    ]);
    expect(over.overall_code).toBe("OVER_LIMIT");
    expect(codes(over)).toEqual(["OK", "OVER_LIMIT"]);
    // The address's counter was not touched by the denied request.
    const after = await rls.ask("edge", [{ entries: [["remote_address", "9.9.9.9"]] }]);
    expect(remaining(after)).toEqual([8]);
  });

  it("windows align to the unit, and duration_until_reset says when the window ends", async () => {
    // 10:00:30.250: the minute window ends in 29.75 s.
    const r = await rls.ask("edge", [
      { entries: [["path", "/files/window"]] },
      { entries: [["path", "/files/window"]] },
    ]);
    expect(r.statuses[1]?.duration_until_reset).toEqual({ seconds: 29, nanos: 750_000_000 });
    expect((await rls.ask("edge", [{ entries: [["path", "/files/window"]] }])).overall_code).toBe("OVER_LIMIT");
    clock.advance(29_749);
    expect((await rls.ask("edge", [{ entries: [["path", "/files/window"]] }])).overall_code).toBe("OVER_LIMIT");
    clock.advance(1);
    expect((await rls.ask("edge", [{ entries: [["path", "/files/window"]] }])).statuses[0]).toMatchObject({
      code: "OK",
      limit_remaining: 1,
      duration_until_reset: { seconds: 60, nanos: 0 },
    });
  });

  it("a month is 30 days aligned to the epoch, as in envoyproxy/ratelimit", async () => {
    const r = await rls.ask("edge", [{ entries: [["monthly", "m"]] }]);
    const end = Math.ceil(clock.now() / (30 * DAY)) * 30 * DAY;
    expect(r.statuses[0]?.current_limit?.unit).toBe("MONTH");
    expect(r.statuses[0]?.duration_until_reset?.seconds).toBe(Math.floor((end - clock.now()) / 1000));
  });

  it("hits_addend: request-wide, per descriptor, and 0 only looks", async () => {
    const three = await rls.ask("edge", [{ entries: [["remote_address", "7.7.7.7"]] }], 3);
    expect(remaining(three)).toEqual([7]);
    const own = await rls.ask("edge", [{ entries: [["remote_address", "7.7.7.7"]], hits: 5 }], 3);
    expect(remaining(own)).toEqual([2]);
    const look = await rls.ask("edge", [{ entries: [["remote_address", "7.7.7.7"]], hits: 0 }]);
    expect(look.statuses[0]).toMatchObject({ code: "OK", limit_remaining: 2 });
    const tooMany = await rls.ask("edge", [{ entries: [["remote_address", "7.7.7.7"]] }], 3);
    expect(tooMany.statuses[0]).toMatchObject({ code: "OVER_LIMIT", limit_remaining: 2 });
  });

  it("the algorithm extension counts with any sluice algorithm (token bucket here)", async () => {
    for (let i = 0; i < 60; i++) await rls.ask("edge", [{ entries: [["api", "k"]] }]);
    expect((await rls.ask("edge", [{ entries: [["api", "k"]] }])).overall_code).toBe("OVER_LIMIT");
    clock.advance(1000); // one token per second refills: no waiting for a window to end
    expect((await rls.ask("edge", [{ entries: [["api", "k"]] }])).overall_code).toBe("OK");
    const text = await (await fetch(`${running.url}/metrics`)).text();
    expect(text).toContain('sluice_envoy_total_hits_total{path="edge.api_k"} 62'); // detailed_metric
  });

  it("an unknown domain, or a descriptor nothing matches, is OK without a limit", async () => {
    const r = await rls.ask("nope", [{ entries: [["a", "b"]] }]);
    expect(r.overall_code).toBe("OK");
    expect(r.statuses).toHaveLength(1);
    expect(r.statuses[0]).toMatchObject({ code: "OK", current_limit: null });
    const unmatched = await rls.ask("edge", [{ entries: [["nothing", "here"]] }]);
    expect(unmatched.statuses[0]).toMatchObject({ code: "OK", current_limit: null });
  });

  it("a descriptor's limit override counts per full key/value list", async () => {
    const limit = { requests_per_unit: 1, unit: "HOUR" };
    const first = await rls.ask("edge", [{ entries: [["tenant", "acme"]], limit }]);
    expect(first.statuses[0]).toMatchObject({ code: "OK", current_limit: { requests_per_unit: 1, unit: "HOUR" } });
    expect((await rls.ask("edge", [{ entries: [["tenant", "acme"]], limit }])).overall_code).toBe("OVER_LIMIT");
    expect((await rls.ask("edge", [{ entries: [["tenant", "other"]], limit }])).overall_code).toBe("OK");
  });

  it("refuses an empty domain or descriptor list with INVALID_ARGUMENT", async () => {
    await expect(rls.ask("", [{ entries: [["a", "b"]] }])).rejects.toMatchObject({ code: 3 });
    await expect(rls.ask("edge", [])).rejects.toMatchObject({ code: 3 });
    await expect(rls.ask("edge", [{ entries: [["remote_address", "1.1.1.1"]], hits: 2 ** 60 }])).rejects.toMatchObject({
      code: 3,
      details: expect.stringMatching(/cost must be a positive integer/),
    });
  });
});
