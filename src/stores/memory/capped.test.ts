// Regression tests for issue 14, one per case: past maxKeys the store keeps its three promises
// under limit changes, resets, bans and many rules. Stores are seeded: every run decides alike.
// `maxBytes: 250` leaves no room for the compact tier, so evicted keys go to the summary at once.
import { describe, expect, it } from "vitest";
import { type Decision, ManualClock, MemoryStore, RateLimiterService } from "../../index.ts";

const SUMMARY_ONLY = { maxBytes: 250, seed: 14 } as const;

describe("capped MemoryStore (issue 14)", () => {
  it("a limit change never widens a summarised key: lowered, read back, raised again", () => {
    for (const options of [SUMMARY_ONLY, { seed: 14 }]) {
      const clock = new ManualClock(1_800_000_000_000);
      const store = new MemoryStore({ maxKeys: 1, ...options });
      const s = new RateLimiterService({ clock, store });
      s.addRule("r", { algorithm: "sliding-log", limit: 10, windowMs: 60_000 });
      let admitted = 0;
      for (let i = 0; i < 10; i++) if ((s.check("r", "k") as Decision).allowed) admitted++;
      s.updateRule("r", { algorithm: "sliding-log", limit: 2, windowMs: 60_000 });
      s.check("r", "other"); // "k" (10 entries) is summarised
      s.check("r", "k"); // read back under limit 2
      s.check("r", "other2");
      s.updateRule("r", { algorithm: "sliding-log", limit: 10, windowMs: 60_000 });
      for (let i = 0; i < 20; i++) {
        clock.advance(100);
        if ((s.check("r", "k") as Decision).allowed) admitted++;
        s.check("r", `flood${i}`);
      }
      expect(admitted).toBe(10); // an uncapped store admits 10 in this window, not 18
    }
  });

  it("a reset stays reset: a reset key decides as a fresh key however many evictions follow", () => {
    for (const options of [SUMMARY_ONLY, { seed: 14 }]) {
      const clock = new ManualClock(0);
      const store = new MemoryStore({ maxKeys: 10, ...options });
      const s = new RateLimiterService({ clock, store });
      s.addRule("r", { algorithm: "fixed-window", limit: 3, windowMs: 60_000 });
      for (let i = 0; i < 3; i++) s.check("r", "victim");
      expect((s.check("r", "victim") as Decision).allowed).toBe(false);
      for (let i = 0; i < 20; i++) s.check("r", `a${i}`);
      s.reset("r", "victim");
      for (let i = 0; i < 20; i++) s.check("r", `b${i}`);
      const d = s.check("r", "victim") as Decision;
      expect(d).toMatchObject({ allowed: true, remaining: 2 });
      expect(d.approximate).toBeUndefined();
    }
    // Pins are counted and bounded.
    const store = new MemoryStore({ maxKeys: 1, ...SUMMARY_ONLY });
    const s = new RateLimiterService({ clock: new ManualClock(0), store });
    s.addRule("r", { algorithm: "fixed-window", limit: 1, windowMs: 60_000 });
    for (let i = 0; i < 100; i++) s.check("r", `k${i}`);
    for (let i = 0; i < 100; i++) s.reset("r", `k${i}`);
    expect(store.stats().pins).toBeLessThanOrEqual(16);
    expect(store.stats().pinsDropped).toBeGreaterThan(0);
  });

  it("closes ban evasion: throwaway keys denied later add to a summarised key's denials, never replace them", () => {
    const clock = new ManualClock(1_000);
    const store = new MemoryStore({ maxKeys: 2, ...SUMMARY_ONLY });
    const s = new RateLimiterService({ clock, store });
    s.addRule(
      "r",
      { algorithm: "fixed-window", limit: 2, windowMs: 10_000 },
      { ban: { after: 3, withinMs: 60_000, forMs: 3_600_000 } },
    );
    for (let i = 0; i < 4; i++) s.check("r", "victim"); // 2 allowed, 2 denials: one short of a ban
    for (let i = 0; i < 10; i++) {
      clock.advance(100);
      for (let j = 0; j < 3; j++) s.check("r", `throwaway${i}`); // 2 allowed, 1 denial each
    }
    expect((s.check("r", "victim") as Decision).allowed).toBe(false); // the 3rd denial: banned
    let admitted = 0;
    for (let t = 0; t < 20; t++) {
      clock.advance(60_000);
      if ((s.check("r", "victim") as Decision).allowed) admitted++;
      s.check("r", `later${t}`);
    }
    expect(admitted).toBe(0); // banned for the hour, whatever was summarised since
  });

  it("one budget per store: 1 rule or 40 rules hold the same summary bytes, and idle rules' summaries are freed", () => {
    const bytes = (rules: number) => {
      const clock = new ManualClock(0);
      const store = new MemoryStore({ maxKeys: 10, maxBytes: 200_000, seed: 1 });
      const s = new RateLimiterService({ clock, store });
      for (let r = 0; r < rules; r++) s.addRule(`r${r}`, { algorithm: "sliding-log", limit: 5, windowMs: 1000 });
      for (let k = 0; k < 600; k++)
        for (let r = 0; r < rules; r++) for (let i = 0; i < 3; i++) s.check(`r${r}`, `k${k}`);
      const held = store.stats();
      clock.advance(10_000); // every window over: a sweep frees every summary
      for (let k = 0; k < 5000; k++) s.check("r0", `late${k}`, { cost: 1 });
      return [held.sketchBytes + held.compactBytes, store.stats().sketchBytes, held.maxBytes];
    };
    const [one, , budget] = bytes(1);
    const [forty, afterIdle] = bytes(40);
    expect(one).toBeLessThanOrEqual(budget as number);
    expect(forty).toBeLessThanOrEqual(budget as number);
    expect(afterIdle).toBeLessThan(forty as number);
  });

  it("stats() reports every tier", () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore({ maxKeys: 2, maxBytes: 5000, seed: 2 });
    const s = new RateLimiterService({ clock, store });
    s.addRule("r", { algorithm: "gcra", limit: 5, periodMs: 60_000 });
    // Keys spending their whole limit: summarised, their cells refuse (the error bound is then above 0).
    for (let k = 0; k < 500; k++) for (let j = 0; j < 5; j++) s.check("r", `k${k}`);
    const stats = store.stats();
    expect(stats).toMatchObject({ keys: 2, maxKeys: 2, maxBytes: 5000 });
    expect(stats.compactKeys).toBeGreaterThan(0);
    expect(stats.compactKeys).toBeLessThanOrEqual(stats.compactCapacity);
    expect(stats.compactEvicted).toBeGreaterThan(0);
    expect(stats.summarised).toBeGreaterThan(0);
    expect(stats.summaryErrorBound).toBeGreaterThan(0);
    expect(stats.summaryErrorBound).toBeLessThanOrEqual(1);
    expect(stats.compactBytes + stats.sketchBytes).toBeLessThanOrEqual(5000);
  });

  it("rejects a bad maxBytes or seed with a typed error naming it", () => {
    expect(() => new MemoryStore({ maxBytes: 0 })).toThrow(/maxBytes.*0/);
    expect(() => new MemoryStore({ seed: -1 })).toThrow(/seed/);
  });
});

