/**
 * The shared table's bucket word, read and replaced through WebAssembly (shared-word.wat): the
 * memory of a shared store is a shared `WebAssembly.Memory`, whose buffer is the
 * SharedArrayBuffer every JavaScript view reads, and each thread runs its own instance of the
 * module over it. One instance holds one transaction at a time (`read`, then `unchanged` or
 * `publish`), as shared-table.ts uses it.
 */
import { StoreError } from "../../core/errors.ts";
import { SHARED_WORD_WASM } from "./shared-word-wasm.ts";

/** Bytes of a WebAssembly page: a shared memory's size is a whole number of them. */
export const PAGE_BYTES = 65536;
/** The most bytes one shared memory holds (a 32-bit WebAssembly memory: 4 GiB). */
export const MAX_MEMORY_BYTES = 65536 * PAGE_BYTES;

/** One thread's operations on bucket words (Int32 indices into the memory). */
export interface SharedWord {
  /** Reads the 64-bit word whose low half is at Int32 index `at` (the tag atomically, first); returns the low half. */
  read(at: number): number;
  /** 1 when the word `read` saw is unchanged, else 0. */
  unchanged(): number;
  /** Replaces the word `read` saw with (its tag + 1, `low`) by compare-and-swap: 1 on success, else 0. */
  publish(low: number): number;
  /** Copies `n` Int32 words from `src` to `dst`. */
  copy(dst: number, src: number, n: number): void;
}

let compiled: WebAssembly.Module | undefined;

/** This thread's instance of the module over `memory`. */
export function sharedWord(memory: WebAssembly.Memory): SharedWord {
  compiled ??= new WebAssembly.Module(SHARED_WORD_WASM);
  return new WebAssembly.Instance(compiled, { sluice: { memory } }).exports as unknown as SharedWord;
}

/** A shared memory of at least `bytes` (whole pages, never grown); StoreError when the runtime has no WebAssembly. */
export function sharedMemory(bytes: number): WebAssembly.Memory {
  if (typeof WebAssembly !== "object") {
    throw new StoreError("SharedMemoryStore needs WebAssembly (its atomics run there), which this runtime lacks");
  }
  const pages = Math.ceil(bytes / PAGE_BYTES);
  return new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
}

/** The SharedArrayBuffer of a shared memory (typed as an ArrayBuffer by the DOM's declarations). */
export function bufferOf(memory: WebAssembly.Memory): SharedArrayBuffer {
  return memory.buffer as unknown as SharedArrayBuffer;
}
