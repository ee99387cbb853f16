/**
 * The one bound on key length, applied by every limiter (and so every service rule) before a
 * key reaches any store: a key longer than `maxKeyBytes` UTF-8 bytes (default 1 KB) is stored
 * as `sha256:<base64url>` of itself. Never silent: the first such key of a limiter is reported
 * with `process.emitWarning` (code `SLUICE_KEY_HASHED`), and `onDecision` sees the hashed form.
 */

import { describeValue } from "./describe-value.ts";
import { base64url, sha256 } from "./digest.ts";
import { ArgumentError } from "./errors.ts";
import { warn } from "./warn.ts";

const encoder = new TextEncoder();
/** Scratch for `utf8Length`: measured keys are at most `maxKeyBytes` UTF-16 units (see `keyBound`). */
let scratch = new Uint8Array(0);

/**
 * UTF-8 length of `text` (Buffer.byteLength without Node: a lone surrogate counts 3, as
 * TextEncoder writes U+FFFD). Native `encodeInto` rather than a loop over `charCodeAt`: the loop
 * cost ~25 instructions a unit, so a 1,000-unit key took 14× a short key's whole decision.
 */
function utf8Length(text: string): number {
  if (scratch.length < text.length * 3) scratch = new Uint8Array(text.length * 3);
  return encoder.encodeInto(text, scratch).written;
}

/** Default `maxKeyBytes`: 1 KB. */
export const DEFAULT_MAX_KEY_BYTES = 1024;
/** Smallest `maxKeyBytes`: longer than the hashed form (51 bytes), so a hashed key always fits. */
const MIN_MAX_KEY_BYTES = 64;

/** Checks a `maxKeyBytes` option (undefined: the default). */
export function checkMaxKeyBytes(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_KEY_BYTES;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < MIN_MAX_KEY_BYTES) {
    throw new ArgumentError(
      `\`maxKeyBytes\` must be an integer of at least ${MIN_MAX_KEY_BYTES} (got ${describeValue(value)})`,
    );
  }
  return value;
}

/** `String.prototype.isWellFormed` where the runtime has it (ES2024: Node 20, Bun, Deno): native and fast. */
const isWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

/** Whether `text` holds a surrogate without its pair (UTF-8 cannot write it). */
function hasLoneSurrogate(text: string): boolean {
  if (isWellFormed !== undefined) return !isWellFormed.call(text);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c & 0xf800) !== 0xd800) continue;
    if (c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
    else return true;
  }
  return false;
}

/**
 * `text` as WTF-8: UTF-8, but a lone surrogate is written as its own three bytes where UTF-8
 * (TextEncoder) writes U+FFFD, so two keys that differ only in lone surrogates hash apart. A
 * well-formed key is returned as text (hashed as its UTF-8), so its hashed form is what it always was.
 */
function wtf8(text: string): string | Uint8Array {
  // Most keys are well-formed: one scan, and TextEncoder's native UTF-8 does the rest.
  if (!hasLoneSurrogate(text)) return text;
  const out = new Uint8Array(text.length * 3);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.codePointAt(i) as number;
    if (c < 0x80) out[n++] = c;
    else if (c < 0x800) {
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 63);
    } else if (c < 0x10000) {
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 63);
      out[n++] = 0x80 | (c & 63);
    } else {
      out[n++] = 0xf0 | (c >> 18);
      out[n++] = 0x80 | ((c >> 12) & 63);
      out[n++] = 0x80 | ((c >> 6) & 63);
      out[n++] = 0x80 | (c & 63);
      i++;
    }
  }
  return out.subarray(0, n);
}

/** The hashed form of a key too long to store (lone surrogates kept apart: see `wtf8`). */
export function hashedKey(key: string): string {
  return `sha256:${base64url(sha256(wtf8(key)))}`;
}

/** The longest key (in UTF-16 units) that always fits `maxKeyBytes`: a unit is at most 3 UTF-8 bytes. */
export function keysSurelyFitting(maxKeyBytes: number): number {
  return Math.floor(maxKeyBytes / 3);
}

/**
 * A function giving the key to store for each key of limiter `id`: the key itself when it fits
 * `maxKeyBytes`, else its hash. Keys of up to `maxKeyBytes / 3` UTF-16 units always fit (a unit
 * is at most 3 UTF-8 bytes), so the usual key costs one length comparison.
 */
export function keyBound(maxKeyBytes: number, id: string): (key: string) => string {
  const surelyFits = keysSurelyFitting(maxKeyBytes);
  let warned = false;
  /** A key that may not fit: measured, and hashed when it does not. */
  const bounded = (key: string) => {
    // Every unit is at least one byte: a key longer than the bound in units needs no measuring.
    if (key.length <= maxKeyBytes && utf8Length(key) <= maxKeyBytes) return key;
    if (!warned) {
      warned = true;
      warn(
        `limiter ${id.slice(0, 120)}: a ${utf8Length(key)}-byte key is longer than maxKeyBytes (${maxKeyBytes}); such keys are stored as sha256:<digest> of the key`,
        "SLUICE_KEY_HASHED",
      );
    }
    return hashedKey(key);
  };
  // The usual key costs one comparison; the rest is out of line (this is on every decision's path).
  return (key) => (key.length <= surelyFits ? key : bounded(key));
}
