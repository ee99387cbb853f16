// Preloaded into a benchmarked server (`node --import ./bench/cpu-probe.mjs ...`, spawned with an
// IPC channel): answers "cpu" with the server's own process.cpuUsage(), in µs, exact to the
// microsecond where /proc's ticks are 10 ms. The channel is unref'd so it keeps nothing alive.
process.on("message", (m) => {
  if (m === "cpu") process.send(process.cpuUsage());
});
process.channel?.unref();
