// maxKeyBytes: one bound above every store. A key longer than it (default 1 KB of UTF-8) is
// stored as its sha256, the first time with a warning, and the same long key keeps one state.
import { describe, expect, it } from "vitest";
import { warningsOf } from "../../test/support/warnings.ts";
import type { DecisionEvent } from "../limiter.ts";
import { createLimiter } from "../limiter.ts";
import { RateLimiterService } from "../service.ts";
import { ManualClock } from "./clock.ts";
import { hashedKey } from "./key-bound.ts";

const SPEC = { algorithm: "fixed-window", limit: 1, windowMs: 60_000 } as const;

describe("maxKeyBytes", () => {
  it("long keys differing only in lone surrogates hash apart; a well-formed key hashes as UTF-8 always did", async () => {
    const { createHash } = await import("node:crypto");
    const base = "k".repeat(2000);
    const forms = [`${base}\ud800`, `${base}\udc00`, `${base}\ufffd`, `${base}\udc00\ud800`, `${base}\ud800\udc00`];
    expect(new Set(forms.map(hashedKey)).size).toBe(forms.length);
    const limiter = createLimiter(SPEC, { clock: new ManualClock(0) });
    await warningsOf(() => {
      for (const key of forms) expect(limiter.tryAcquire(key).allowed, JSON.stringify(key.slice(-2))).toBe(true);
    });
    for (const key of [`${base}é`, `${base}\ud800\udc00`]) {
      expect(hashedKey(key)).toBe(`sha256:${createHash("sha256").update(key).digest("base64url")}`);
    }
  });

  it("hashes keys past 1 KB by default (bytes, not characters), warning once; the same long key keeps its state", async () => {
    const events: DecisionEvent[] = [];
    const limiter = createLimiter(SPEC, { clock: new ManualClock(0), onDecision: (e) => events.push(e) });
    const long = "k".repeat(1_000_000);
    const wide = "é".repeat(600); // 600 characters, 1,200 bytes
    const fits = "é".repeat(512); // exactly 1,024 bytes
    const warnings = await warningsOf(() => {
      expect(limiter.tryAcquire(long).allowed).toBe(true);
      expect(limiter.tryAcquire(long).allowed).toBe(false);
      expect(limiter.tryAcquire(`${long}x`).allowed).toBe(true);
      limiter.tryAcquire(wide);
      limiter.tryAcquire(fits);
    });
    expect(events.map((e) => e.key)).toEqual([
      hashedKey(long),
      hashedKey(long),
      hashedKey(`${long}x`),
      hashedKey(wide),
      fits,
    ]);
    expect(hashedKey(long)).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
    const ours = warnings.filter((w) => w.code === "SLUICE_KEY_HASHED");
    expect(ours).toHaveLength(1);
    expect(ours[0]?.message).toMatch(/a 1000000-byte key is longer than maxKeyBytes \(1024\)/);
    // reset and peek reach the same (hashed) state.
    limiter.reset(long);
    expect(limiter.peek(long).allowed).toBe(true);
  });

  it("bounds acquire's key too: acquire and tryAcquire of one long key share its state", async () => {
    const limiter = createLimiter(
      { algorithm: "fixed-window", limit: 1, windowMs: 60_000 },
      { clock: new ManualClock(1_800_000_000_000), name: "acquire-bound" },
    );
    const long = "k".repeat(2048);
    expect((await limiter.acquire(long, { maxWaitMs: 0 })).allowed).toBe(true);
    expect(limiter.tryAcquire(long).allowed).toBe(false);
  });

  it("is an option of createLimiter and RateLimiterService, checked", async () => {
    const events: DecisionEvent[] = [];
    const service = new RateLimiterService({
      clock: new ManualClock(0),
      maxKeyBytes: 64,
      onDecision: (e) => events.push(e),
    }).addRule("api", SPEC, { tiers: { pro: SPEC } });
    await warningsOf(() => {
      service.check("api", "a".repeat(65));
      service.check("api", "a".repeat(65), { tier: "pro" });
      service.checkAll([{ rule: "api", key: "b".repeat(100) }]);
      service.check("api", "a".repeat(64));
    });
    expect(events.map((e) => e.key)).toEqual([
      hashedKey("a".repeat(65)),
      hashedKey("a".repeat(65)),
      hashedKey("b".repeat(100)),
      "a".repeat(64),
    ]);
    expect(() => createLimiter(SPEC, { maxKeyBytes: 10 })).toThrow(
      /`maxKeyBytes` must be an integer of at least 64 \(got 10\)/,
    );
    expect(() => new RateLimiterService({ maxKeyBytes: 1.5 })).toThrow(/maxKeyBytes/);
  });
});
