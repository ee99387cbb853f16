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

/**
 * One thread's transaction on bucket words (shared-word.wat says what each does). Indices are
 * Int32 indices into the memory, blocks are numbered from 0; 1 and 0 stand for true and false.
 */
export interface SharedWord {
  /** Sets the table's geometry: its first block, Int32 words per block, and the widest entry's state words. */
  init(blockBase: number, blockWords: number, R: number): void;
  /** Reads the word whose low half is at `at` (the tag atomically, first): the bucket's index, or -1 (empty). */
  read(at: number): number;
  /** The bucket `take` read (-1: empty). */
  base(): number;
  /** The Int32 offset in its bucket of the key's entry `take` found (-1: none). */
  found(): number;
  /** The entries in use `take` counted. */
  count(): number;
  /** The Int32 words the entries in use `take` counted take. */
  used(): number;
  /** The private block (-1: none). */
  spare(): number;
  /** Gives the transaction its private block (-1: none). */
  setSpare(block: number): void;
  /** The private block's Int32 index (-1: none). */
  target(): number;
  /**
   * `read`, the key looked up and the entries counted, then (`draft` 1, the key there) the bucket
   * drafted: the Float64 index of the key's state, in the draft when drafted (-1: not there; -2: no private block).
   * With `draft` 1 the entry's width bits must equal `tag`'s; with 0 they are ignored.
   */
  take(at: number, h1: number, tag: number, draft: number): number;
  /** Copies the first `words` Int32 words (entries in use) of the bucket `read` saw into the private block, and marks the end. */
  draft(words: number): void;
  /** Replaces the word `read` saw by (its tag + 1, the private block); the replaced block becomes the private one. */
  publish(): number;
  /** 1 when the word `read` saw is unchanged. */
  unchanged(): number;
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
