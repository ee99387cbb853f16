// Names the JIT's code in callgrind dumps, and compares two servers function by function.
// callgrind_annotate shows V8's generated code as bare addresses (`???:0x…`); a server started
// with --perf-basic-prof (BENCH_SERVER_FLAGS=--perf-basic-prof node bench/http-callgrind.mjs)
// writes /tmp/perf-<pid>.map, whose address ranges name each function.
//
//   node bench/http-callgrind-jit.mjs <dump> [<base dump>] [--per <requests>]
//
// With one dump: its self cost by function (JIT code named), largest first. With two: the
// difference by function (dump − base), largest first, per request with --per (the requests
// counted in each dump). Each dump's pid is read from its header (its own perf map).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";

const args = process.argv.slice(2);
const perAt = args.indexOf("--per");
const per = perAt >= 0 ? Number(args.splice(perAt, 2)[1]) : 1;
const [dump, base] = args;

/** The perf map of the process that wrote `file`: sorted [start, end, name]. */
function perfMap(file) {
  const pid = /^pid: (\d+)/m.exec(readFileSync(file, "utf8").slice(0, 4000))?.[1];
  const path = `/tmp/perf-${pid}.map`;
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [start, size, ...name] = line.split(" ");
      const from = Number.parseInt(start, 16);
      return [from, from + Number.parseInt(size, 16), name.join(" ")];
    })
    .sort((a, b) => a[0] - b[0]);
}

function nameOf(map, address) {
  let lo = 0;
  let hi = map.length - 1;
  let found;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (map[mid][0] <= address) {
      found = map[mid];
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found !== undefined && address < found[1] ? found[2] : `0x${address.toString(16)}`;
}

/** Self instructions by function name. */
function costs(file) {
  const map = perfMap(file);
  const text = execFileSync("callgrind_annotate", ["--threshold=100", "--inclusive=no", file], {
    encoding: "utf8",
    maxBuffer: 1 << 28,
  });
  const out = new Map();
  for (const line of text.split("\n")) {
    const m = /^\s*([\d,]+) \([^)]*\)\s+(.*)$/.exec(line);
    if (m === null || m[2].includes("PROGRAM TOTALS")) continue;
    let name = m[2].replace(/ \[[^\]]*\]$/, "").replace(/^\?\?\?:/, "");
    const address = /^0x([0-9a-f]+)$/i.exec(name);
    if (address) name = nameOf(map, Number.parseInt(address[1], 16));
    out.set(name, (out.get(name) ?? 0) + Number(m[1].replaceAll(",", "")));
  }
  return out;
}

const a = costs(dump);
const b = base === undefined ? new Map() : costs(base);
const names = new Set([...a.keys(), ...b.keys()]);
const rows = [...names].map((n) => [n, ((a.get(n) ?? 0) - (b.get(n) ?? 0)) / per]);
rows.sort((x, y) => Math.abs(y[1]) - Math.abs(x[1]));
const total = rows.reduce((s, r) => s + r[1], 0);
console.log(`total ${total.toFixed(0)}${base === undefined ? "" : " (difference)"}`);
for (const [name, cost] of rows.slice(0, Number(process.env.TOP ?? 60)))
  console.log(`${cost.toFixed(0).padStart(10)}  ${name.slice(0, 160)}`);
