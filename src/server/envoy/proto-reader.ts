/**
 * Reading the protobuf wire format, just what the RLS and health requests need: varints (as
 * uint32, or as a JS number for uint64 as @grpc/proto-loader's `longs: Number` gives it),
 * length-delimited fields, and skipping any field the reader does not know (proto3 requires
 * unknown fields be accepted). Malformed bytes throw {@link ProtoError}.
 */

/** The bytes are not a valid protobuf message. */
export class ProtoError extends Error {
  override readonly name = "ProtoError";
}

const TRUNCATED = "the message ends inside a field";

/** A cursor over `buf[pos, end)`. */
export class ProtoReader {
  /** The next byte to read. */
  pos: number;

  constructor(
    readonly buf: Uint8Array,
    start: number,
    /** One past the last byte of this message. */
    readonly end: number,
  ) {
    this.pos = start;
  }

  /** Whether bytes are left. */
  more(): boolean {
    return this.pos < this.end;
  }

  /** An unsigned varint as a number (exact to 2^53; larger ones rounded, as `longs: Number` does). */
  uint64(): number {
    const buf = this.buf;
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ProtoError(TRUNCATED);
      const byte = buf[this.pos++] as number;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    throw new ProtoError("a varint is longer than 10 bytes");
  }

  /** A varint truncated to its low 32 bits, unsigned (uint32 fields; enums take `| 0` of it). */
  uint32(): number {
    const buf = this.buf;
    const first = buf[this.pos];
    // One byte is the common case: tags, small counts, enums.
    if (first !== undefined && first < 0x80 && this.pos < this.end) {
      this.pos++;
      return first;
    }
    let low = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ProtoError(TRUNCATED);
      const byte = buf[this.pos++] as number;
      // Bits past 32 fall off the shift (and bytes past the fifth add nothing), as in protobuf's uint32.
      if (i < 5) low |= (byte & 0x7f) << (7 * i);
      if (byte < 0x80) return low >>> 0;
    }
    throw new ProtoError("a varint is longer than 10 bytes");
  }

  /** The length of a length-delimited field; returns its end, checked against this message's end. */
  delimited(): number {
    const length = this.uint32();
    const end = this.pos + length;
    if (end > this.end) throw new ProtoError(TRUNCATED);
    return end;
  }

  /** A string field's UTF-8 text (invalid sequences become U+FFFD). */
  string(): string {
    const end = this.delimited();
    const start = this.pos;
    this.pos = end;
    return utf8(this.buf, start, end);
  }

  /** Skips a field of wire type `wire` whose tag was read. */
  skip(wire: number): void {
    if (wire === 0) this.uint64();
    else if (wire === 2) this.pos = this.delimited();
    else if (wire === 1 || wire === 5) {
      this.pos += wire === 1 ? 8 : 4;
      if (this.pos > this.end) throw new ProtoError(TRUNCATED);
    } else throw new ProtoError(`wire type ${wire} is not used by this message`);
  }
}

/**
 * UTF-8 text of `buf[start, end)`. Short ASCII strings (Envoy's keys and values) are read here:
 * for a few bytes that is cheaper than a call into Buffer's native decoder.
 */
export function utf8(buf: Uint8Array, start: number, end: number): string {
  if (end - start <= 32) {
    let s = "";
    for (let i = start; i < end; i++) {
      const c = buf[i] as number;
      if (c >= 0x80) return Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString("utf8");
      s += String.fromCharCode(c);
    }
    return s;
  }
  return Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString("utf8");
}
