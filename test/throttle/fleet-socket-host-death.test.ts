// ClusterStore's `socket` mode (fleet-socket-child.mjs, the built package: 4 unrelated processes
// sharing one throttle by name; the process that bound the socket hosts the store and the
// queue): the host's own death. SIGKILLed mid-run while it runs jobs and others wait, the others
// elect a new host, which lets no more than `concurrency` run, no window hold more than the rate,
// and no job run twice; every waiting job is re-queued there and runs (none fails). (Split from
// fleet-socket.test.ts, to keep each file within the per-file time target.)
import { fileURLToPath } from "node:url";
import { describeHostDeath } from "./fleet-cluster-log.ts";

describeHostDeath(
  "the socket host SIGKILLed mid-run",
  fileURLToPath(new URL("./fleet-socket-child.mjs", import.meta.url)),
  false,
);
