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
