// A worker thread of the test/threads suites: attaches to the SharedMemoryStore in `workerData`
// and runs one task on it. Imports the built package (test/threads/support.ts builds it when
// src/ is newer). All tasks decide at instants they are given, never the system clock, so the
// expected totals do not depend on when the threads happen to run.
import { parentPort, workerData } from "node:worker_threads";
import { mulberry32 } from "../../dist/core/seeded-random.js";
import { createLimiter } from "../../dist/limiter.js";
import { SharedMemoryStore } from "../../dist/stores/threads/index.js";

const { handle, task } = workerData;
const store = SharedMemoryStore.attach(handle);
const control = new Int32Array(task.control);
let now = task.now ?? 0;
const clock = { now: () => now };
const limiters = task.rules.map((r) =>
  createLimiter(r.spec, { store, clock, name: r.name, ...(r.ban === undefined ? {} : { ban: r.ban }) }),
);

/** Waits (Atomics.wait) until `control[at]` is `value`. */
function waitFor(at, value) {
  for (;;) {
    const seen = Atomics.load(control, at);
    if (seen === value) return;
    Atomics.wait(control, at, seen, 1000);
  }
}

if (task.kind === "flood") {
  // Every thread starts together (control[0] becomes 1), then checks its keys in order.
  Atomics.add(control, 1, 1);
  Atomics.notify(control, 1);
  waitFor(0, 1);
  // Admissions per key, or per rule with `perRule`, or per rule and key (index r · keys + i) with `perKeyRule`.
  const K = task.keys.length;
  const allowed = new Array(task.perKeyRule ? limiters.length * K : task.perRule ? limiters.length : K).fill(0);
  const slot = (r, i) => (task.perKeyRule ? r * K + i : task.perRule ? r : i);
  for (let round = 0; round < task.rounds; round++) {
    for (let i = 0; i < task.keys.length; i++) {
      // The first `checked` rules only (default all): the others are bound, not checked.
      for (let r = 0; r < (task.checked ?? limiters.length); r++) {
        if (limiters[r].tryAcquire(task.keys[i], task.cost ?? 1).allowed) allowed[slot(r, i)]++;
      }
    }
  }
  store.close();
  parentPort.postMessage({ allowed });
} else if (task.kind === "trace") {
  // A fixed interleaving: step j runs when control[0] === j, in the thread the trace names.
  const decisions = {};
  for (const [j, step] of task.steps) {
    waitFor(0, j);
    now = step.at;
    const limiter = limiters[step.rule];
    const d =
      step.op === "check"
        ? limiter.tryAcquire(step.key, step.cost)
        : step.op === "peek"
          ? limiter.peek(step.key, step.cost)
          : step.op === "refund"
            ? limiter.refund(step.key, step.cost)
            : limiter.reset(step.key);
    decisions[j] = d ?? null;
    Atomics.store(control, 0, j + 1);
    Atomics.notify(control, 0);
  }
  store.close();
  parentPort.postMessage({ decisions });
} else if (task.kind === "rounds") {
  // Rounds in lockstep at advancing instants: round r runs at task.now + r · task.stepMs, and no
  // thread starts it before every thread ended the one before (control[2] counts rounds ended).
  // Each round checks every key `checks` times per rule, from the thread's own offset; the
  // admissions are counted per round and key (index r · keys + i, rule 0 only).
  Atomics.add(control, 1, 1);
  Atomics.notify(control, 1);
  waitFor(0, 1);
  const K = task.keys.length;
  const allowed = new Array(task.rounds * K).fill(0);
  let approximate = 0;
  for (let round = 0; round < task.rounds; round++) {
    now = task.now + round * task.stepMs;
    for (let j = 0; j < K; j++) {
      const i = (j + task.offset) % K;
      for (let c = 0; c < task.checks; c++) {
        const d = limiters[0].tryAcquire(task.keys[i]);
        if (d.allowed) allowed[round * K + i]++;
        if (d.approximate === true) approximate++;
      }
    }
    Atomics.add(control, 2, 1);
    Atomics.notify(control, 2);
    for (;;) {
      const ended = Atomics.load(control, 2);
      if (ended >= task.threads * (round + 1)) break;
      Atomics.wait(control, 2, ended, 1000);
    }
  }
  store.close();
  parentPort.postMessage({ allowed, approximate });
} else if (task.kind === "cliff") {
  // A flood past maxKeys (flood-cliff.test.ts), this thread's share (`slot` of `threads`), in
  // rounds from `from` to `to`, at task.now + round ms: each round, every honest key checks once
  // per rule, the round's brand-new keys once, then the round's flood keys `spend` times each.
  // Answers the honest and brand-new refusals per rule and the flood's admissions per rule and key.
  // With `anyRule`, a request goes through every rule in turn (a server's limiters) and the
  // refusals are per request (refused when any rule refuses), at index 0.
  const F = task.flood;
  const admitted = new Array(limiters.length * F).fill(0);
  const honest = new Array(limiters.length).fill(0);
  const fresh = new Array(limiters.length).fill(0);
  const mine = (i) => i % task.threads === task.slot;
  /** Whether every rule admits `key` (all are checked). */
  const allAdmit = (key) => {
    let allowed = true;
    for (const limiter of limiters) if (!limiter.tryAcquire(key).allowed) allowed = false;
    return allowed;
  };
  for (let round = task.from; round < task.to; round++) {
    now = task.now + round;
    if (task.anyRule) {
      for (let g = 0; g < task.honest; g++) if (mine(g) && !allAdmit(`user:${g}`)) honest[0]++;
      for (let n = 0; n < task.fresh; n++) if (mine(n) && !allAdmit(`new:${round}:${n}`)) fresh[0]++;
    } else {
      for (let r = 0; r < limiters.length; r++) {
        for (let g = 0; g < task.honest; g++) if (mine(g) && !limiters[r].tryAcquire(`user:${g}`).allowed) honest[r]++;
        for (let n = 0; n < task.fresh; n++)
          if (mine(n) && !limiters[r].tryAcquire(`new:${round}:${n}`).allowed) fresh[r]++;
      }
    }
    const per = F / task.rounds;
    for (let k = round * per; k < (round + 1) * per; k++) {
      if (!mine(k)) continue;
      for (let r = 0; r < limiters.length; r++)
        for (let e = 0; e < task.spend; e++) if (limiters[r].tryAcquire(`bot:${k}`).allowed) admitted[r * F + k]++;
    }
  }
  store.close();
  parentPort.postMessage({ honest, fresh, admitted });
} else if (task.kind === "chaos") {
  // Checks every rule until the main thread says stop (control[0] === 1) or the thread is
  // terminated. Per slot, from control[2 + slot · (2 + rules)]: decisions made, 1 while one is
  // in flight (a thread killed then may or may not have had it counted), admissions per rule.
  const at = 2 + task.slot * (2 + limiters.length);
  while (Atomics.load(control, 0) === 0) {
    const key = task.keys[Atomics.load(control, at) % task.keys.length];
    Atomics.store(control, at + 1, 1);
    for (let r = 0; r < limiters.length; r++)
      if (limiters[r].tryAcquire(key).allowed) Atomics.add(control, at + 2 + r, 1);
    Atomics.store(control, at + 1, 0);
    Atomics.add(control, at, 1);
  }
  store.close();
  parentPort.postMessage({ done: true });
} else if (task.kind === "evict") {
  // Every thread starts together, then walks the keys in chunks of `chunk`, each chunk `passes`
  // times from the thread's own offset in it (backwards with `reverse`), making `checks`
  // decisions per rule per key on each visit. With `mixer`, a key
  // i with i % mixEvery === 0 gets, instead of some checks, a refund, a reset or a block
  // (seeded): the counts of each, per rule and key (index r · keys + i), bound what it may admit.
  Atomics.add(control, 1, 1);
  Atomics.notify(control, 1);
  waitFor(0, 1);
  const K = task.keys.length;
  const counts = () => new Array(limiters.length * K).fill(0);
  const allowed = counts();
  const refunds = counts();
  const resets = counts();
  let approximate = 0;
  let blocked = 0;
  let unkept = 0;
  // The mixer's choices replay from the seed (the interleaving does not).
  const random = mulberry32(task.seed);
  // Chunk by chunk, so that a key is checked again while its bucket overflows around it.
  const size = task.chunk;
  for (let first = 0; first < K; first += size) {
    const n = Math.min(size, K - first);
    for (let pass = 0; pass < task.passes; pass++) {
      for (let j = 0; j < n; j++) {
        const i = first + (((task.reverse ? n - 1 - j : j) + task.offset) % n);
        const key = task.keys[i];
        const mixed = task.mixer === true && i % task.mixEvery === 0;
        for (let r = 0; r < limiters.length; r++) {
          const limiter = limiters[r];
          for (let c = 0; c < task.checks; c++) {
            const x = mixed ? random() : 1;
            if (x < 0.2) {
              limiter.refund(key, 1);
              refunds[r * K + i]++;
            } else if (x < 0.3) {
              limiter.reset(key);
              resets[r * K + i]++;
            } else if (x < 0.305) {
              try {
                limiter.block(key, 3_600_000);
                blocked++;
              } catch (error) {
                if (error?.code !== "ERR_STORE") throw error;
                unkept++;
              }
            } else {
              const d = limiter.tryAcquire(key);
              if (d.allowed) allowed[r * K + i]++;
              if (d.approximate === true) approximate++;
            }
          }
        }
      }
    }
  }
  store.close();
  parentPort.postMessage({ allowed, refunds, resets, approximate, blocked, unkept });
}
