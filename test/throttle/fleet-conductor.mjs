// The application side the hosted fleet children share (fleet-cluster-child.mjs: node:cluster
// workers; fleet-socket-child.mjs: forked processes on a socket; fleet-threads-child.mjs:
// worker threads): it hears each member's messages (fleet-member.mjs) and says "go" to all once
// every member is ready, and stops the run's victim, member 0, by `kill`:
//   "kill":      each member goes as soon as it is ready; 200 ms after member 1 is, member 0 is killed;
//   "kill-host": 0.8 s into the run, as another member's job (50-250 ms) starts;
// writing "0 K <ms>" (the kill's instant) first. Member 0 saying "holding" starts member 1.
// `joinFirst`: members 1.. start once member 0 is ready (it hosts: it bound the socket first).

/** A conductor for `count` members: `hear(i, message)` for each message, `exited()` for each exit. */
export function conductor({ mode, count, start, kill, done, joinFirst = false }) {
  const senders = [];
  let ready = 0;
  let exited = 0;
  let goAt = 0;
  let killed = false;
  const killFirst = () => {
    killed = true;
    process.stdout.write(`0 K ${Date.now()}\n`);
    kill(0);
  };
  return {
    /** Member `i` is started: `send` reaches it. */
    started(i, send) {
      senders[i] = send;
    },
    hear(i, message) {
      if (message?.fleet === "ready") {
        if (mode === "kill") {
          senders[i]({ fleet: "go" });
          if (i === 1) setTimeout(killFirst, 200);
          return;
        }
        if (joinFirst && i === 0) for (let j = 1; j < count; j++) start(j);
        if (++ready < count) return;
        for (const send of senders) send({ fleet: "go" });
        goAt = Date.now();
      } else if (
        message?.fleet === "started" &&
        i !== 0 &&
        goAt > 0 &&
        Date.now() - goAt > 800 &&
        Date.now() < message.until - 20 &&
        exited === 0 &&
        !killed
      ) {
        killFirst();
      } else if (message?.fleet === "holding" && i === 0) start(1);
    },
    exited() {
      if (++exited === count) done();
    },
  };
}
