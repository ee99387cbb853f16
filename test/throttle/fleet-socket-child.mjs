// A fleet of unrelated processes on one machine for test/throttle/fleet-socket.test.ts (the
// built package): ClusterStore's `socket` mode (PM2 cluster mode has no primary of ours). This
// script starts the members with child_process.fork (the IPC channel only carries "ready"/"go";
// the store talks over the Unix socket); each member is a fleet member (fleet-member.mjs) on
// `new ClusterStore({ socket })`, and whichever binds the socket first hosts the store and the
// fleet queue. Args: mode optionsJSON jobs seed [depth].
//   "burst", "steady": 4 members; member 0 starts first (and so hosts), the others once it is ready.
//   "kill":      a process that runs no job hosts; member 0 holds every slot, then member 1
//                bursts, and 200 ms later member 0 is SIGKILLed ("0 K <ms>"): a member's death.
//   "kill-host": 4 members bursting jobs of 50-250 ms; member 0 hosts and is SIGKILLed 0.8 s
//                into the run, as another member's job starts ("0 K <ms>"): the others elect
//                a new host and carry on.
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClusterStore } from "../../dist/stores/cluster/index.js";
import { conductor } from "./fleet-conductor.mjs";
import { fleetMember } from "./fleet-member.mjs";

const [mode, optionsJson, jobs, seed, depth] = process.argv.slice(2);
const role = process.env.FLEET_ROLE;

if (role === "member") {
  await fleetMember({
    index: Number(process.env.FLEET_INDEX),
    store: new ClusterStore({ socket: process.env.FLEET_SOCKET, timeoutMs: 10_000 }),
    mode: mode === "kill-host" ? "long" : mode,
    optionsJson,
    jobs,
    seed,
    depth,
    log: (line) => process.stdout.write(line),
    send: (m) => process.send(m),
    listen: (on) => process.on("message", on),
    end: () => process.disconnect(),
  });
} else if (role === "host") {
  // Hosts the store (a first check elects it) and runs no job: it lives until told to go.
  const store = new ClusterStore({ socket: process.env.FLEET_SOCKET, timeoutMs: 10_000 });
  const { createLimiter } = await import("../../dist/index.js");
  await createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 1000 }, { store }).tryAcquire("elect");
  process.send({ fleet: store.hosting ? "hosting" : "not hosting" });
  process.on("message", () => process.exit(0));
} else {
  const dir = mkdtempSync(join(tmpdir(), "sluice-fleet-"));
  const socket = join(dir, "s.sock");
  const count = mode === "kill" ? 2 : 4;
  const members = [];
  let host;
  const args = [mode, optionsJson, jobs, seed, depth ?? "8"];
  const start = (i) => {
    const m = fork(new URL(import.meta.url), args, {
      env: { ...process.env, FLEET_ROLE: "member", FLEET_INDEX: String(i), FLEET_SOCKET: socket },
    });
    members[i] = m;
    run.started(i, (msg) => m.send(msg));
    m.on("message", (msg) => run.hear(i, msg));
    m.on("exit", () => run.exited());
  };
  const run = conductor({
    mode,
    count,
    start,
    kill: (i) => members[i].kill("SIGKILL"),
    done: () => {
      host?.send("go", () => {});
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    },
    // Member 0 hosts (it bound the socket for its warm-up job): the others join it.
    joinFirst: true,
  });
  // Ended from outside (a bench's time limit): the members go too.
  process.on("SIGTERM", () => {
    for (const m of [...members, host]) m?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    process.exit(1);
  });
  if (mode === "kill") {
    host = fork(new URL(import.meta.url), args, {
      env: { ...process.env, FLEET_ROLE: "host", FLEET_SOCKET: socket },
    });
    host.on("message", (msg) => {
      if (msg?.fleet !== "hosting") throw new Error(`the host process is ${msg?.fleet}`);
      start(0);
    });
  } else start(0);
}
