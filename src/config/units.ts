/**
 * Human units in rules files and flags: durations ("500ms", "1s", "15m", "1h", "1d") and
 * rates ("100/min", "5/s", "1000/15m"). Numbers pass through unchanged (ms, or per second).
 */

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  sec: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
};

const DURATION = /^\s*(\d+(?:\.\d+)?)?\s*([a-z]+)\s*$/i;

/**
 * Parses a duration string to ms ("1.5s" → 1500, "min" → 60000); undefined when it is not one.
 * The result may be fractional ("0.5ms"); spec validation rejects what is not a whole ms.
 */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (match === null) {
    const plain = text.trim();
    return /^\d+(\.\d+)?$/.test(plain) ? Number(plain) : undefined;
  }
  const unit = UNIT_MS[(match[2] as string).toLowerCase()];
  if (unit === undefined) return undefined;
  const amount = match[1] === undefined ? 1 : Number(match[1]);
  return amount * unit;
}

/** Parses a rate such as "100/min" or "5/s" to units per second; undefined when it is not one. */
export function parseRate(text: string): number | undefined {
  const slash = text.indexOf("/");
  if (slash < 0) {
    const plain = text.trim();
    return /^\d+(\.\d+)?$/.test(plain) ? Number(plain) : undefined;
  }
  const count = text.slice(0, slash).trim();
  if (!/^\d+(\.\d+)?$/.test(count)) return undefined;
  const per = parseDuration(text.slice(slash + 1));
  if (per === undefined || per <= 0) return undefined;
  return (Number(count) * 1000) / per;
}

/** Parses a byte size such as "64kb", "1mb" or "65536". */
export function parseBytes(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(b|kb|kib|mb|mib)?\s*$/i.exec(text);
  if (match === null) return undefined;
  const unit = (match[2] ?? "b").toLowerCase();
  const factor = unit === "b" ? 1 : unit.startsWith("k") ? 1024 : 1024 * 1024;
  return Math.floor(Number(match[1]) * factor);
}

const NAMED: Array<[number, string]> = [
  [86_400_000, "day"],
  [3_600_000, "hour"],
  [60_000, "minute"],
  [1000, "second"],
];

/** Writes ms in words: 60000 → "minute", 900000 → "15 minutes", 1500 → "1500 ms". */
export function durationWords(ms: number): string {
  for (const [size, name] of NAMED) {
    if (ms % size === 0) {
      const n = ms / size;
      return n === 1 ? name : `${n} ${name}s`;
    }
  }
  return `${ms} ms`;
}

/** Writes a per-second rate in the largest unit that makes it a whole number: 1.6667 → "100 per minute". */
export function rateWords(perSecond: number): string {
  for (const [size, name] of [
    [1000, "second"],
    [60_000, "minute"],
    [3_600_000, "hour"],
    [86_400_000, "day"],
  ] as const) {
    const n = (perSecond * size) / 1000;
    if (Math.abs(n - Math.round(n)) < 1e-9 && Math.round(n) >= 1) return `${Math.round(n)} per ${name}`;
  }
  return `${Number(perSecond.toFixed(3))} per second`;
}
