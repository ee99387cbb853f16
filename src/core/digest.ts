/**
 * SHA-1 and SHA-256 of UTF-8 text, synchronous and without `node:crypto`, so the Redis store
 * loads on edge runtimes that have no Node built-ins (Vercel Edge; Cloudflare Workers without
 * `nodejs_compat`): SHA-1 names the check script for EVALSHA, SHA-256 names a rule's records.
 * Web Crypto's `subtle.digest` is async only, and both are needed while building a store.
 * Equal to `node:crypto`'s digests bit for bit (digest.test.ts), so key names do not change.
 */

const K256 = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

const encoder = new TextEncoder();
/** One scratch buffer for every digest: they run synchronously, one at a time, so no call sees another's bytes. */
let scratch = new Uint8Array(4096);
/** The message schedule, reused: a digest allocates only its result. */
const w = new Int32Array(80);

/**
 * Writes `text` (UTF-8; bytes as given) into the scratch buffer, padded to whole 64-byte blocks
 * (0x80, zeros, the bit length big-endian), and returns the padded length. Encoding in place with
 * `encodeInto` and reading words by shifts keeps a long key's hash linear and cheap: the first
 * version built a DataView and a Uint32Array per call and cost ~100 µs for a 1 KB key.
 */
function pad(text: string | Uint8Array): number {
  const most = (typeof text === "string" ? text.length * 3 : text.length) + 72;
  if (scratch.length < most) scratch = new Uint8Array(Math.max(most, scratch.length * 2));
  const buf = scratch;
  let length: number;
  if (typeof text === "string") length = encoder.encodeInto(text, buf).written;
  else {
    buf.set(text);
    length = text.length;
  }
  const total = Math.ceil((length + 9) / 64) * 64;
  buf.fill(0, length, total);
  buf[length] = 0x80;
  const high = Math.floor(length / 0x20000000);
  const low = (length * 8) >>> 0;
  buf[total - 8] = high >>> 24;
  buf[total - 7] = (high >>> 16) & 255;
  buf[total - 6] = (high >>> 8) & 255;
  buf[total - 5] = high & 255;
  buf[total - 4] = low >>> 24;
  buf[total - 3] = (low >>> 16) & 255;
  buf[total - 2] = (low >>> 8) & 255;
  buf[total - 1] = low & 255;
  return total;
}

/** Big-endian 32-bit word of the scratch buffer at byte `i`. */
const word = (buf: Uint8Array, i: number) =>
  ((buf[i] as number) << 24) | ((buf[i + 1] as number) << 16) | ((buf[i + 2] as number) << 8) | (buf[i + 3] as number);

/** The state words as big-endian bytes. */
function bytesOf(state: number[]): Uint8Array {
  const out = new Uint8Array(state.length * 4);
  for (let i = 0; i < state.length; i++) {
    const v = state[i] as number;
    out[i * 4] = v >>> 24;
    out[i * 4 + 1] = (v >>> 16) & 255;
    out[i * 4 + 2] = (v >>> 8) & 255;
    out[i * 4 + 3] = v & 255;
  }
  return out;
}

const rotl = (x: number, n: number) => (x << n) | (x >>> (32 - n));
const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));

