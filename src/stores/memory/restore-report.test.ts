// What a restore keeps when the store or the rule changed across the restart (a smaller
// `maxKeys`, a new window or limit), and what it says about it: conservatively kept (never an
// escape), and every record dropped or summarised accounted for, with the reason. Malformed
// state files (NaN instants anywhere) are refused whole with an ArgumentError naming the place.
import { ArgumentError, type LimitSpec, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";
import { describeRestore } from "./restore-report.ts";
import { sameLayout } from "./snapshot.ts";

const T = Date.UTC(2026, 11, 7, 10);
const WINDOW: LimitSpec = { algorithm: "fixed-window", limit: 10, windowMs: 3_600_000 };

/** A store of `maxKeys` past which `keys` keys each used `used` of 10. */
function filled(maxKeys: number, keys: number, used: number, spec: LimitSpec = WINDOW) {
  const clock = new ManualClock(T);
  const store = new MemoryStore({ maxKeys, seed: 5 });
  const s = new RateLimiterService({ clock, store }).addRule("api", spec);
  for (let i = 0; i < keys; i++) for (let j = 0; j < used; j++) s.check("api", `user:${i}`);
  return { clock, store, text: store.snapshot(clock.now()) };
}

describe("restore reports what it kept, summarised, dropped or left waiting", () => {
  it("maxKeys 100, 1,000 keys each having used 1 of 10: every key gets its own count back, new keys pass", () => {
    // Issue 34: the compact tier was saved with a one-cell summary and every key read back full.
    const { clock, text } = filled(100, 1000, 1);
    const store = new MemoryStore({ maxKeys: 100 });
    store.restore(text);
    const s = new RateLimiterService({ clock, store }).addRule("api", WINDOW);
    expect(store.restored()).toMatchObject({ saved: 1000, exact: 1000, summarised: 0, dropped: 0, waiting: 0 });
    for (let i = 0; i < 100; i++) expect(s.check("api", `new:${i}`).allowed, `new:${i}`).toBe(true);
    for (let i = 0; i < 1000; i += 7) {
      expect(s.check("api", `user:${i}`), `user:${i}`).toMatchObject({ allowed: true, remaining: 8 });
    }
  });

  it("a smaller maxKeys keeps the overflow in the summary (over-counted, never under) and says so", () => {
    const { clock, text } = filled(1000, 3000, 10); // every key spent its whole limit
    const store = new MemoryStore({ maxKeys: 10 });
    store.restore(text);
    const s = new RateLimiterService({ clock, store }).addRule("api", WINDOW);
    const report = store.restored();
    expect(report.saved).toBe(3000);
    expect(report.exact + report.summarised).toBe(3000);
    expect(report.summarised).toBeGreaterThan(0);
    expect(report.dropped).toBe(0);
    expect(report.tables[0]?.reasons.join("\n")).toMatch(/buckets|did not fit/);
    // No escape: every key that spent its limit is still refused.
    for (let i = 0; i < 3000; i++) expect(s.check("api", `user:${i}`).allowed, `user:${i}`).toBe(false);
    const lines = describeRestore(report);
    expect(lines[0]).toMatch(/^restored \d+ key records exactly, \d+ into summaries/);
    expect(lines.length).toBeGreaterThan(1);
  });

  it("a changed window leaves the rule's records waiting, and the report says its keys start fresh", () => {
    const { clock, text } = filled(10, 50, 3);
    const store = new MemoryStore({ maxKeys: 10 });
    store.restore(text);
    new RateLimiterService({ clock, store }).addRule("api", { ...WINDOW, windowMs: 60_000 });
    const report = store.restored();
    expect(report).toMatchObject({ exact: 0, waiting: 50 });
    expect(report.tables[0]?.status).toBe("waiting");
    expect(report.tables[0]?.reasons[0]).toMatch(/bound with another shape \(fixed-window\/60000\).*start fresh/);
    expect(describeRestore(report).join("\n")).toMatch(/"rule:api" \(fixed-window\/3600000\), waiting/);
  });

  it("a changed limit keeps every count (the shape is the same): decided under the new limit", () => {
    const { clock, text } = filled(10, 50, 3);
    const store = new MemoryStore({ maxKeys: 10 });
    store.restore(text);
    const s = new RateLimiterService({ clock, store }).addRule("api", { ...WINDOW, limit: 4 });
    expect(store.restored()).toMatchObject({ exact: 50, summarised: 0, dropped: 0 });
    for (let i = 0; i < 50; i++) {
      expect(s.check("api", `user:${i}`), `user:${i}`).toMatchObject({ allowed: true, remaining: 0 });
      expect(s.check("api", `user:${i}`).allowed).toBe(false);
    }
  });

  it("a rule not bound at all waits, and says so", () => {
    const { text } = filled(10, 20, 1);
    const store = new MemoryStore({ maxKeys: 10 });
    store.restore(text);
    expect(store.restored().tables[0]?.reasons[0]).toMatch(/no rule of this name is bound/);
  });
});

describe("malformed state files are refused whole", () => {
  const { text } = filled(10, 30, 2);

  it("a NaN instant in a record: ArgumentError naming the table, the key and the field; nothing loaded", () => {
    const doc = JSON.parse(text);
    const [key, record] = doc.tables[0].records[0];
    record.w = { $n: "NaN" };
    const store = new MemoryStore({ maxKeys: 10 });
    expect(() => store.restore(JSON.stringify(doc))).toThrow(ArgumentError);
    expect(() => store.restore(JSON.stringify(doc))).toThrow(
      `state file table 0: the record of key ${JSON.stringify(key)} holds NaN at w`,
    );
    expect(store.snapshot()).toContain('"tables":[]');
    expect(store.restored().tables).toEqual([]);
  });

  it("a NaN instant in a compact record: the table is refused whole (its keys start fresh) and the report says why", () => {
    const doc = JSON.parse(text);
    expect(doc.tables[0].compact.length).toBeGreaterThan(0);
    doc.tables[0].compact[0][2] = { $n: "NaN" }; // a fixed window's start
    const store = new MemoryStore({ maxKeys: 10 });
    store.restore(JSON.stringify(doc));
    const s = new RateLimiterService({ clock: new ManualClock(T), store }).addRule("api", WINDOW);
    expect(store.restored().tables[0]).toMatchObject({
      status: "dropped",
      dropped: 30,
      reasons: [expect.stringMatching(/a compact record .* does not fit the rule's layout/)],
    });
    expect(s.peek("api", "user:0")).toEqual(s.peek("api", "never-seen")); // a fresh key
  });

  it("NaN or malformed figures elsewhere: savedAt, a bucket, a fingerprint, a protected count, a read-back debt", () => {
    type Table = { compact: unknown[][]; records: unknown[][]; [field: string]: unknown };
    type Doc = { savedAt: unknown; tables: Table[] };
    const first = (d: Doc) => d.tables[0] as Table;
    const row = (d: Doc) => first(d).compact[0] as unknown[];
    const edits: Array<[string, (doc: Doc) => void, RegExp]> = [
      ["savedAt", (d) => void (d.savedAt = { $n: "NaN" }), /savedAt/],
      ["bucket", (d) => void row(d).splice(4, 1, 1e9), /compact records/],
      ["fingerprint", (d) => void row(d).splice(0, 1, -1), /compact records/],
      ["no compactAt", (d) => void delete first(d).compactAt, /compact records/],
      ["protected", (d) => void (first(d).protected = 99), /protected/],
      ["seed", (d) => void (first(d).seed = 2 ** 33), /seed/],
      ["debt", (d) => void (first(d).records[0] as unknown[]).push([{ $n: "NaN" }, 0]), /records must be/],
    ];
    for (const [what, edit, message] of edits) {
      const doc = JSON.parse(text);
      edit(doc);
      expect(() => new MemoryStore().restore(JSON.stringify(doc)), what).toThrow(message);
    }
  });
});

describe("sameLayout (the restore's layout check) refuses NaN wherever a number stands", () => {
  it("in an instant (template -Infinity), a count, a nested member and a ban's end", () => {
    const window = { w: Number.NEGATIVE_INFINITY, c: 0 };
    const ban = { n: 0, since: Number.NEGATIVE_INFINITY, until: Number.NEGATIVE_INFINITY };
    expect(sameLayout(window, { w: 5, c: 1 })).toBe(true);
    expect(sameLayout(window, { w: Number.NaN, c: 1 })).toBe(false);
    expect(sameLayout(window, { w: 5, c: Number.NaN })).toBe(false);
    expect(sameLayout([window, ban], [window, { ...ban, until: 9 }])).toBe(true);
    // A ban's end compares false with every instant when NaN: a ban that never starts. The
    // decision's figures stay finite, so only the layout check can see it.
    expect(sameLayout([window, ban], [window, { ...ban, until: Number.NaN }])).toBe(false);
    expect(sameLayout([window, ban], [{ w: Number.NaN, c: 0 }, ban])).toBe(false);
  });
});
