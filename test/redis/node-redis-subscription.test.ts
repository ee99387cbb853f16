// The deny cache's subscription on a node-redis client reports its link live only when messages
// can reach it. node-redis emits "ready" on the duplicate's first connection, before our SUBSCRIBE
// is confirmed; reporting that one live let a cache answer, then go live a second time (clearing
// a cached denial) when the caller confirmed the subscription. After a reconnection node-redis
// re-subscribes before "ready", so that one is reported, and messages arrive again.
import { createClient } from "redis";
import { afterEach, describe, expect, it } from "vitest";
import { nodeRedisCommands } from "../../src/stores/redis/node-redis-commands.ts";
import { canStartRedis, type OwnedRedis, startOwnedRedis } from "../support/redis-server.ts";

const canStart = await canStartRedis("node-redis subscription");

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

/** Resolves once `done()` holds, checking on every event-loop turn (bounded by the test timeout). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe.runIf(canStart)("node-redis subscription link", () => {
  it("is not reported live before SUBSCRIBE is confirmed, and is after a reconnection", async () => {
    const server = (await startOwnedRedis()) as OwnedRedis;
    cleanups.push(() => server.dispose());
    const client = createClient({ url: server.url });
    client.on("error", () => undefined);
    await client.connect();
    cleanups.push(() => client.quit());

    const links: boolean[] = [];
    const messages: string[] = [];
    const commands = nodeRedisCommands(client as unknown as Record<string, unknown>);
    const sub = await commands.subscribe(
      "sluice-test:link",
      (m) => messages.push(m),
      (up) => links.push(up),
      () => undefined,
    );
    cleanups.push(() => sub.close());
    // The caller reports the first link itself, once subscribe() has resolved.
    expect(links).toEqual([]);
    await client.publish("sluice-test:link", "one");
    await until(() => messages.length === 1);

    // Drop the subscriber's connection; node-redis reconnects and re-subscribes by itself.
    await client.sendCommand(["CLIENT", "KILL", "TYPE", "pubsub"]);
    await until(() => links.includes(false) && links.at(-1) === true);
    expect(links.indexOf(false)).toBeLessThan(links.lastIndexOf(true));
    await client.publish("sluice-test:link", "two");
    await until(() => messages.includes("two"));
    expect(messages).toEqual(["one", "two"]);
  });
});
