// Preloaded (node --import) by test/throttle/fleet-socket-stall.test.ts into every process of a
// fleet: the process is "descheduled" for 6 ms inside every third reading of performance.now(),
// as a loaded machine does at random. Real time passes (a busy wait), so the processes' clocks
// stay the one system clock. Two readings a few ms apart then often straddle a deadline: the
// wake-up timer of a throttle key whose refusal said "retry in 1-5 ms" was found due before it
// was armed, and fired inside the call that arms it (src/core/clock.ts `after`), before the
// throttle held its canceller: the key then slept for good.
const real = performance.now.bind(performance);
let calls = 0;
performance.now = () => {
  if (++calls % 3 === 0) {
    const until = real() + 6;
    while (real() < until) {}
  }
  return real();
};
