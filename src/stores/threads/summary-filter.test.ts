// The summary filter at fixed inputs: what it holds, its false positives at its capacity, and
// when a rotation may forget (only an older generation whose every rule's state has passed).
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../core/seeded-random.ts";
import { bufferOf } from "../compact/shared-word.ts";
import { createMemory, H, viewsOf } from "./layout.ts";
import { paramsOf } from "./params.ts";
import { SummaryFilter } from "./summary-filter.ts";

const SEED = 20261202;

function filterOf(maxKeys: number, spent = false) {
  const { memory, layout } = createMemory(paramsOf({ maxKeys, seed: 1 }));
  const views = viewsOf(bufferOf(memory));
  return { filter: new SummaryFilter(views, layout, spent), I: views.I, layout };
}

/** Seeded fingerprints (h1, h2 with its low 16 bits clear, as the store's). */
function keys(n: number, seed: number): [number, number][] {
  const random = mulberry32(seed);
  const word = () => (random() * 0x100000000) >>> 0;
  return Array.from({ length: n }, () => [word(), (word() & 0xffff0000) >>> 0]);
}

describe("SummaryFilter", () => {
  for (const [name, spent] of [
    ["summary", false],
    ["spent", true],
  ] as const) {
    it(`${name}: holds what was added, under its rule only, and no false positive is likelier than 0.2% at capacity`, () => {
      const { filter, layout } = filterOf(1000, spent);
      const added = keys(layout.filterBits / 16, SEED);
      for (const [h1, h2] of added) filter.add(3, h1, h2, 1000);
      for (const [h1, h2] of added) expect(filter.mayHold(3, h1, h2), `seed ${SEED}`).toBe(true);
      let positives = 0;
      let otherRule = 0;
      const others = keys(100_000, SEED + 1);
      for (const [h1, h2] of others) if (filter.mayHold(3, h1, h2)) positives++;
      for (const [h1, h2] of added) if (filter.mayHold(4, h1, h2)) otherRule++;
      // ((1 - e^(-8/8))^8)^2 = 0.07% expected at capacity (record part × key part).
      expect(positives / others.length, `seed ${SEED}`).toBeLessThan(0.002);
      // The same keys under another rule pass the key part: the record part's 2.6% alone.
      expect(otherRule / added.length, `seed ${SEED}`).toBeLessThan(0.04);
    });

    it(`${name}: tells brand-new keys apart when a few keys fill it many times over through many rules`, () => {
      // 64 keys × 24 rules: 3 times the records a generation is sized for (its 16 bits a record
      // all set past that), but few keys. With probes hashed only with the rule, 28% of
      // brand-new keys read back as held here (every request of 200 flooded rules: 43.6% refused).
      const { filter, layout } = filterOf(100, spent);
      const rules = Math.ceil((3 * (layout.filterBits / 16)) / 64);
      const added = keys(64, SEED);
      for (let r = 0; r < rules; r++) for (const [h1, h2] of added) filter.add(r, h1, h2, 1000);
      for (const [h1, h2] of added) expect(filter.mayHold(rules - 1, h1, h2), `seed ${SEED}`).toBe(true);
      let positives = 0;
      const others = keys(20_000, SEED + 1);
      for (const [h1, h2] of others) if (filter.mayHold(0, h1, h2)) positives++;
      expect(positives / others.length, `seed ${SEED}`).toBeLessThan(0.01);
    });
  }

  it("says when the current generation is full, then every 256 joins", () => {
    const { filter, layout } = filterOf(100);
    const capacity = layout.filterBits / 16;
    const full = keys(capacity + 600, SEED).flatMap(([h1, h2], i) => (filter.add(0, h1, h2, 10) ? [i + 1] : []));
    expect(full).toEqual([capacity, capacity + 256, capacity + 512]);
  });

  it("forgets a generation only once it is the older one and its state has passed on each rule's clock", () => {
    const { filter, I } = filterOf(100);
    const [[h1, h2]] = keys(1, SEED) as [[number, number]];
    filter.add(0, h1, h2, 5000); // generation 0, rule 0 fresh again at 5000
    filter.add(1, h1, h2, 70); // rule 1 at 70
    // The older generation (1) holds nothing: it is emptied and made current; the key stays (in 0).
    expect(filter.rotate(() => false)).toBe(true);
    expect(Atomics.load(I, H.filterEpoch)).toBe(1);
    expect(filter.mayHold(0, h1, h2)).toBe(true);
    // Generation 0 is the older one now: forgotten only when both rules' fresh-at have passed.
    const seen: number[][] = [];
    const rule1Only = (r: number, at: number) => {
      seen.push([r, at]);
      return r === 1;
    };
    expect(filter.rotate(rule1Only)).toBe(false);
    expect(seen).toEqual([[0, 5000]]);
    expect(filter.rotate((_, at) => at <= 4999)).toBe(false);
    expect(filter.mayHold(0, h1, h2)).toBe(true);
    expect(filter.rotate((_, at) => at <= 5000)).toBe(true);
    expect(filter.mayHold(0, h1, h2)).toBe(false);
    expect(filter.mayHold(1, h1, h2)).toBe(false);
  });

  it("never rotates while another thread does (or died doing it): it keeps every key instead", () => {
    const { filter, I } = filterOf(100);
    const [[h1, h2]] = keys(1, SEED) as [[number, number]];
    filter.add(0, h1, h2, 10);
    Atomics.store(I, H.filterBusy, 1);
    expect(filter.rotate(() => true)).toBe(false);
    expect(filter.rotate(() => true)).toBe(false);
    expect(filter.mayHold(0, h1, h2)).toBe(true);
    expect(Atomics.load(I, H.filterEpoch)).toBe(0);
    Atomics.store(I, H.filterBusy, 0);
    expect(filter.rotate(() => true)).toBe(true);
    expect(filter.rotate(() => true)).toBe(true);
    expect(filter.mayHold(0, h1, h2)).toBe(false);
  });

  it("keeps Infinity and NaN fresh-at as never past a finite instant", () => {
    const { filter } = filterOf(100);
    const [[h1, h2]] = keys(1, SEED) as [[number, number]];
    filter.add(0, h1, h2, Number.POSITIVE_INFINITY);
    filter.add(1, h1, h2, Number.NaN);
    filter.rotate(() => false);
    expect(filter.rotate((_, at) => at <= Number.MAX_SAFE_INTEGER)).toBe(false);
    expect(filter.mayHold(0, h1, h2)).toBe(true);
  });
});
