/** A real @grpc/grpc-js client of Envoy's RateLimitService (and the health service), for the envoy suites. */

import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import type { RlsResponse } from "../../src/server/envoy/wire.ts";

/** The service's contract, shipped beside its server: ratelimit.proto. */
export const PROTO_PATH = fileURLToPath(new URL("../../src/server/envoy/ratelimit.proto", import.meta.url));
/** ... and health.proto (grpc.health.v1). */
export const HEALTH_PROTO_PATH = fileURLToPath(new URL("../../src/server/envoy/health.proto", import.meta.url));
/** How this client's loader reads the protos: the shapes of wire.ts. */
export const PROTO_OPTIONS = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true } as const;

/** The RateLimitService definition, loaded by @grpc/proto-loader. */
export function rateLimitServiceDefinition(): grpc.ServiceDefinition {
  const pkg = grpc.loadPackageDefinition(loadSync(PROTO_PATH, { ...PROTO_OPTIONS })) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } };
  };
  return pkg.envoy.service.ratelimit.v3.RateLimitService.service;
}

/** A request as a test writes it: descriptors as [key, value] pairs, optional hits. */
export interface TestDescriptor {
  entries: Array<[string, string]>;
  hits?: number;
  limit?: { requests_per_unit: number; unit: string };
}

/** How to connect: a bearer token sent as metadata, TLS material (a client cert for mTLS). */
export interface ClientOptions {
  token?: string;
  tls?: { ca: Buffer; cert?: Buffer; key?: Buffer };
}

/** A connected client. */
export interface RlsClient {
  ask(domain: string, descriptors: TestDescriptor[], hits?: number): Promise<RlsResponse>;
  /** Sends a request already encoded by {@link encodeRequest} (so the caller's timing excludes encoding). */
  askBytes(bytes: Buffer): Promise<RlsResponse>;
  /** grpc.health.v1.Health/Check of `service` ("" for the whole server). */
  health(service?: string): Promise<string>;
  close(): void;
}

function requestOf(domain: string, descriptors: TestDescriptor[], hits?: number) {
  return {
    domain,
    hits_addend: hits ?? 0,
    descriptors: descriptors.map((d) => ({
      entries: d.entries.map(([key, value]) => ({ key, value })),
      ...(d.hits === undefined ? {} : { hits_addend: { value: d.hits } }),
      ...(d.limit === undefined ? {} : { limit: d.limit }),
    })),
  };
}

/** A request's wire bytes, as grpc-js would send them. */
export function encodeRequest(domain: string, descriptors: TestDescriptor[], hits?: number): Buffer {
  return rateLimitServiceDefinition().ShouldRateLimit?.requestSerialize(requestOf(domain, descriptors, hits)) as Buffer;
}

type Unary = (req: unknown, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res: never) => void) => void;

function credentialsOf(options: ClientOptions): grpc.ChannelCredentials {
  const tls = options.tls;
  if (tls === undefined) return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(tls.ca, tls.key ?? null, tls.cert ?? null);
}

/** Connects to `address` (host:port). */
export function rlsClient(address: string, options: ClientOptions = {}): RlsClient {
  const pkg = grpc.loadPackageDefinition(loadSync(PROTO_PATH, { ...PROTO_OPTIONS })) as unknown as {
    envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } };
  };
  const health = grpc.loadPackageDefinition(loadSync(HEALTH_PROTO_PATH, { ...PROTO_OPTIONS })) as unknown as {
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  };
  const credentials = credentialsOf(options);
  const client = new pkg.envoy.service.ratelimit.v3.RateLimitService(address, credentials) as unknown as grpc.Client & {
    ShouldRateLimit: Unary;
  };
  const healthClient = new health.grpc.health.v1.Health(address, credentials) as unknown as grpc.Client & {
    Check: Unary;
  };
  const metadata = () => {
    const md = new grpc.Metadata();
    if (options.token !== undefined) md.set("authorization", `Bearer ${options.token}`);
    return md;
  };
  return {
    ask: (domain, descriptors, hits) =>
      new Promise((resolve, reject) => {
        client.ShouldRateLimit(requestOf(domain, descriptors, hits), metadata(), (err, res: RlsResponse) =>
          err === null ? resolve(res) : reject(err),
        );
      }),
    askBytes: (bytes) =>
      new Promise((resolve, reject) => {
        const method = rateLimitServiceDefinition().ShouldRateLimit as grpc.MethodDefinition<unknown, RlsResponse>;
        client.makeUnaryRequest(
          method.path,
          (b: Buffer) => b,
          method.responseDeserialize,
          bytes,
          metadata(),
          (err: grpc.ServiceError | null, res?: RlsResponse) =>
            err === null ? resolve(res as RlsResponse) : reject(err),
        );
      }),
    health: (service = "") =>
      new Promise((resolve, reject) => {
        healthClient.Check({ service }, new grpc.Metadata(), (err, res: { status: string }) =>
          err === null ? resolve(res.status) : reject(err),
        );
      }),
    close: () => {
      client.close();
      healthClient.close();
    },
  };
}
