// valkey-glide's GlideClient on the shared Redis (127.0.0.1:6379 or the one the suite found):
// its store decides exactly as an ioredis store on the same prefix and names (they share the
// state), and the deny cache is off, refused when asked for explicitly. Skipped,
// saying so, where @valkey/valkey-glide is not installed (a native binary; see docs/redis.md).
import { ArgumentError, createLimiter, ManualClock } from "sluice";
import { type RedisClientLike, RedisStore } from "sluice/redis";
import { afterAll, describe, expect, it } from "vitest";
import { standaloneRedis, uniquePrefix, useStandaloneClients } from "../support/redis-server.ts";

interface Glide {
  GlideClient: {
    createClient(options: object): Promise<{ close(): void; customCommand(args: string[]): Promise<unknown> }>;
  };
}
const PACKAGE = "@valkey/valkey-glide";
const glide = (await import(PACKAGE).catch(() => {
  console.warn(`${PACKAGE} is not installed: the valkey-glide tests are skipped`);
  return undefined;
})) as Glide | undefined;
const redis = await standaloneRedis("valkey-glide");

describe.skipIf(redis === undefined || glide === undefined)("valkey-glide GlideClient", () => {
  const clients = useStandaloneClients(redis);
  let client: Awaited<ReturnType<Glide["GlideClient"]["createClient"]>> | undefined;
  const connect = async () => {
    const { hostname, port } = new URL(clients.url);
    client ??= await (glide as Glide).GlideClient.createClient({
      addresses: [{ host: hostname, port: Number(port) }],
      requestTimeout: 2000,
    });
    return client as unknown as RedisClientLike;
  };
  afterAll(() => client?.close());

  it("shares state with an ioredis store, decides the same; glide names NOSCRIPT in its own words", async () => {
    const prefix = uniquePrefix("glide");
    const clock = new ManualClock(1_800_000_000_000);
    const spec = { algorithm: "sliding-window", limit: 3, windowMs: 60_000 } as const;
    const onGlide = createLimiter(spec, {
      store: new RedisStore({ client: await connect(), prefix }),
      clock,
      name: "api",
    });
    const onIo = createLimiter(spec, { store: new RedisStore({ client: clients.io, prefix }), clock, name: "api" });
    // glide's words for NOSCRIPT, which the adapter turns back into Redis's code (the store then
    // loads the script by EVAL: exercised on fresh servers by client-matrix.test.ts).
    const glideClient = client as unknown as { customCommand(args: string[]): Promise<unknown> };
    await expect(glideClient.customCommand(["EVALSHA", "0".repeat(40), "0"])).rejects.toThrow(/NoScriptError/);
    const answers = [];
    for (let i = 0; i < 4; i++) {
      const limiter = i % 2 === 0 ? onGlide : onIo;
      const d = await limiter.tryAcquire("user-1");
      answers.push([d.allowed, d.remaining, d.failure]);
    }
    expect(answers).toEqual([
      [true, 2, undefined],
      [true, 1, undefined],
      [true, 0, undefined],
      [false, 0, undefined],
    ]);
    await onGlide.reset("user-1");
    expect(await onIo.peek("user-1")).toMatchObject({ allowed: true, remaining: 2 });
  });

  it("runs without the deny cache, and refuses it when asked for", async () => {
    const client = await connect();
    const store = new RedisStore({ client, prefix: uniquePrefix("glide-deny") });
    const limiter = createLimiter({ algorithm: "fixed-window", limit: 1, windowMs: 60_000 }, { store, name: "api" });
    for (let i = 0; i < 3; i++) await limiter.tryAcquire("k");
    expect([store.cachedDenials, store.denyCacheHits]).toEqual([0, 0]);
    expect(() => new RedisStore({ client, denyCache: true })).toThrow(ArgumentError);
    expect(() => new RedisStore({ client, denyCache: { maxEntries: 10 } })).toThrow(
      /`denyCache` needs a client that can subscribe to pub\/sub; a valkey-glide client cannot/,
    );
  });
});
