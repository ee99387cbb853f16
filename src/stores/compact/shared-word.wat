;; The shared table's bucket word operations (shared-table.ts) in WebAssembly: its atomics are
;; machine instructions here, where JavaScript's Atomics on a SharedArrayBuffer are calls into
;; V8's builtins, and a 64-bit compare-and-swap there needs BigInt operands and returns a new
;; BigInt (about 340 instructions a decision under callgrind, against about 110 here).
;; scripts/embed-wasm.mjs compiles this file into shared-word-wasm.ts.
;;
;; Every instance keeps the word its thread last read in globals (instances are per thread:
;; globals are not shared), as a transaction: `read`, then `unchanged` or `publish`.
;; Indices are Int32 indices into the memory (the units of the JavaScript views).
(module
  (import "sluice" "memory" (memory 0 65536 shared))
  ;; The byte offset of the bucket word last read, and the tag and block halves seen there.
  (global $at (mut i32) (i32.const 0))
  (global $tag (mut i32) (i32.const 0))
  (global $low (mut i32) (i32.const 0))

  ;; Reads the word at Int32 index `at` (its low half): the tag first and atomically, so the
  ;; block read after it is that publish's or a later one's (and a later one moved the tag).
  ;; Returns the low half: the block index + 1 (0: empty bucket).
  (func (export "read") (param $at i32) (result i32)
    (global.set $at (i32.shl (local.get $at) (i32.const 2)))
    (global.set $tag (i32.atomic.load offset=4 (global.get $at)))
    (global.set $low (i32.load (global.get $at)))
    (global.get $low))

  ;; 1 when the word is still the one `read` saw (what was read since is then consistent).
  (func (export "unchanged") (result i32)
    (i32.and
      (i32.eq (i32.atomic.load offset=4 (global.get $at)) (global.get $tag))
      (i32.eq (i32.load (global.get $at)) (global.get $low))))

  ;; Replaces the word `read` saw by (tag + 1, `low`) in one compare-and-swap: 1 on success,
  ;; 0 when another thread published first. The tag wraps at 2^32.
  (func (export "publish") (param $low i32) (result i32)
    (local $expected i64)
    (local.set $expected
      (i64.or
        (i64.extend_i32_u (global.get $low))
        (i64.shl (i64.extend_i32_u (global.get $tag)) (i64.const 32))))
    (i64.eq
      (local.get $expected)
      (i64.atomic.rmw.cmpxchg
        (global.get $at)
        (local.get $expected)
        (i64.or
          (i64.extend_i32_u (local.get $low))
          (i64.shl (i64.extend_i32_u (i32.add (global.get $tag) (i32.const 1))) (i64.const 32))))))

  ;; Copies `n` Int32 words from `src` to `dst` (a bucket's entries into a private block).
  (func (export "copy") (param $dst i32) (param $src i32) (param $n i32)
    (memory.copy
      (i32.shl (local.get $dst) (i32.const 2))
      (i32.shl (local.get $src) (i32.const 2))
      (i32.shl (local.get $n) (i32.const 2))))
)
