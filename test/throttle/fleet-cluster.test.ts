// One queue for the fleet on ClusterStore, from outside: a node:cluster primary
// (fleet-cluster-child.mjs, the built package) holds the queue; 4 real worker processes share
// one throttle by name. The checks (fleet-cluster-log.ts, `describeFleet`): never more than
// `concurrency` running; no window over the rate; no priority or arrival inversion across
// workers; shares within ±10% under equal demand; throughput reported (asserted loosely). A
// worker killed with SIGKILL while holding every slot, with tickets at the head, stops no one.
// Longer runs: FLEET_CLUSTER_JOBS (default 100 per worker).
import { fileURLToPath } from "node:url";
import { describeFleet } from "./fleet-cluster-log.ts";

describeFleet(
  "one queue for the fleet on ClusterStore: 4 worker processes",
  fileURLToPath(new URL("./fleet-cluster-child.mjs", import.meta.url)),
  Number(process.env.FLEET_CLUSTER_JOBS ?? 100),
  "SIGKILL a worker",
);
