import { describe, expect, test } from "vitest";
import { ClientAddresses, type RequestReader } from "./client-address.ts";
import type { RateLimitOptions } from "./options.ts";

/** A request as the test reader sees it: the socket's address and the (lower-case) headers. */
interface FakeRequest {
  address: string;
  headers: Record<string, string>;
}

/** Resolves `requests` in order; returns the keys, the warning codes, and how often a header was read. */
function resolve(options: Pick<RateLimitOptions<FakeRequest>, "trustProxy" | "proxyHeader">, requests: FakeRequest[]) {
  let reads = 0;
  const reader: RequestReader<FakeRequest> = {
    address: (request) => request.address,
    header: (request, name) => {
      reads++;
      return request.headers[name];
    },
  };
  const warnings: string[] = [];
  const seen = new Set<string>();
  const clients = new ClientAddresses(options, reader, (code) => {
    // As warner(): once per code.
    if (!seen.has(code)) warnings.push(code);
    seen.add(code);
  });
  const keys = requests.map((request) => clients.of(request)?.key);
  return { keys, warnings, reads };
}

const forwarded = { "x-forwarded-for": "6.6.6.6" };

describe("ClientAddresses without trustProxy", () => {
  test("a forwarding header from a loopback peer is warned about once, then no longer read", () => {
    const peer = { address: "127.0.0.1", headers: forwarded };
    const { keys, warnings, reads } = resolve({}, [peer, peer, peer]);
    expect(keys).toEqual(["127.0.0.1", "127.0.0.1", "127.0.0.1"]);
    expect(warnings).toEqual(["SLUICE_UNTRUSTED_FORWARDED"]);
    expect(reads).toBe(1);
  });

  test("a private peer's header is read until one carries it", () => {
    const bare = { address: "10.1.2.3", headers: {} };
    const { keys, warnings, reads } = resolve({ trustProxy: false }, [bare, bare, { ...bare, headers: forwarded }]);
    expect(keys).toEqual(["10.1.2.3", "10.1.2.3", "10.1.2.3"]);
    expect(warnings).toEqual(["SLUICE_UNTRUSTED_FORWARDED"]);
    expect(reads).toBe(3);
  });

  test("a public peer's header is neither warned about nor read: the socket is the key", () => {
    const peer = { address: "203.0.113.5", headers: forwarded };
    const { keys, warnings, reads } = resolve({}, [peer, peer]);
    expect(keys).toEqual(["203.0.113.5", "203.0.113.5"]);
    expect(warnings).toEqual([]);
    expect(reads).toBe(0);
  });

  test('with proxyHeader "forwarded", no warning (it names X-Forwarded-For)', () => {
    const peer = { address: "::1", headers: { forwarded: "for=6.6.6.6", ...forwarded } };
    const { keys, warnings } = resolve({ proxyHeader: "forwarded" }, [peer]);
    expect(keys).toEqual(["::/56"]); // IPv6 grouped by the default ipv6Subnet
    expect(warnings).toEqual([]);
  });
});

describe("ClientAddresses resolves a connection once (trustProxy: false)", () => {
  /** Requests on connections (objects), the reader counting its address reads. */
  function onConnections(options: Pick<RateLimitOptions<Connected>, "trustProxy">, requests: Connected[]) {
    const counts = { addresses: 0, headers: 0 };
    const reader: RequestReader<Connected> = {
      address: (request) => {
        counts.addresses++;
        return request.address;
      },
      header: (request, name) => {
        counts.headers++;
        return request.headers[name];
      },
      connection: (request) => request.connection,
    };
    const warnings: string[] = [];
    const clients = new ClientAddresses(options, reader, (code) => warnings.push(code));
    const keys = requests.map((request) => clients.of(request)?.key);
    return { keys, warnings, counts };
  }
  interface Connected extends FakeRequest {
    connection: object | undefined;
  }
  const first = {};
  const second = {};

  test("a kept-alive connection's later requests do not read its address again", () => {
    const a = { address: "203.0.113.5", headers: {}, connection: first };
    const b = { address: "198.51.100.7", headers: {}, connection: second };
    const { keys, counts } = onConnections({}, [a, a, b, a, b]);
    expect(keys).toEqual(["203.0.113.5", "203.0.113.5", "198.51.100.7", "203.0.113.5", "198.51.100.7"]);
    expect(counts).toEqual({ addresses: 2, headers: 0 });
  });

  test("a loopback connection still gets its forwarding warning, on a later request too", () => {
    const plain = { address: "127.0.0.1", headers: {}, connection: first };
    const { warnings, counts } = onConnections({}, [plain, plain, { ...plain, headers: forwarded }, plain]);
    expect(warnings).toEqual(["SLUICE_UNTRUSTED_FORWARDED"]);
    expect(counts).toEqual({ addresses: 1, headers: 3 });
  });

  test("with trustProxy the header decides per request: no connection cache", () => {
    const peer = { address: "10.0.0.1", headers: forwarded, connection: first };
    const { keys, counts } = onConnections({ trustProxy: 1 }, [
      peer,
      { ...peer, headers: { "x-forwarded-for": "7.7.7.7" } },
    ]);
    expect(keys).toEqual(["6.6.6.6", "7.7.7.7"]);
    expect(counts.addresses).toBe(2);
  });

  test("a request without a connection is resolved by its address", () => {
    const peer = { address: "203.0.113.5", headers: {}, connection: undefined };
    const { keys, counts } = onConnections({}, [peer, peer]);
    expect(keys).toEqual(["203.0.113.5", "203.0.113.5"]);
    expect(counts.addresses).toBe(2);
  });
});
