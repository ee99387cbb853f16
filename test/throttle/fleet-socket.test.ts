// One queue for the fleet on ClusterStore's `socket` mode (PM2 cluster mode, or any processes of
// one machine), from outside: 4 unrelated processes (fleet-socket-child.mjs, the built package)
// share one throttle by name; the process that bound the socket hosts the store and the queue.
// The fleet checks of fleet-cluster-log.ts (`describeFleet`: most running ≤ concurrency, no
// window over the rate, no priority or arrival inversion, shares within ±10%, a SIGKILLed member
// holding every slot stops no one). The host's own death: fleet-socket-host-death.test.ts.
// Longer runs: FLEET_SOCKET_JOBS (default 100 per process).
import { fileURLToPath } from "node:url";
import { describeFleet } from "./fleet-cluster-log.ts";

const child = fileURLToPath(new URL("./fleet-socket-child.mjs", import.meta.url));
const JOBS = Number(process.env.FLEET_SOCKET_JOBS ?? 100);

describeFleet(
  "one queue for the fleet on ClusterStore's socket: 4 unrelated processes",
  child,
  JOBS,
  "SIGKILL a member",
);
