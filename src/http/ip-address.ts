/**
 * IP address parsing for client keys: IPv4, IPv6 (with zone ids, brackets and ports as
 * sockets and proxies write them), IPv4-mapped IPv6, CIDR ranges. Every address becomes 16
 * bytes (IPv4 as `::ffff:a.b.c.d`), so one matcher serves both families and a mapped address
 * is the same client as its IPv4 form.
 */

/** An address as 16 bytes; IPv4 is stored IPv4-mapped (`::ffff:a.b.c.d`). */
export type IpBytes = Uint8Array;

/** Parses dotted-quad IPv4 (no leading zeros: `010` is ambiguous between octal and decimal). */
function parseV4(text: string, into: Uint8Array, at: number): boolean {
  let part = 0;
  let digits = 0;
  let index = at;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 46; // a virtual trailing "."
    if (c === 46) {
      if (digits === 0 || part > 255 || index - at > 3) return false;
      into[index++] = part;
      part = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && part === 0) return false;
      part = part * 10 + (c - 48);
      if (++digits > 3) return false;
    } else {
      return false;
    }
  }
  return index - at === 4;
}

/** Parses IPv6 text (optionally ending in an embedded IPv4) into 16 bytes. */
function parseV6(text: string, into: Uint8Array): boolean {
  const double = text.indexOf("::");
  if (double !== -1 && text.indexOf("::", double + 1) !== -1) return false;
  const head = double === -1 ? text : text.slice(0, double);
  const tail = double === -1 ? "" : text.slice(double + 2);
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === "" ? [] : tail.split(":");
  const words: number[] = [];
  const all = [...headGroups, ...tailGroups];
  let v4: Uint8Array | undefined;
  const last = all[all.length - 1];
  if (last?.includes(".")) {
    v4 = new Uint8Array(4);
    if (!parseV4(last, v4, 0)) return false;
    if (tailGroups.length > 0) tailGroups.pop();
    else headGroups.pop();
  }
  for (const group of [...headGroups, ...tailGroups]) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return false;
  }
  const width = 8 - (v4 ? 2 : 0);
  const explicit = headGroups.length + tailGroups.length;
  if (double === -1 ? explicit !== width : explicit >= width) return false;
  for (const g of headGroups) words.push(Number.parseInt(g, 16));
  for (let i = explicit; i < width; i++) words.push(0);
  for (const g of tailGroups) words.push(Number.parseInt(g, 16));
  for (let i = 0; i < width; i++) {
    const w = words[i] as number;
    into[2 * i] = w >> 8;
    into[2 * i + 1] = w & 0xff;
  }
  if (v4) into.set(v4, 12);
  return true;
}

/**
 * Parses an address as sockets and proxy headers write it: `1.2.3.4`, `1.2.3.4:5678`,
 * `::1`, `[::1]:443`, `fe80::1%eth0`, `::ffff:1.2.3.4`, optionally double-quoted
 * (RFC 7239 `Forwarded`). Returns undefined for anything else (`unknown`, `_hidden`, garbage).
 */
export function parseIp(input: string): IpBytes | undefined {
  let text = input.trim();
  if (text.length > 2 && text.charCodeAt(0) === 34 && text.charCodeAt(text.length - 1) === 34) {
    text = text.slice(1, -1);
  }
  if (text.length === 0 || text.length > 64) return undefined;
  const bytes = new Uint8Array(16);
  if (text.charCodeAt(0) === 91) {
    // [v6] or [v6]:port
    const close = text.indexOf("]");
    if (close === -1) return undefined;
    const rest = text.slice(close + 1);
    if (rest !== "" && !/^:\d{1,5}$/.test(rest)) return undefined;
    text = text.slice(1, close);
  } else {
    const colon = text.indexOf(":");
    if (colon !== -1 && text.indexOf(":", colon + 1) === -1) {
      // exactly one colon: IPv4 with a port
      if (!/^\d{1,5}$/.test(text.slice(colon + 1))) return undefined;
      text = text.slice(0, colon);
    }
  }
  const zone = text.indexOf("%");
  if (zone !== -1) text = text.slice(0, zone);
  if (!text.includes(":")) {
    bytes[10] = 0xff;
    bytes[11] = 0xff;
    return parseV4(text, bytes, 12) ? bytes : undefined;
  }
  return parseV6(text, bytes) ? bytes : undefined;
}

/** True when `bytes` is an IPv4 address (stored IPv4-mapped). */
export function isV4(bytes: IpBytes): boolean {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}

/** Keeps the first `prefix` bits of `bytes` and zeroes the rest (returns a copy). */
export function maskIp(bytes: IpBytes, prefix: number): IpBytes {
  const out = new Uint8Array(bytes);
  for (let i = 0; i < 16; i++) {
    const keep = Math.max(0, Math.min(8, prefix - 8 * i));
    out[i] = (out[i] as number) & ((0xff << (8 - keep)) & 0xff);
  }
  return out;
}

/** RFC 5952 text: IPv4 dotted, IPv6 lower-case with the longest run of zero groups as `::`. */
export function formatIp(bytes: IpBytes): string {
  if (isV4(bytes)) return `${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
  const words: number[] = [];
  for (let i = 0; i < 8; i++) words.push(((bytes[2 * i] as number) << 8) | (bytes[2 * i + 1] as number));
  let bestStart = -1;
  let bestLength = 1; // a single zero group is not compressed (RFC 5952 §4.2.2)
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (bestStart === -1) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

/** A CIDR range over 16-byte addresses (IPv4 ranges are stored as mapped, prefix + 96). */
export interface IpRange {
  readonly base: IpBytes;
  readonly prefix: number;
}

const NAMED_RANGES: Record<string, readonly string[]> = {
  loopback: ["127.0.0.0/8", "::1/128"],
  linklocal: ["169.254.0.0/16", "fe80::/10"],
  uniquelocal: ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"],
};

/**
 * Parses `10.0.0.0/8`, `fc00::/7`, a single address, or one of the names `loopback`,
 * `linklocal`, `uniquelocal` into ranges. Returns undefined when the text is none of these.
 */
export function parseRanges(text: string): IpRange[] | undefined {
  const named = NAMED_RANGES[text];
  if (named !== undefined && Object.hasOwn(NAMED_RANGES, text)) return named.flatMap((t) => parseRanges(t) ?? []);
  const slash = text.indexOf("/");
  const address = slash === -1 ? text : text.slice(0, slash);
  // A range is a bare address: no brackets, zone or port (parseIp accepts those for client
  // addresses, but "10.0.0.1:80/24" read as a range would be an IPv6 /24 holding every IPv4).
  if (/[[\]%]/.test(address) || /^\d{1,3}(\.\d{1,3}){3}:\d*$/.test(address)) return undefined;
  const bytes = parseIp(address);
  if (bytes === undefined) return undefined;
  const v4 = !address.includes(":");
  const max = v4 ? 32 : 128;
  let prefix = max;
  if (slash !== -1) {
    const bits = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return undefined;
    prefix = Number(bits);
  }
  const full = v4 ? prefix + 96 : prefix;
  return [{ base: maskIp(bytes, full), prefix: full }];
}

/** True when `bytes` lies in `range`. */
export function inRange(bytes: IpBytes, range: IpRange): boolean {
  const { base, prefix } = range;
  const whole = prefix >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== base[i]) return false;
  const rest = prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[whole] as number) & mask) === base[whole];
}
