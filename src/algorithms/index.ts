/** Builds the algorithm step for a normalised spec. */

import type { Algorithm } from "./algorithm.ts";
import { concurrency } from "./concurrency.ts";
import { fixedWindow } from "./fixed-window.ts";
import { gcra, leakyBucket } from "./gcra.ts";
import { slidingLog } from "./sliding-log.ts";
import { slidingWindow } from "./sliding-window.ts";
import type { AlgorithmSpec } from "./specs.ts";
import { tokenBucket } from "./token-bucket.ts";

export type { Algorithm } from "./algorithm.ts";

/** The step for `spec`, which must already be validated. */
export function algorithmFor(spec: AlgorithmSpec): Algorithm {
  switch (spec.algorithm) {
    case "fixed-window":
      return fixedWindow(spec) as Algorithm;
    case "sliding-log":
      return slidingLog(spec) as Algorithm;
    case "sliding-window":
      return slidingWindow(spec) as Algorithm;
    case "token-bucket":
      return tokenBucket(spec) as Algorithm;
    case "gcra":
      return gcra(spec) as Algorithm;
    case "leaky-bucket":
      return leakyBucket(spec) as Algorithm;
    case "concurrency":
      return concurrency(spec) as Algorithm;
  }
}
