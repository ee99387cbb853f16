// The server process of bench/grpc-servers.mjs: one `sluice serve` (its HTTP JSON API and its
// own gRPC listener, from dist/) plus, on the same Envoy state and the same decide function, two
// more ShouldRateLimit listeners built on libraries: @grpc/grpc-js with @grpc/proto-loader (what
// sluice served with before) and @connectrpc/connect-node with @bufbuild/protobuf on node:http2.
// Only the transport and codec differ between the three. Answers "cpu" over IPC with its own
// process.cpuUsage(), and prints its addresses as one JSON line.
import { createServer as createH2 } from "node:http2";
import { fileURLToPath } from "node:url";
import { create, createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import protobuf from "protobufjs";
import descriptorExt from "protobufjs/ext/descriptor/index.js";
import { shouldRateLimit } from "../dist/server/envoy/decide.js";
import { startServer } from "../dist/server/server.js";

const [config, envoyConfig] = process.argv.slice(2);
const PROTO = fileURLToPath(new URL("../dist/server/envoy/ratelimit.proto", import.meta.url));
const PROTO_OPTIONS = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

const running = await startServer({
  config,
  envoyConfig,
  grpcPort: 0,
  port: 0,
  host: "127.0.0.1",
  maxBodyBytes: 1 << 20,
  maxBatch: 1000,
  watch: false,
  shutdownTimeoutMs: 1000,
  log: () => undefined,
});
const state = () => running.context.envoy.state;

// --- @grpc/grpc-js, as src/server/envoy/grpc-server.ts was (channelz off, TCP_NODELAY).
const pkg = grpc.loadPackageDefinition(loadSync(PROTO, PROTO_OPTIONS));
const grpcServer = new grpc.Server({ "grpc.enable_channelz": 0 });
grpcServer.addService(pkg.envoy.service.ratelimit.v3.RateLimitService.service, {
  ShouldRateLimit: (call, callback) =>
    shouldRateLimit(state(), call.request).then(
      (r) => callback(null, r),
      (e) => callback({ code: grpc.status.INTERNAL, details: String(e) }),
    ),
});
const injector = grpcServer.createConnectionInjector(grpc.ServerCredentials.createInsecure());
const { createServer } = await import("node:net");
const grpcListener = createServer({ noDelay: true }, (s) => injector.injectConnection(s));
await new Promise((r) => grpcListener.listen(0, "127.0.0.1", r));

// --- connect-node + @bufbuild/protobuf: the service descriptor built from the same .proto
// (protobufjs -> FileDescriptorSet -> @bufbuild registry), the messages converted to and from
// the shapes decide.ts takes.
// protobufjs' toDescriptor leaves type names relative and files without dependencies; qualify
// them from its resolved reflection so @bufbuild's registry can link the files.
const root = new protobuf.Root().loadSync(PROTO, { keepCase: true });
root.resolveAll();
const descriptorSet = root.toDescriptor("proto3");
const resolve = (name, scope) => {
  // Protobuf's scoping: the innermost enclosing scope that has the name.
  for (let parts = scope.split("."); ; parts.pop()) {
    const found = root.lookup([...parts, name].filter(Boolean).join("."));
    if (found !== null) return found.fullName;
    if (parts.length === 0) throw new Error(`cannot resolve ${name} in ${scope}`);
  }
};
const qualify = (messages, scope) => {
  for (const m of messages) {
    const inner = scope === "" ? m.name : `${scope}.${m.name}`;
    for (const f of m.field) {
      if (!f.typeName || f.typeName.startsWith(".")) continue;
      // A map's entry type is nested in the message, where protobufjs' reflection does not list it.
      const entry = m.nestedType.some((n) => n.name === f.typeName);
      f.typeName = entry ? `.${inner}.${f.typeName}` : resolve(f.typeName, inner);
    }
    qualify(m.nestedType, inner);
  }
};
for (const file of descriptorSet.file) qualify(file.messageType, file.package ?? "");
const [main, ...rest] = descriptorSet.file;
main.dependency = rest.map((f) => f.name);
descriptorSet.file = [...rest, main];
const set = descriptorExt.FileDescriptorSet.encode(descriptorSet).finish();
const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, set));
const service = registry.getService("envoy.service.ratelimit.v3.RateLimitService");
const responseSchema = registry.getMessage("envoy.service.ratelimit.v3.RateLimitResponse");
const UNITS = ["UNKNOWN", "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR"];
const CODES = { OK: 1, OVER_LIMIT: 2 };
const toRls = (req) => ({
  domain: req.domain,
  hits_addend: req.hitsAddend,
  descriptors: req.descriptors.map((d) => ({
    entries: d.entries.map((e) => ({ key: e.key, value: e.value })),
    limit: d.limit === undefined ? null : { requests_per_unit: d.limit.requestsPerUnit, unit: UNITS[d.limit.unit] },
    hits_addend: d.hitsAddend === undefined ? null : { value: Number(d.hitsAddend.value) },
  })),
});
const fromRls = (r) =>
  create(responseSchema, {
    overallCode: CODES[r.overall_code],
    statuses: r.statuses.map((s) => ({
      code: CODES[s.code],
      limitRemaining: s.limit_remaining,
      ...(s.current_limit === null
        ? {}
        : {
            currentLimit: {
              requestsPerUnit: s.current_limit.requests_per_unit,
              unit: UNITS.indexOf(s.current_limit.unit),
              name: s.current_limit.name,
            },
          }),
      ...(s.duration_until_reset === null
        ? {}
        : {
            durationUntilReset: {
              seconds: BigInt(s.duration_until_reset.seconds),
              nanos: s.duration_until_reset.nanos,
            },
          }),
    })),
  });
const handler = connectNodeAdapter({
  grpc: true,
  connect: false,
  grpcWeb: false,
  routes: (router) =>
    router.service(service, { shouldRateLimit: async (req) => fromRls(await shouldRateLimit(state(), toRls(req))) }),
});
const connectServer = createH2(handler);
connectServer.on("connection", (s) => s.setNoDelay(true));
await new Promise((r) => connectServer.listen(0, "127.0.0.1", r));

process.on("message", (m) => {
  if (m === "cpu") process.send(process.cpuUsage());
  if (m === "stop") {
    grpcServer.forceShutdown();
    grpcListener.close();
    connectServer.close();
    void running.close().then(() => process.exit(0));
  }
});
console.log(
  JSON.stringify({
    http: running.url,
    sluice: `127.0.0.1:${running.context.envoy.grpc.port}`,
    "grpc-js": `127.0.0.1:${grpcListener.address().port}`,
    connect: `127.0.0.1:${connectServer.address().port}`,
  }),
);
