// A sliding log's limit lowered by updateRule on a SharedMemoryStore keeps every timestamp it
// counted, as on MemoryStore. Whether a rule without a ban has a spare word for a `block`
// (threads/codec.ts `blockAt`) depends on its limits; the record's layout must not: when the
// word appeared, the log's capacity shrank by one, a full log's count no longer fit, and it
// was read as empty: the key was admitted a whole new limit at once.
import { type AlgorithmSpec, type Decision, ManualClock, MemoryStore, RateLimiterService } from "sluice";
import { SharedMemoryStore } from "sluice/threads";
import { expect, it } from "vitest";

const T0 = 1_800_000_000_000;
const log = (limit: number): AlgorithmSpec => ({ algorithm: "sliding-log", limit, windowMs: 60_000 });
const fw = (limit: number): AlgorithmSpec => ({ algorithm: "fixed-window", limit, windowMs: 60_000 });

/** The same steps on both stores: checks at a limit, the limit lowered, checks, a block, checks once the window passed. */
function run(store: MemoryStore | SharedMemoryStore, before: AlgorithmSpec[], after: AlgorithmSpec[]): unknown[] {
  const clock = new ManualClock(T0);
  const spec = (s: AlgorithmSpec[]) => (s.length === 1 ? (s[0] as AlgorithmSpec) : s);
  const service = new RateLimiterService({ store, clock }).addRule("api", spec(before));
  const out: unknown[] = [];
  const check = () => {
    const d = service.check("api", "k") as Decision;
    out.push([d.allowed, d.remaining, d.banned ?? false]);
  };
  for (let i = 0; i < 8; i++) check();
  service.updateRule("api", spec(after));
  clock.advance(1000);
  for (let i = 0; i < 3; i++) check();
  // A block lives in the word the lowered limit made spare: the log, holding more than its new
  // limit, must leave it alone (and the block must not read back as a timestamp).
  service.block("api", "k", 5000);
  clock.advance(4999);
  check();
  clock.advance(1);
  for (let i = 0; i < 3; i++) check();
  clock.set(T0 + 60_001);
  for (let i = 0; i < 5; i++) check();
  return out;
}

it.each([
  ["a bare log, 7 → 4", [log(7)], [log(4)]],
  ["a log then a fixed window, 5 → 2", [log(5), fw(9)], [log(2), fw(9)]],
  ["a fixed window then a log, 5 → 2", [fw(9), log(5)], [fw(9), log(2)]],
])("%s: decides as MemoryStore", (_, before, after) => {
  const shared = new SharedMemoryStore({ maxKeys: 64, recordWords: 8 });
  expect(run(shared, before, after)).toEqual(run(new MemoryStore(), before, after));
});
