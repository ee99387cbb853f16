// SharedMemoryStore's fleet queue outlives the thread that hosts it: the creating thread is a
// member (fleet-threads-child.mjs "kill-host", the built package) and is ended with
// worker.terminate() mid-run while the others' jobs run and wait. Its hold on hosting (a lease
// in the shared records) runs out, another thread takes it, and the owners open their queues
// again there (src/stores/threads/queue-channel.ts). The checks of fleet-cluster-log.ts's
// `describeHostDeath`, counting every start (the records are shared, so the dead host's starts
// still count at the new one).
import { fileURLToPath } from "node:url";
import { describeHostDeath } from "./fleet-cluster-log.ts";

describeHostDeath(
  "the SharedMemoryStore's hosting thread terminated mid-run",
  fileURLToPath(new URL("./fleet-threads-child.mjs", import.meta.url)),
  true,
);
