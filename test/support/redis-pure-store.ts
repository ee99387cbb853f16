/**
 * A reference store for parity with a clock that steps back: runs the algorithm steps on a plain
 * Map, never drops state, and runs every step that must not change state (peeks, denials, the
 * trial steps of a composite) on a copy, so "a peek or a denial changes nothing" holds exactly.
 * (The TS sliding-log step prunes expired entries in place even on a peek; that is invisible
 * while time only moves forward, but a clock that then steps back sees the difference.)
 */
import { combine, type Decision, type Store } from "sluice";
import { unconsumed } from "../../src/composite.ts";

/** Steps on a Map, composites exactly as the memory store composes them. */
export function pureStore(): Store {
  const tables = new Map<string, Map<string, unknown>>();
  return {
    synchronous: true,
    bind(rule) {
      const maps = rule.algorithms.map((a, i) => {
        const id = `${rule.id}\u0000${i}\u0000${a.kind}`;
        let m = tables.get(id);
        if (m === undefined) tables.set(id, (m = new Map()));
        return m;
      });
      const algos = rule.algorithms;
      return {
        check(key, cost, now, peek): Decision {
          const t = now as number;
          const states = maps.map((m, i) => m.get(key) ?? (algos[i]?.create() as unknown));
          const copy = (i: number) => structuredClone(states[i]);
          if (algos.length === 1) {
            const trial = copy(0);
            const d = algos[0]?.step(trial, t, cost, !peek) as Decision;
            if (d.allowed && !peek) maps[0]?.set(key, trial);
            return d;
          }
          const parts = algos.map((a, i) => a.step(copy(i), t, cost, false));
          if (parts.some((p) => !p.allowed)) {
            return combine(unconsumed(parts, (i) => algos[i]?.step(copy(i), t, 0, false) as Decision));
          }
          if (!peek) {
            algos.forEach((a, i) => {
              a.step(states[i], t, cost, true);
              maps[i]?.set(key, states[i]);
            });
          }
          return combine(parts);
        },
        reset(key) {
          for (const m of maps) m.delete(key);
        },
        release() {},
      };
    },
  };
}
