/**
 * Writing the protobuf wire format into one buffer sized beforehand: the RLS response is
 * measured first (varint and string sizes), then written once, straight behind the 5-byte gRPC
 * message prefix, so answering a call allocates a single buffer.
 */

/** Bytes of `value` as a varint (`value` a non-negative integer below 2^53). */
export function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

/** Bytes of a length-delimited field's length and content (its tag not counted). */
export function delimitedSize(length: number): number {
  return varintSize(length) + length;
}

/** A buffer being filled from the front. */
export class ProtoWriter {
  /** The next byte to write. */
  pos: number;

  constructor(
    readonly buf: Buffer,
    start: number,
  ) {
    this.pos = start;
  }

  /** A varint (`value` a non-negative integer below 2^53; a tag is `field << 3 | wire`). */
  varint(value: number): void {
    const buf = this.buf;
    while (value >= 0x80) {
      buf[this.pos++] = (value % 128) | 0x80;
      value = Math.floor(value / 128);
    }
    buf[this.pos++] = value;
  }

  /** A string field's length and UTF-8 bytes (`bytes` its Buffer.byteLength, measured before). */
  string(text: string, bytes: number): void {
    this.varint(bytes);
    this.pos += this.buf.write(text, this.pos, bytes, "utf8");
  }
}