/** SHA-1 of `text` (UTF-8), 20 bytes. */
export function sha1(text: string): Uint8Array {
  const total = pad(text);
  const buf = scratch;
  let h0 = 0x67452301;
  let h1 = 0xefcdab89 | 0;
  let h2 = 0x98badcfe | 0;
  let h3 = 0x10325476;
  let h4 = 0xc3d2e1f0 | 0;
  for (let at = 0; at < total; at += 64) {
    for (let t = 0; t < 16; t++) w[t] = word(buf, at + t * 4);
    for (let t = 16; t < 80; t++)
      w[t] = rotl((w[t - 3] as number) ^ (w[t - 8] as number) ^ (w[t - 14] as number) ^ (w[t - 16] as number), 1);
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    for (let t = 0; t < 80; t++) {
      const f = t < 20 ? (b & c) | (~b & d) : t < 40 ? b ^ c ^ d : t < 60 ? (b & c) | (b & d) | (c & d) : b ^ c ^ d;
      const k = t < 20 ? 0x5a827999 : t < 40 ? 0x6ed9eba1 : t < 60 ? 0x8f1bbcdc : 0xca62c1d6;
      const temp = (rotl(a, 5) + f + e + k + (w[t] as number)) | 0;
      e = d;
      d = c;
      c = rotl(b, 30);
      b = a;
      a = temp;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
  }
  return bytesOf([h0, h1, h2, h3, h4]);
}

/**
 * `node:crypto` where the runtime offers it synchronously (Node ≥ 20.16, Bun, Deno), else
 * undefined. Named without its `node:` prefix: a bundle for Workers must not name a Node built-in
 * (test/edge/worker-bundle.test.ts), and this lookup is a runtime probe, not an import.
 */
const native = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule?.(
  "crypto",
) as { createHash(algorithm: string): { update(data: string | Uint8Array): { digest(): Uint8Array } } } | undefined;

/**
 * Past this many UTF-16 units (or bytes) a native hash is cheaper than the JS one despite its
 * fixed cost per call (measured: about equal at one block; the JS loop is several times slower
 * per block). Long keys (over `maxKeyBytes`) are hashed on every decision, so this bounds their cost.
 */
const NATIVE_FROM = 256;

/** SHA-256 of `text` (UTF-8; a Uint8Array is hashed as given), 32 bytes. */
export function sha256(text: string | Uint8Array): Uint8Array {
  if (native !== undefined && text.length > NATIVE_FROM) return native.createHash("sha256").update(text).digest();
  return portableSha256(text);
}

/**
 * SHA-256 in JS, what `sha256` runs for short inputs and where the runtime has no `node:crypto`.
 * @internal Exported for its test against `node:crypto`.
 */
export function portableSha256(text: string | Uint8Array): Uint8Array {
  const total = pad(text);
  const buf = scratch;
  let h0 = 0x6a09e667;
  let h1 = 0xbb67ae85 | 0;
  let h2 = 0x3c6ef372;
  let h3 = 0xa54ff53a | 0;
  let h4 = 0x510e527f;
  let h5 = 0x9b05688c | 0;
  let h6 = 0x1f83d9ab;
  let h7 = 0x5be0cd19;
  for (let at = 0; at < total; at += 64) {
    for (let t = 0; t < 16; t++) w[t] = word(buf, at + t * 4);
    for (let t = 16; t < 64; t++) {
      const x = w[t - 15] as number;
      const y = w[t - 2] as number;
      const s0 = rotr(x, 7) ^ rotr(x, 18) ^ (x >>> 3);
      const s1 = rotr(y, 17) ^ rotr(y, 19) ^ (y >>> 10);
      w[t] = ((w[t - 16] as number) + s0 + (w[t - 7] as number) + s1) | 0;
    }
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    let f = h5;
    let g = h6;
    let hh = h7;
    for (let t = 0; t < 64; t++) {
      const S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + S1 + ch + (K256[t] as number) + (w[t] as number)) | 0;
      const S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
    h5 = (h5 + f) | 0;
    h6 = (h6 + g) | 0;
    h7 = (h7 + hh) | 0;
  }
  return bytesOf([h0, h1, h2, h3, h4, h5, h6, h7]);
}

/** Lower-case hex of `bytes`. */
export function hex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** Unpadded base64url of `bytes` (what `digest("base64url")` gives). */
export function base64url(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = ((bytes[i] as number) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const chars = Math.min(4, Math.ceil(((bytes.length - i) * 8) / 6));
    for (let j = 0; j < chars; j++) out += B64URL[(n >>> (18 - 6 * j)) & 63];
  }
  return out;
}