describe("blocks under maxKeys", () => {
  it("a flood of distinct blocked keys holds at most maxKeys blocks: ended ones make room, then a typed error, nothing lifted", () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 2));
    const store = new MemoryStore({ maxKeys: 50, seed: 14 });
    const s = new RateLimiterService({ clock, store });
    s.addRule("r", { algorithm: "fixed-window", limit: 5, windowMs: 60_000 });
    s.addRule("q", { algorithm: "gcra", limit: 5, periodMs: 60_000 });
    for (let i = 0; i < 30; i++) s.block("r", `short${i}`, 1000);
    for (let i = 0; i < 20; i++) s.block("q", `long${i}`, 3_600_000);
    // Full (across both rules): the 51st block is refused and names the cap.
    expect(() => s.block("r", "one-more", 3_600_000)).toThrow(/50 keys are blocked already \(`maxKeys`/);
    // Blocking a key blocked already takes no room.
    expect(s.block("q", "long3", 7_200_000)).toMatchObject({ banned: true, retryAfterMs: 7_200_000 });
    clock.advance(1000); // the 30 short blocks have ended: room for 30 more
    for (let i = 0; i < 30; i++) expect(s.block("r", `next${i}`, 3_600_000)).toMatchObject({ banned: true });
    expect(() => s.block("r", "one-more", 3_600_000)).toThrow(expect.objectContaining({ name: "StoreError" }));
    // Every block kept is still in force; the refused key was never blocked.
    for (let i = 0; i < 20; i++) expect((s.check("q", `long${i}`) as Decision).banned).toBe(true);
    for (let i = 0; i < 30; i++) expect((s.check("r", `next${i}`) as Decision).banned).toBe(true);
    expect((s.check("r", "one-more") as Decision).allowed).toBe(true);
    // A reset lifts a block and frees its room.
    s.reset("r", "next0");
    expect(s.block("r", "one-more", 1000)).toMatchObject({ banned: true });
  });
});
