// The bounds docs/threads.md states for one store: at most 4 GiB (one 32-bit WebAssembly memory),
// exactly at the largest maxKeys it names and refused one key past it, with an ArgumentError
// naming the options; and, where the runtime has no WebAssembly (`node --jitless`), a StoreError
// that says so rather than a TypeError from deep inside. Sizes are computed (paramsOf), not
// allocated: a 4 GiB store would be written whole by its free lists.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { ArgumentError } from "sluice";
import { expect, it } from "vitest";
import { MAX_MEMORY_BYTES } from "../../src/stores/compact/shared-word.ts";
import { layoutOf } from "../../src/stores/threads/layout.ts";
import { paramsOf } from "../../src/stores/threads/params.ts";
import { ensureBuilt, ROOT } from "../cli/helpers.ts";

it.each([
  [6, 25_126_110],
  [3, 41_754_579],
])("recordWords %i: maxKeys %i fits 4 GiB, one more is refused naming the options", (recordWords, largest) => {
  const fits = layoutOf(paramsOf({ maxKeys: largest, recordWords, seed: 1 })).bytes;
  expect(fits).toBeLessThanOrEqual(MAX_MEMORY_BYTES);
  expect(() => paramsOf({ maxKeys: largest + 1, recordWords, seed: 1 })).toThrow(ArgumentError);
  expect(() => paramsOf({ maxKeys: largest + 1, recordWords, seed: 1 })).toThrow(
    new RegExp(`maxKeys: ${largest + 1}, recordWords: ${recordWords}, maxRules: 64 .*at most 4 GiB`),
  );
});

it("without WebAssembly (node --jitless) the constructor throws a StoreError that says so", () => {
  ensureBuilt();
  const script = `
    const { SharedMemoryStore } = await import(${JSON.stringify(join(ROOT, "dist/stores/threads/index.js"))});
    try { new SharedMemoryStore({ maxKeys: 100 }); console.log("constructed"); }
    catch (error) { console.log(error.name, error.code, error.message); }`;
  const out = execFileSync(process.execPath, ["--jitless", "--input-type=module", "-e", script], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  expect(out.trim()).toBe(
    "StoreError ERR_STORE SharedMemoryStore needs WebAssembly (its atomics run there), which this runtime lacks",
  );
});
