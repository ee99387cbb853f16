// Operators see it coming (issue 34): when honest requests are being refused for want of room,
// stats().summaryErrorBound must say so and the one SLUICE_STORE_SATURATED warning must fire,
// naming the option to raise. The attack's F5 shape (700 fixed-window rules flooded at once)
// refused 12% of returning keys' requests while the bound read 0.003 (it only counted
// never-seen keys let through by the filter, to merely live cells). Scaled down: 20
// fixed-window rules at maxKeys 50, each flooded with keys spending their whole limit (their
// summary cells refuse), 40 returning keys per rule asking before the flood and twice after it:
// pushed out while new, they come back to full rows. Seeded differential against an uncapped store (SLUICE_SEED, printed).
import { type Decision, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { describe, expect, it } from "vitest";
import { warningsOf } from "../support/warnings.ts";

const SEED = Number(process.env.SLUICE_SEED ?? 34);
const RULES = 20;
const FLOOD = 400;
const GOOD = 40;
const SPEC = { algorithm: "fixed-window", limit: 10, windowMs: 3_600_000 } as const;

describe(`${RULES} rules flooded by keys spending their limit past maxKeys 50 (seed ${SEED})`, () => {
  it("when honest requests are refused, the error bound says so and the warning fires once", async () => {
    const clock = new ManualClock(Date.UTC(2026, 11, 7, 10));
    const store = new MemoryStore({ maxKeys: 50, seed: SEED });
    const capped = new RateLimiterService({ clock, store });
    const free = new RateLimiterService({ clock });
    for (let r = 0; r < RULES; r++) for (const s of [capped, free]) s.addRule(`r${r}`, SPEC);
    const t = { honest: 0, refused: 0, escapes: 0 };
    const returning = () => {
      for (let g = 0; g < GOOD; g++) {
        for (let r = 0; r < RULES; r++) {
          const got = (capped.check(`r${r}`, `user:${g}`) as Decision).allowed;
          const want = (free.check(`r${r}`, `user:${g}`) as Decision).allowed;
          if (want) t.honest++;
          if (want && !got) t.refused++;
          if (got && !want) t.escapes++;
        }
      }
    };
    const warnings = await warningsOf(() => {
      returning();
      // 8,000 flood keys: more than the compact tier's 4,687 slots, fewer than the filter's capacity.
      for (let k = 0; k < FLOOD; k++) {
        for (let r = 0; r < RULES; r++) {
          let n = 0;
          for (let j = 0; j < 11; j++) if ((capped.check(`r${r}`, `bot:${k}`) as Decision).allowed) n++;
          if (n > 10) t.escapes++;
        }
        if (k % 64 === 0) clock.advance(1);
      }
      returning();
      returning();
    });
    const s = store.stats();
    const ours = warnings.filter((w) => w.code === "SLUICE_STORE_SATURATED");
    console.log(
      `saturation: returning refused ${t.refused} of ${t.honest}, ${t.escapes} escapes; error bound ${s.summaryErrorBound.toExponential(1)}, filter ${s.filterErrorBound.toExponential(1)}, ${ours.length} warning(s) (seed ${SEED})`,
    );
    expect(t.escapes).toBe(0);
    // The shape refuses honest requests (more than 1%): the bound and the warning must say so.
    expect(t.refused).toBeGreaterThan(t.honest / 100);
    expect(s.summaryErrorBound).toBeGreaterThan(0.01);
    expect(ours).toHaveLength(1);
    expect(ours[0]?.message).toMatch(/raise `maxBytes` \(or `maxKeys`\)/);
  }, 120_000);
});
