// A node:cluster application for test/throttle/fleet-cluster.test.ts (the built package): the
// primary runs startClusterStore() and forks the workers; each worker is a fleet member
// (fleet-member.mjs: one throttle named "fleet" on a ClusterStore, its jobs and log lines).
// Args: mode optionsJSON jobs seed [depth]. Modes "burst" and "steady": 4 workers; "kill":
// worker 0 holds every slot, then worker 1 bursts `jobs` jobs, and 200 ms later worker 0 is
// SIGKILLed (the line "0 K <ms>" is the kill's instant).
import cluster from "node:cluster";
import { ClusterStore, startClusterStore } from "../../dist/stores/cluster/index.js";
import { conductor } from "./fleet-conductor.mjs";
import { fleetMember } from "./fleet-member.mjs";

const [mode, optionsJson, jobs, seed, depth] = process.argv.slice(2);

if (cluster.isPrimary) {
  const primary = startClusterStore();
  const count = mode === "kill" ? 2 : 4;
  const workers = [];
  const fork = (i) => {
    const w = cluster.fork({ FLEET_INDEX: String(i) });
    workers[i] = w;
    run.started(i, (m) => w.send(m));
    w.on("message", (m) => run.hear(i, m));
    w.on("exit", () => run.exited());
  };
  const run = conductor({
    mode,
    count,
    start: fork,
    kill: (i) => workers[i].process.kill("SIGKILL"),
    done: () => {
      primary.stop();
      process.exit(0);
    },
  });
  if (mode === "kill") fork(0);
  else for (let i = 0; i < count; i++) fork(i);
} else {
  const index = Number(process.env.FLEET_INDEX);
  await fleetMember({
    index,
    store: new ClusterStore({ timeoutMs: 10_000 }),
    mode,
    optionsJson,
    jobs,
    seed,
    depth,
    log: (line) => process.stdout.write(line),
    send: (m) => process.send(m),
    listen: (on) => process.on("message", on),
    end: () => process.disconnect(),
  });
}
