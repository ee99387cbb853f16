// The conformance kit (sluice/testing, serviceConformance) on sluice/client against a real
// `sluice serve` (startServer, what the command runs, on a loopback port) deciding the case's
// rules on the case's ManualClock. The client has check, peek, reset and refund (with receipts):
// cases needing updateRule or rate-limiter-flexible's calls are listed as skipped with that reason.
import { createClient, type SluiceClient } from "sluice/client";
import { type ConformanceSubject, serviceConformance } from "sluice/testing";
import { afterAll, describe } from "vitest";
import { type RunningServer, startServer } from "../../src/server/server.ts";
import { tempDir } from "../cli/helpers.ts";
import { runCases } from "../support/conformance.ts";
import { freePort } from "../support/net.ts";

const tmp = tempDir();
afterAll(() => tmp.cleanup());

type Subject = ConformanceSubject & { client: SluiceClient; server?: RunningServer };

let files = 0;

describe("sluice/client against sluice serve: conformance", () => {
  runCases(
    serviceConformance<Subject>({
      name: "sluice/client + sluice serve",
      async open(clock, rules) {
        const config = tmp.file(`rules-${files++}.json`, JSON.stringify({ rules }));
        const server = await startServer({
          config,
          clock,
          port: 0,
          host: "127.0.0.1",
          maxBodyBytes: 1024 * 1024,
          maxBatch: 1000,
          watch: false,
          shutdownTimeoutMs: 1000,
          log: () => undefined,
        });
        const client = createClient({ url: server.url });
        return {
          client,
          server,
          check: (rule, key, options) => client.check(rule, key, options),
          peek: (rule, key, options) => client.peek(rule, key, options),
          reset: (rule, key) => client.reset(rule, key),
          refund: (rule, key, options) => client.refund(rule, key, options),
        };
      },
      supports: ["refund", "receipts"],
      async failing() {
        // A port nobody listens on: every call fails at once and the policy (deny) answers.
        const client = createClient({ url: `http://127.0.0.1:${await freePort()}`, timeoutMs: 500 });
        return {
          client,
          check: (rule, key, options) => client.check(rule, key, options),
          peek: (rule, key, options) => client.peek(rule, key, options),
          reset: (rule, key) => client.reset(rule, key),
        };
      },
      async close({ client, server }) {
        await client.close();
        await server?.close();
      },
    }),
  );
});
