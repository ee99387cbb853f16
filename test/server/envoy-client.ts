/** A real @grpc/grpc-js client of Envoy's RateLimitService, for the envoy suites. */
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { PROTO_PATH } from "../../src/server/envoy/grpc-server.ts";
import { PROTO_OPTIONS, type RlsResponse } from "../../src/server/envoy/wire.ts";

/** A request as a test writes it: descriptors as [key, value] pairs, optional hits. */
export interface TestDescriptor {
  entries: Array<[string, string]>;
  hits?: number;
  limit?: { requests_per_unit: number; unit: string };
}

/** A connected client. */
export interface RlsClient {
  ask(domain: string, descriptors: TestDescriptor[], hits?: number): Promise<RlsResponse>;
  close(): void;
}

/** Connects to `address` (host:port). */
export function rlsClient(address: string): RlsClient {
  const pkg = grpc.loadPackageDefinition(loadSync(PROTO_PATH, { ...PROTO_OPTIONS })) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } };
  };
  const Client = pkg.envoy.service.ratelimit.v3.RateLimitService;
  const client = new Client(address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    ShouldRateLimit(req: unknown, cb: (err: grpc.ServiceError | null, res: RlsResponse) => void): void;
  };
  return {
    ask: (domain, descriptors, hits) =>
      new Promise((resolve, reject) => {
        const request = {
          domain,
          hits_addend: hits ?? 0,
          descriptors: descriptors.map((d) => ({
            entries: d.entries.map(([key, value]) => ({ key, value })),
            ...(d.hits === undefined ? {} : { hits_addend: { value: d.hits } }),
            ...(d.limit === undefined ? {} : { limit: d.limit }),
          })),
        };
        client.ShouldRateLimit(request, (err, res) => (err === null ? resolve(res) : reject(err)));
      }),
    close: () => client.close(),
  };
}
