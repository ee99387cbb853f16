;; The shared table's transaction on one bucket word (shared-table.ts) in WebAssembly: its
;; atomics are machine instructions here, where JavaScript's Atomics on a SharedArrayBuffer are
;; calls into V8's builtins (a 64-bit compare-and-swap there takes BigInt operands and returns a
;; new BigInt), and loops over the memory pay no typed-array checks per word.
;; scripts/embed-wasm.mjs compiles this file into shared-word-wasm.ts.
;;
;; Each thread runs its own instance (globals are per instance, not shared), which holds that
;; thread's transaction: the word it read, the bucket it scanned, and its private block (the
;; block its next draft goes to, taken from the pool by shared-table.ts). Indices are Int32
;; indices into the memory (the units of the JavaScript views), blocks are numbered from 0.
;;
;; An entry is 2 + 2 × w Int32 words: the key's fingerprint, its tag (bits 16-22: w, its state
;; words, 0 standing for `$R`; bit 23: the read-back bit, bit 15: the pin bit, bit 14: the
;; returning bit, those three always ignored by the scan; 0: no entry), then its state (w float64 words). Entries in use are a prefix of the
;; block, and a block with room for another entry's first two words ends with a tag of 0
;; (compact/shared-bucket.ts).
(module
  (import "sluice" "memory" (memory 0 65536 shared))
  ;; The table's geometry (`init`): the first block's Int32 index, Int32 words per block and per entry.
  (global $blockBase (mut i32) (i32.const 0))
  (global $blockWords (mut i32) (i32.const 0))
  (global $R (mut i32) (i32.const 0))
  ;; The transaction: the word's byte offset, the tag and block halves seen there, the published
  ;; bucket's Int32 index (-1: empty), the key's entry (-1: none) and the entries in use.
  (global $at (mut i32) (i32.const 0))
  (global $tag (mut i32) (i32.const 0))
  (global $low (mut i32) (i32.const 0))
  (global $base (mut i32) (i32.const -1))
  (global $found (mut i32) (i32.const -1))
  (global $count (mut i32) (i32.const 0))
  ;; Int32 words in use in the bucket `take` read.
  (global $used (mut i32) (i32.const 0))
  ;; This thread's private block (-1: none).
  (global $spare (mut i32) (i32.const -1))

  (func (export "init") (param $blockBase i32) (param $blockWords i32) (param $R i32)
    (global.set $blockBase (local.get $blockBase))
    (global.set $blockWords (local.get $blockWords))
    (global.set $R (local.get $R)))

  ;; Reads the word whose low half is at Int32 index `at`: the tag first and atomically, so the
  ;; block read after it is that publish's or a later one's (and a later one moved the tag).
  ;; Returns the published bucket's Int32 index, or -1 when the bucket is empty.
  (func $read (export "read") (param $at i32) (result i32)
    (global.set $at (i32.shl (local.get $at) (i32.const 2)))
    (global.set $tag (i32.atomic.load offset=4 (global.get $at)))
    (global.set $low (i32.load (global.get $at)))
    (global.set $base
      (if (result i32) (i32.eqz (global.get $low))
        (then (i32.const -1))
        (else (i32.add (global.get $blockBase)
                (i32.mul (i32.sub (global.get $low) (i32.const 1)) (global.get $blockWords))))))
    (global.get $base))

  ;; `read`, then the key (`h1`, `key`: its tag) looked up in the bucket and the entries in use
  ;; counted, in one pass; with `draft` 1, when the key is there, the bucket is then drafted into
  ;; the private block (as `draft` does, and the key's entry marked returning when it is not the newest). Returns the Float64 index of the key's state (in the
  ;; draft when drafted), or -1 when the key is not there (nothing drafted), or -2 when it is and
  ;; a draft was asked for without a private block. One flat function that repeats what `$read`
  ;; and `$draft` do: calls between WebAssembly functions are not inlined here, and calling those
  ;; two (with a `$stateAt`) cost 122 instructions more a call (callgrind, 2 entries: 369 -> 491).
  ;; Entries are as wide as their rule (tag bits 16-22: the state words, 0 for `$R`), so the scan
  ;; steps by each entry's width and stops at the block's end: a torn width never reads past it.
  ;; With `draft` 1 the width bits of `key` are compared too (the lean path decides only a record
  ;; as wide as its rule's new ones; any other goes the general way), with 0 they are not.
  (func (export "take") (param $at i32) (param $h1 i32) (param $key i32) (param $draft i32) (result i32)
    (local $a i32) (local $low i32) (local $base i32) (local $o i32) (local $e i32) (local $w i32)
    (local $t i32) (local $found i32) (local $dst i32) (local $s i32) (local $d i32) (local $end i32)
    (local $cap i32) (local $next i32) (local $fo i32) (local $mask i32)
    ;; A draft (the lean path) takes only an entry of the width `key` names; a lookup any width.
    (local.set $mask (select (i32.const 0xff7f3fff) (i32.const 0xff003fff) (local.get $draft)))
    (local.set $key (i32.and (local.get $key) (local.get $mask)))
    (local.set $a (i32.shl (local.get $at) (i32.const 2)))
    (global.set $at (local.get $a))
    (global.set $tag (i32.atomic.load offset=4 (local.get $a)))
    (local.set $low (i32.load (local.get $a)))
    (global.set $low (local.get $low))
    (local.set $found (i32.const -1))
    (local.set $base (i32.const -1))
    (if (local.get $low)
      (then
        (local.set $base
          (i32.add (global.get $blockBase)
            (i32.mul (i32.sub (local.get $low) (i32.const 1)) (global.get $blockWords))))
        (local.set $o (i32.shl (local.get $base) (i32.const 2)))
        (local.set $cap (i32.add (local.get $o) (i32.shl (global.get $blockWords) (i32.const 2))))
        (block $end
          (loop $next
            (br_if $end (i32.gt_u (i32.add (local.get $o) (i32.const 8)) (local.get $cap)))
            (local.set $t (i32.load offset=4 (local.get $o)))
            (br_if $end (i32.eqz (local.get $t)))
            (local.set $w (i32.and (i32.shr_u (local.get $t) (i32.const 16)) (i32.const 0x7f)))
            (if (i32.eqz (local.get $w)) (then (local.set $w (global.get $R))))
            (local.set $next (i32.add (local.get $o) (i32.add (i32.const 8) (i32.shl (local.get $w) (i32.const 3)))))
            (br_if $end (i32.gt_u (local.get $next) (local.get $cap)))
            (if (i32.and
                  (i32.eq (i32.and (local.get $t) (local.get $mask)) (local.get $key))
                  (i32.eq (i32.load (local.get $o)) (local.get $h1)))
              (then (if (i32.lt_s (local.get $found) (i32.const 0))
                (then (local.set $found (local.get $e)) (local.set $fo (local.get $o))))))
            (local.set $e (i32.add (local.get $e) (i32.const 1)))
            (local.set $o (local.get $next))
            (br $next)))
        ;; From here on $fo and $o are Int32 offsets from the bucket's first word.
        (local.set $fo (i32.shr_u (i32.sub (local.get $fo) (i32.shl (local.get $base) (i32.const 2))) (i32.const 2)))
        (local.set $o (i32.shr_u (i32.sub (local.get $o) (i32.shl (local.get $base) (i32.const 2))) (i32.const 2)))))
    (global.set $base (local.get $base))
    (global.set $count (local.get $e))
    (global.set $used (local.get $o))
    (if (i32.lt_s (local.get $found) (i32.const 0))
      (then (global.set $found (i32.const -1)) (return (i32.const -1))))
    (global.set $found (local.get $fo))
    (if (i32.eqz (local.get $draft))
      (then (return (i32.shr_u (i32.add (i32.add (local.get $base) (local.get $fo)) (i32.const 2)) (i32.const 1)))))
    (if (i32.lt_s (global.get $spare) (i32.const 0)) (then (return (i32.const -2))))
    (local.set $dst (i32.add (global.get $blockBase) (i32.mul (global.get $spare) (global.get $blockWords))))
    ;; The entries in use, 64 bits at a time (entries are an even number of Int32 words).
    (local.set $s (i32.shl (local.get $base) (i32.const 2)))
    (local.set $d (i32.shl (local.get $dst) (i32.const 2)))
    (local.set $end (i32.add (local.get $s) (i32.shl (local.get $o) (i32.const 2))))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $s) (local.get $end)))
        (i64.store (local.get $d) (i64.load (local.get $s)))
        (local.set $d (i32.add (local.get $d) (i32.const 8)))
        (local.set $s (i32.add (local.get $s) (i32.const 8)))
        (br $copy)))
    (if (i32.le_u (i32.add (local.get $o) (i32.const 2)) (global.get $blockWords))
      (then (i32.store offset=4 (local.get $d) (i32.const 0))))
    ;; The key came back after another key arrived in its bucket: its draft entry gets the
    ;; returning bit (bucket.ts RETURNING), which a full bucket protects (threads/room.ts). A key
    ;; using its limit in one burst stays the newest entry and does not get it.
    (local.set $d (i32.shl (i32.add (local.get $dst) (local.get $fo)) (i32.const 2)))
    (if (i32.lt_u (i32.add (local.get $found) (i32.const 1)) (local.get $e))
      (then (i32.store offset=4 (local.get $d)
              (i32.or (i32.load offset=4 (local.get $d)) (i32.const 0x4000)))))
    (i32.shr_u (i32.add (i32.add (local.get $dst) (local.get $fo)) (i32.const 2)) (i32.const 1)))

  ;; The bucket `take` read, the key's entry it found (its Int32 offset in the bucket, -1: none),
  ;; the entries in use it counted and the Int32 words they take.
  (func (export "base") (result i32) (global.get $base))
  (func (export "found") (result i32) (global.get $found))
  (func (export "count") (result i32) (global.get $count))
  (func (export "used") (result i32) (global.get $used))

  ;; This thread's private block, and its Int32 index (-1: none).
  (func (export "spare") (result i32) (global.get $spare))
  (func (export "setSpare") (param $block i32) (global.set $spare (local.get $block)))
  (func $target (export "target") (result i32)
    (if (result i32) (i32.lt_s (global.get $spare) (i32.const 0))
      (then (i32.const -1))
      (else (i32.add (global.get $blockBase) (i32.mul (global.get $spare) (global.get $blockWords))))))

  ;; Copies `n` Int32 words from `src` to `dst` (even indices, n even: 64-bit words at a time).
  (func $copy (param $dst i32) (param $src i32) (param $n i32)
    (local $d i32) (local $s i32) (local $end i32)
    (local.set $d (i32.shl (local.get $dst) (i32.const 2)))
    (local.set $s (i32.shl (local.get $src) (i32.const 2)))
    (local.set $end (i32.add (local.get $s) (i32.shl (local.get $n) (i32.const 2))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $s) (local.get $end)))
        (i64.store (local.get $d) (i64.load (local.get $s)))
        (local.set $d (i32.add (local.get $d) (i32.const 8)))
        (local.set $s (i32.add (local.get $s) (i32.const 8)))
        (br $next))))

  ;; Drafts the bucket `read` saw into the private block: its first `words` Int32 words (the
  ;; entries in use) and the end mark when the block has room for one. A torn source is bounded
  ;; here and never published (the word check in `publish`).
  (func $draft (export "draft") (param $words i32)
    (local $dst i32)
    (local.set $dst (call $target))
    (if (i32.ge_s (global.get $base) (i32.const 0))
      (then (call $copy (local.get $dst) (global.get $base) (local.get $words))))
    (if (i32.le_u (i32.add (local.get $words) (i32.const 2)) (global.get $blockWords))
      (then (i32.store offset=4
              (i32.shl (i32.add (local.get $dst) (local.get $words)) (i32.const 2))
              (i32.const 0)))))

  ;; Replaces the word `read` saw by (tag + 1, the private block) in one compare-and-swap. On
  ;; success the replaced block, unreachable now, becomes the private block and 1 is returned;
  ;; 0 when another thread published first. The tag wraps at 2^32.
  (func $publish (export "publish") (result i32)
    (local $expected i64)
    (local.set $expected
      (i64.or
        (i64.extend_i32_u (global.get $low))
        (i64.shl (i64.extend_i32_u (global.get $tag)) (i64.const 32))))
    (if (result i32)
      (i64.eq
        (local.get $expected)
        (i64.atomic.rmw.cmpxchg
          (global.get $at)
          (local.get $expected)
          (i64.or
            (i64.extend_i32_u (i32.add (global.get $spare) (i32.const 1)))
            (i64.shl (i64.extend_i32_u (i32.add (global.get $tag) (i32.const 1))) (i64.const 32)))))
      (then (global.set $spare (i32.sub (global.get $low) (i32.const 1))) (i32.const 1))
      (else (i32.const 0))))

  ;; 1 when the word is still the one `read` saw (what was read since is then consistent).
  (func (export "unchanged") (result i32)
    (i32.and
      (i32.eq (i32.atomic.load offset=4 (global.get $at)) (global.get $tag))
      (i32.eq (i32.load (global.get $at)) (global.get $low))))
)
