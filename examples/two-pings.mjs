// The seed's example: at most two pings per second per user, decided at fixed instants.
import { classify } from "sluice";

const pings = [0, 300, 600, 999, 1000, 1300, 1999, 2000];
const spec = { type: "sliding", limit: 2, windowMs: 1000 };
const verdicts = classify(pings, spec);
for (const [i, at] of pings.entries())
  console.log(`${String(at).padStart(5)} ms  ${verdicts[i] ? "allowed" : "denied"}`);
