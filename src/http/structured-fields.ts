/**
 * A small Structured Fields (RFC 9651) List parser, for reading the `RateLimit` /
 * `RateLimit-Policy` values other libraries set before ours (stacking). It parses the whole
 * grammar (inner lists, parameters with spaces after `;`, integers, decimals, strings, tokens,
 * byte sequences, booleans, dates, display strings) and refuses anything else, so a value is
 * appended to only when the result is still a valid List.
 */

/** A token (`erl`, `*foo`), kept apart from a String of the same text. */
export interface SfToken {
  readonly token: string;
}

/** A bare item's value (byte sequences as their base64 text, display strings decoded). */
export type SfBareItem = number | string | boolean | SfToken | { bytes: string } | { date: number };

/** An item or an inner list, with its parameters in order. */
export interface SfMember {
  readonly value: SfBareItem | SfMember[];
  readonly params: ReadonlyArray<readonly [string, SfBareItem]>;
}

/** Largest integer Structured Fields allow (15 digits). */
export const SF_MAX_INTEGER = 999_999_999_999_999;

/** `n` as a Structured Fields Integer: clamped to ±{@link SF_MAX_INTEGER} (a parser refuses more digits). */
export function sfInteger(n: number): string {
  // A template, not String(): optimized code converts the number directly, without the String builtin.
  return `${Math.max(-SF_MAX_INTEGER, Math.min(SF_MAX_INTEGER, Math.trunc(n)))}`;
}

class Malformed extends Error {}

const TCHAR = /[!#$%&'*+\-.^_`|~0-9A-Za-z:/]/;
const KEY_FIRST = /[a-z*]/;
const KEY_CHAR = /[a-z0-9_\-.*]/;
const BASE64 = /^[A-Za-z0-9+/=]*$/;

/** A cursor over one field value; every parse method throws {@link Malformed} on bad input. */
class Reader {
  i = 0;
  constructor(readonly s: string) {}

  peek(): string {
    return this.s[this.i] ?? "";
  }

  done(): boolean {
    return this.i >= this.s.length;
  }

  spaces(ows: boolean): void {
    while (this.peek() === " " || (ows && this.peek() === "\t")) this.i++;
  }

  expect(c: string): void {
    if (this.peek() !== c) throw new Malformed();
    this.i++;
  }

  list(): SfMember[] {
    const out: SfMember[] = [];
    while (!this.done()) {
      out.push(this.peek() === "(" ? this.innerList() : this.item());
      this.spaces(true);
      if (this.done()) return out;
      this.expect(",");
      this.spaces(true);
      if (this.done()) throw new Malformed(); // a trailing comma
    }
    return out;
  }

  innerList(): SfMember {
    this.expect("(");
    const items: SfMember[] = [];
    for (;;) {
      this.spaces(false);
      if (this.peek() === ")") {
        this.i++;
        return { value: items, params: this.params() };
      }
      items.push(this.item());
      const c = this.peek();
      if (c !== " " && c !== ")") throw new Malformed();
    }
  }

  item(): SfMember {
    return { value: this.bare(), params: this.params() };
  }

  params(): Array<[string, SfBareItem]> {
    const out: Array<[string, SfBareItem]> = [];
    while (this.peek() === ";") {
      this.i++;
      this.spaces(false);
      const key = this.key();
      let value: SfBareItem = true;
      if (this.peek() === "=") {
        this.i++;
        value = this.bare();
      }
      const at = out.findIndex(([k]) => k === key);
      if (at >= 0) out[at] = [key, value];
      else out.push([key, value]);
    }
    return out;
  }

  key(): string {
    if (!KEY_FIRST.test(this.peek())) throw new Malformed();
    const start = this.i++;
    while (KEY_CHAR.test(this.peek())) this.i++;
    return this.s.slice(start, this.i);
  }

  bare(): SfBareItem {
    const c = this.peek();
    if (c === "-" || (c >= "0" && c <= "9")) return this.number();
    if (c === '"') return this.string();
    if (/[A-Za-z*]/.test(c)) return this.token();
    if (c === ":") return this.bytes();
    if (c === "?") return this.boolean();
    if (c === "@") {
      const start = ++this.i;
      const date = this.number();
      if (this.s.slice(start, this.i).includes(".")) throw new Malformed(); // a date is an integer
      return { date };
    }
    if (c === "%") return this.display();
    throw new Malformed();
  }

  number(): number {
    const m = /^(-?)(\d+)(?:\.(\d+))?/.exec(this.s.slice(this.i));
    if (m === null) throw new Malformed();
    const [text, , whole = "", frac] = m;
    if (frac === undefined) {
      if (whole.length > 15 || this.peek2(text.length) === ".") throw new Malformed();
    } else if (whole.length > 12 || frac.length > 3) {
      throw new Malformed();
    }
    this.i += text.length;
    return Number(text);
  }

  /** The character `n` past the cursor. */
  peek2(n: number): string {
    return this.s[this.i + n] ?? "";
  }

  string(): string {
    this.expect('"');
    let out = "";
    for (;;) {
      const c = this.peek();
      this.i++;
      if (c === "") throw new Malformed();
      if (c === '"') return out;
      if (c === "\\") {
        const next = this.peek();
        if (next !== '"' && next !== "\\") throw new Malformed();
        out += next;
        this.i++;
      } else {
        const code = c.charCodeAt(0);
        if (code < 0x20 || code > 0x7e) throw new Malformed();
        out += c;
      }
    }
  }

  token(): SfToken {
    const start = this.i++;
    while (TCHAR.test(this.peek())) this.i++;
    return { token: this.s.slice(start, this.i) };
  }

  bytes(): { bytes: string } {
    this.expect(":");
    const end = this.s.indexOf(":", this.i);
    if (end < 0) throw new Malformed();
    const text = this.s.slice(this.i, end);
    if (!BASE64.test(text)) throw new Malformed();
    this.i = end + 1;
    return { bytes: text };
  }

  boolean(): boolean {
    this.expect("?");
    const c = this.peek();
    if (c !== "0" && c !== "1") throw new Malformed();
    this.i++;
    return c === "1";
  }

  display(): string {
    this.expect("%");
    this.expect('"');
    const bytes: number[] = [];
    for (;;) {
      const c = this.peek();
      this.i++;
      if (c === "") throw new Malformed();
      if (c === '"') break;
      const code = c.charCodeAt(0);
      if (code < 0x20 || code > 0x7e) throw new Malformed();
      if (c === "%") {
        const hex = this.s.slice(this.i, this.i + 2);
        if (!/^[0-9a-f]{2}$/.test(hex)) throw new Malformed();
        bytes.push(Number.parseInt(hex, 16));
        this.i += 2;
      } else {
        bytes.push(code);
      }
    }
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes));
    } catch {
      throw new Malformed();
    }
  }
}

/** Parses a Structured Fields List (RFC 9651 §4.2.1); undefined when `value` is not one. */
export function parseSfList(value: string): SfMember[] | undefined {
  const reader = new Reader(value.replace(/^ +| +$/g, ""));
  try {
    return reader.list();
  } catch (error) {
    if (error instanceof Malformed) return undefined;
    throw error;
  }
}
