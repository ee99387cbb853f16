/**
 * Whether V8's heap fits the memory the process may use. Node 20 sizes its heap from the
 * machine's memory, not from a cgroup's limit (systemd's `MemoryMax=`, a container's memory
 * limit): on a 24 GB host V8 lets the heap reach 4.3 GB, so garbage can pile up past a 512 MB
 * `MemoryMax` and the kernel kills the service. V8 cannot be resized once started (setting
 * `--max-old-space-size` at run time changes nothing) and a relaunch would put a second Node
 * process in the same cgroup, so `sluice serve` reads the limit and, when the heap could
 * outgrow it, says at start which flag fits it (three quarters of the limit, the rest for
 * buffers, code and the worker thread that parses large Envoy configs).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { getHeapStatistics } from "node:v8";

/** Share of the cgroup's limit advised for V8's old space. */
const HEAP_SHARE = 0.75;

/**
 * The memory limit of this process's cgroup in bytes, or undefined when there is none: cgroup v2
 * `memory.max` ("max": none), else v1 `memory/memory.limit_in_bytes` (a huge value: none), under
 * `root` (tests point it at a directory of their own).
 */
export function cgroupMemoryLimit(root = "/sys/fs/cgroup"): number | undefined {
  for (const file of ["memory.max", join("memory", "memory.limit_in_bytes")]) {
    let text: string;
    try {
      text = readFileSync(join(root, file), "utf8").trim();
    } catch {
      continue;
    }
    const bytes = Number(text);
    // v1 writes "no limit" as a page-rounded 2^63; anything past 2^50 (1 PiB) is no limit.
    return Number.isSafeInteger(bytes) && bytes > 0 && bytes < 2 ** 50 ? bytes : undefined;
  }
  return undefined;
}

/** Whether the heap size was chosen by the user: `--max-old-space-size` on the command line or in NODE_OPTIONS. */
export function heapSizeGiven(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  const given = (arg: string) => /^--max[-_]old[-_]space[-_]size(=|$)/.test(arg);
  return execArgv.some(given) || (nodeOptions ?? "").split(/\s+/).some(given);
}

/**
 * The start-up line advising a heap flag, or undefined when the heap fits: a cgroup limit is set,
 * the user gave no heap size, and V8's heap limit passes {@link HEAP_SHARE} of the cgroup's.
 */
export function heapAdvice(limitBytes: number | undefined, heapLimitBytes: number, given: boolean): string | undefined {
  if (limitBytes === undefined || given || heapLimitBytes <= limitBytes * HEAP_SHARE) return undefined;
  const mb = (b: number) => Math.floor(b / 2 ** 20);
  const advised = mb(limitBytes * HEAP_SHARE);
  return (
    `warning: this process's cgroup may use ${mb(limitBytes)} MB, but V8's heap may grow to ${mb(heapLimitBytes)} MB ` +
    `(Node sizes it from the machine): start node with --max-old-space-size=${advised} ` +
    `(or NODE_OPTIONS=--max-old-space-size=${advised}) so garbage is collected before the limit kills the service`
  );
}

/** {@link heapAdvice} for this process. */
export function heapAdviceHere(): string | undefined {
  return heapAdvice(
    cgroupMemoryLimit(),
    getHeapStatistics().heap_size_limit,
    heapSizeGiven(process.execArgv, process.env.NODE_OPTIONS),
  );
}
