import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { base64url, hex, portableSha256, sha1, sha256 } from "./digest.ts";
import { mulberry32 } from "./seeded-random.ts";

const SEED = 3_807;

/** Text of `length` units drawn from ASCII, 2- and 3-byte characters, pairs and lone surrogates. */
function text(random: () => number, length: number): string {
  let out = "";
  while (out.length < length) {
    const pick = random();
    if (pick < 0.6) out += String.fromCharCode(32 + Math.floor(random() * 95));
    else if (pick < 0.75) out += String.fromCharCode(0x80 + Math.floor(random() * 0x780));
    else if (pick < 0.88) out += String.fromCharCode(0x800 + Math.floor(random() * 0xd000));
    else if (pick < 0.95) out += "😀";
    else out += String.fromCharCode(0xd800 + Math.floor(random() * 0x800));
  }
  return out;
}

describe("digests equal node:crypto's bit for bit (key names must never change)", () => {
  it(`sha1, sha256 and the portable sha256 on texts of 0 to 700 units and on bytes (seed ${SEED})`, () => {
    console.log(`seed ${SEED}`);
    const random = mulberry32(SEED);
    // Every length around the block and padding edges (55, 56, 63, 64, 119, 120 bytes), and past
    // the native threshold.
    for (let length = 0; length <= 700; length += length < 140 ? 1 : 37) {
      const t = text(random, length);
      const node256 = createHash("sha256").update(t).digest();
      expect(hex(sha256(t))).toBe(node256.toString("hex"));
      expect(hex(portableSha256(t))).toBe(node256.toString("hex"));
      expect(hex(sha1(t))).toBe(createHash("sha1").update(t).digest("hex"));
      const bytes = Uint8Array.from({ length }, () => Math.floor(random() * 256));
      const nodeBytes = createHash("sha256").update(bytes).digest("hex");
      expect(hex(sha256(bytes))).toBe(nodeBytes);
      expect(hex(portableSha256(bytes))).toBe(nodeBytes);
    }
  });

  it("a long text after a short one and a short after a long: the shared scratch leaks nothing", () => {
    const long = "x".repeat(5000);
    expect(hex(portableSha256(long))).toBe(createHash("sha256").update(long).digest("hex"));
    expect(hex(portableSha256("abc"))).toBe(createHash("sha256").update("abc").digest("hex"));
    expect(base64url(sha256("abc"))).toBe(createHash("sha256").update("abc").digest("base64url"));
  });
});
