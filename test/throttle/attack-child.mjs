// A process of the attack tests (test/throttle/attack-*.test.ts), on the built package.
// Args: redisUrl prefix optionsJSON script. Reads commands on stdin, one a line, and prints
// events on stdout, one a line:
//   "schedule <job> [priority]"  schedules a job that holds its slot until "end <job>";
//   "end <job>"                   ends a held job;
//   "block <ms>"                  blocks the event loop, then runs the next commands of the same
//                                 line (";"-separated) in the same turn;
//   "close"                       closes the throttle and the store and exits.
// Prints "ready", "S <job> <ms>" (started), "R <job> <ms> <outcome>" (settled).
import { Redis } from "ioredis";
import { createThrottle, systemClock } from "../../dist/index.js";
import { RedisStore } from "../../dist/stores/redis/index.js";

const [url, prefix, optionsJson] = process.argv.slice(2);
const client = new Redis(url, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false });
client.on("error", () => {});
await new Promise((resolve) => client.once("ready", resolve));
const store = new RedisStore({ client, prefix, timeoutMs: 5000 });
const throttle = createThrottle({ name: "attack", store, clock: systemClock, ...JSON.parse(optionsJson) });
throttle.on("error", () => {});
const log = (line) => process.stdout.write(`${line}\n`);
const held = new Map();

function run(command) {
  const [verb, a, b] = command.trim().split(" ");
  if (verb === "schedule") {
    throttle
      .schedule(
        () =>
          new Promise((resolve) => {
            log(`S ${a} ${Date.now()}`);
            held.set(a, resolve);
          }),
        { priority: b === undefined ? 5 : Number(b) },
      )
      .then(
        () => log(`R ${a} ${Date.now()} ok`),
        (e) => log(`R ${a} ${Date.now()} ${e?.name}`),
      );
  } else if (verb === "end") {
    held.get(a)?.();
    held.delete(a);
  } else if (verb === "block") {
    const until = Date.now() + Number(a);
    while (Date.now() < until) {}
  } else if (verb === "close") {
    void throttle.close().then(async () => {
      await store.close();
      client.disconnect();
    });
  }
}

// The fleet link opens on a first job (its subscription): open it first.
await throttle.schedule(async () => {}, { key: "warm-up" });
log("ready");
let buffer = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => {
  buffer += d;
  let nl = buffer.indexOf("\n");
  while (nl >= 0) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    for (const command of line.split(";")) if (command.trim() !== "") run(command);
    nl = buffer.indexOf("\n");
  }
});
process.stdin.on("end", () => run("close"));
