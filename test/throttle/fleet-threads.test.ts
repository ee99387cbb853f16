// One queue for the fleet on SharedMemoryStore, from outside: the main thread
// (fleet-threads-child.mjs, the built package) creates the store and so keeps the queue; 4
// worker threads share one throttle by name. The same checks as fleet-cluster.test.ts's
// (`describeFleet`); the thread holding every slot is ended with worker.terminate(), which no
// one hears: its slots come back when their leases expire (leaseMs), its tickets when their
// owner's heartbeat has lapsed. Longer runs: FLEET_THREADS_JOBS (default 100 per thread).
import { fileURLToPath } from "node:url";
import { describeFleet } from "./fleet-cluster-log.ts";

describeFleet(
  "one queue for the fleet on SharedMemoryStore: 4 worker threads",
  fileURLToPath(new URL("./fleet-threads-child.mjs", import.meta.url)),
  Number(process.env.FLEET_THREADS_JOBS ?? 100),
  "worker.terminate() a thread",
);
