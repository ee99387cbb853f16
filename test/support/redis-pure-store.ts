/**
 * A reference store for parity with a clock that steps back: runs the algorithm steps on a plain
 * Map and never drops state. The memory store drops a key's state once it is equivalent to a
 * fresh key *for later instants*, which is exact while time moves forward; a clock that then
 * steps back would see the dropped state missing. Every step leaves state untouched on a peek
 * or a denial (the sliding log included, since it skips rather than prunes expired entries), so
 * the steps run on the stored records directly, composed exactly as the memory store composes.
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
          const states = maps.map((m, i) => {
            let state = m.get(key);
            if (state === undefined) {
              state = algos[i]?.create();
              if (!peek) m.set(key, state); // unchanged unless a commit changes it
            }
            return state;
          });
          if (algos.length === 1) return algos[0]?.step(states[0], t, cost, !peek) as Decision;
          const parts = algos.map((a, i) => a.step(states[i], t, cost, false));
          if (parts.some((p) => !p.allowed)) {
            return combine(unconsumed(parts, (i) => algos[i]?.step(states[i], t, 0, false) as Decision));
          }
          if (!peek) {
            for (let i = 0; i < algos.length; i++) algos[i]?.step(states[i], t, cost, true);
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
