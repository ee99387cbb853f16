// The rate-limiter-flexible migration side by side: the same calls on a RateLimiterMemory and on
// a sluice limiter as docs/migrate/rate-limiter-flexible.md maps them (consume → tryAcquire,
// penalty, block, get, reward → refund, delete → reset), and a RateLimiterRedis with an
// `insuranceLimiter` beside a RedisStore with `onError: <limiter>`, both on a Redis that does not
// answer. Which call is refused, remaining points and the milliseconds before the next point
// must agree (within the time the calls between the two readings of the clock take); where they
// do not, the difference is asserted as the guide's table states it.
import { createLimiter, type Decision, type Limiter } from "sluice";
import { RedisStore } from "sluice/redis";
import { afterEach, describe, expect, test } from "vitest";
import { deadIoredis } from "../support/redis-server.ts";

// Loaded untyped: only the calls below are used, as the guide's left column writes them.
const PEER = "rate-limiter-flexible";
interface Res {
  remainingPoints: number;
  msBeforeNext: number;
  consumedPoints: number;
}
interface PeerLimiter {
  consume(key: string, points?: number): Promise<Res>;
  penalty(key: string, points?: number): Promise<Res>;
  reward(key: string, points?: number): Promise<Res>;
  block(key: string, seconds: number): Promise<Res>;
  get(key: string): Promise<Res | null>;
  delete(key: string): Promise<boolean>;
}
const rlf = (await import(PEER)) as {
  RateLimiterMemory: new (o: object) => PeerLimiter;
  RateLimiterRedis: new (o: object) => PeerLimiter;
};

/** The slack between the two libraries' clock readings (they run one after the other). */
const SLACK_MS = 250;

/** A consume as sluice answers it: resolved or rejected, the RateLimiterRes either way. */
async function consume(peer: PeerLimiter, key: string, points = 1): Promise<{ allowed: boolean; res: Res }> {
  try {
    return { allowed: true, res: await peer.consume(key, points) };
  } catch (rejected) {
    if (rejected instanceof Error) throw rejected;
    return { allowed: false, res: rejected as Res };
  }
}

function same(peer: { allowed: boolean; res: Res }, ours: Decision, at: string): void {
  expect(ours.allowed, at).toBe(peer.allowed);
  expect(ours.remaining, at).toBe(peer.res.remainingPoints);
  // msBeforeNext: until the next point when refused (retryAfterMs), until the window ends when not (resetMs).
  const ms = ours.allowed ? ours.resetMs : ours.retryAfterMs;
  expect(Math.abs(ms - peer.res.msBeforeNext), `${at}: ${ms} vs ${peer.res.msBeforeNext}`).toBeLessThanOrEqual(
    SLACK_MS,
  );
}

const limiters: Limiter[] = [];
afterEach(async () => {
  for (const l of limiters.splice(0)) await l.close?.();
});

describe("rate-limiter-flexible 11 → a sluice limiter", () => {
  test("consume, penalty, reward, block, get and delete", async () => {
    const peer = new rlf.RateLimiterMemory({ points: 5, duration: 60 });
    const ours = createLimiter({ algorithm: "fixed-window", limit: 5, windowMs: 60_000, anchor: "first" });
    limiters.push(ours);
    const key = "user-1";
    expect(await peer.get(key), "an unknown key").toBeNull();
    expect(await ours.get(key), "an unknown key").toBeNull();
    for (let i = 1; i <= 3; i++) same(await consume(peer, key), await ours.tryAcquire(key), `consume ${i}`);
    // penalty(key, 2): taken even past the limit, on both.
    const penalised = await peer.penalty(key, 2);
    const ourPenalty = await ours.penalty(key, 2);
    expect(ourPenalty.remaining).toBe(penalised.remainingPoints);
    same(await consume(peer, key), await ours.tryAcquire(key), "consume past the limit");
    // The refused consume counted on the peer (consumedPoints 6), not on sluice. After a reward
    // of 1 the peer is still full and refuses the next consume; after a refund of 1 sluice admits
    // it (the guide's table). sluice's refund, like its get, answers a peek of one unit.
    const rewarded = await peer.reward(key, 1);
    const refunded = await ours.refund(key, 1);
    expect([rewarded.consumedPoints, rewarded.remainingPoints]).toEqual([5, 0]);
    expect(refunded).toMatchObject({ allowed: true, remaining: 0 });
    const peerGet = (await peer.get(key)) as Res;
    const ourGet = (await ours.get(key)) as Decision;
    expect([peerGet.consumedPoints, peerGet.remainingPoints]).toEqual([5, 0]);
    expect(ourGet).toMatchObject({ allowed: true, remaining: 0 }); // one unit fits, none after it
    expect((await consume(peer, key)).allowed).toBe(false);
    expect((await ours.tryAcquire(key)).allowed).toBe(true);
    // delete ↔ reset: a fresh key on both.
    await peer.delete(key);
    await ours.reset(key);
    same(await consume(peer, key), await ours.tryAcquire(key), "consume after delete/reset");
    // block(key, 10 s) ↔ block(key, 10_000 ms): refused until then on both.
    await peer.block(key, 10);
    await ours.block(key, 10_000);
    same(await consume(peer, key), await ours.tryAcquire(key), "consume while blocked");
  });

  test("insuranceLimiter ↔ onError: <limiter>, while Redis does not answer", async () => {
    const insurance = new rlf.RateLimiterMemory({ points: 2, duration: 60 });
    const peer = new rlf.RateLimiterRedis({
      storeClient: deadIoredis(),
      points: 10,
      duration: 60,
      insuranceLimiter: insurance,
    });
    const fallback = createLimiter({ algorithm: "fixed-window", limit: 2, windowMs: 60_000, anchor: "first" });
    const ours = createLimiter(
      { algorithm: "fixed-window", limit: 10, windowMs: 60_000, anchor: "first" },
      { store: new RedisStore({ client: deadIoredis(), onError: fallback }), name: "api" },
    );
    limiters.push(ours, fallback);
    for (let i = 1; i <= 3; i++) {
      const a = await consume(peer, "k");
      const b = await ours.tryAcquire("k");
      same(a, b, `consume ${i} (the insurance decides)`);
      expect(b.failure?.policy, "sluice says who decided").toBe("fallback");
    }
  });
});
