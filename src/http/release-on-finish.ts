/**
 * Releases a Node response's slot when it ends, without a listener per response where Node's own
 * `http` server made it: the server publishes every finished response on the diagnostics
 * channel 'http.server.response.finish' (one subscriber for the process), and a client that
 * leaves closes the socket (one 'close' listener per socket, added once: keep-alive reuses it).
 * The socket holds its current response's release in two fields (and a list for more: requests
 * pipelined behind it, whose responses never emit 'close' if the socket goes first, or a second
 * `loadShed` on one request). A response the server did not make (Fastify's `inject()`,
 * HTTP/2's compatibility API: their socket has no HTTP parser) gets a 'close' listener of its
 * own. Why: `response.on("close", …)` was most of `loadShed`'s cost per request on node:http
 * (~690 instructions to add, plus its call); a listener per socket is paid once. (One field
 * keyed by Node's `socket._httpMessage` instead of two was tried: node:http counted 62–66k
 * instructions per request against 57.7k with this, so it was dropped.)
 *
 * Until the channel has been seen to fire for a held response (a runtime that does not publish it
 * would otherwise hold the slot until the socket closes), each response also gets the 'close'
 * listener: whichever comes first releases (the release is idempotent), and a response that
 * finished while its socket stayed open with the channel silent turns this path off.
 */
import { subscribe } from "node:diagnostics_channel";
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** A release that learns whether the response finished (true) or was cut short (false). */
export type EndRelease = (finished: boolean) => void;

const RESPONSE = Symbol("sluice.heldResponse");
const RELEASE = Symbol("sluice.heldRelease");
const MORE = Symbol("sluice.heldMore");

/** A response held beyond a socket's first: pipelined behind it, or a second `loadShed` on it. */
interface Held {
  response: ServerResponse;
  release: EndRelease;
}

/** A server socket as this module marks it: its held response and that response's release. */
interface HeldSocket extends Socket {
  [RESPONSE]?: ServerResponse | undefined;
  [RELEASE]?: EndRelease | undefined;
  [MORE]?: Held[] | undefined;
  /** Set by Node's http server on its sockets (not on inject()'s mock socket). */
  parser?: unknown;
}

/** 0: not yet seen the channel fire; 1: it does; -1: it does not here (per-response listeners only). */
let channelState: 0 | 1 | -1 = 0;
let subscribed = false;

/** Releases what `socket` holds for `response` (every response when undefined: the socket closed). */
function releaseHeld(socket: HeldSocket, response: ServerResponse | undefined): void {
  const first = socket[RESPONSE];
  if (first !== undefined && (response === undefined || first === response)) {
    const release = socket[RELEASE] as EndRelease;
    socket[RESPONSE] = undefined;
    socket[RELEASE] = undefined;
    release(first.writableFinished);
  }
  const more = socket[MORE];
  if (more === undefined) return;
  const kept = response === undefined ? [] : more.filter((held) => held.response !== response);
  socket[MORE] = kept.length === 0 ? undefined : kept;
  for (const held of more)
    if (response === undefined || held.response === response) held.release(held.response.writableFinished);
}

/** The channel's subscriber: the response of `message` finished on its socket. */
function onFinish(message: unknown): void {
  const { socket, response } = message as { socket: HeldSocket; response: ServerResponse };
  if (socket[RESPONSE] === response) channelState = 1;
  else if (socket[MORE] === undefined) return;
  releaseHeld(socket, response);
}

/**
 * The socket's 'close' listener (`this`: the socket): what it holds is over, finished or not. The
 * responses queued behind a pipelined one never emit 'close' when their socket goes: only this
 * releases them.
 */
function onSocketClose(this: HeldSocket): void {
  releaseHeld(this, undefined);
}

/**
 * The per-response way: one 'close' listener. A response destroyed already is over (its 'close'
 * may have been emitted before this looked, and none would follow): released now.
 */
function releaseOnClose(response: ServerResponse, release: EndRelease): void {
  if (response.destroyed) release(response.writableFinished);
  else response.on("close", () => release(response.writableFinished));
}

/**
 * Calls `release` once when the Node `response` ends: `true` when it finished (sent in full),
 * `false` when it was cut short (the client left, the socket was destroyed, or it had closed
 * already when this was called).
 */
export function releaseWhenResponseEnds(response: ServerResponse, release: EndRelease): void {
  // The request's socket: a pipelined response has none of its own until the one before finishes.
  const socket = response.req?.socket as HeldSocket | null | undefined;
  if (channelState === -1 || socket == null || socket.parser == null || response.destroyed) {
    releaseOnClose(response, release);
    return;
  }
  if (!subscribed) {
    subscribed = true;
    subscribe("http.server.response.finish", onFinish);
  }
  if (!(RESPONSE in socket)) {
    socket[RESPONSE] = undefined;
    socket[RELEASE] = undefined;
    socket[MORE] = undefined;
    socket.on("close", onSocketClose);
  }
  if (socket[RESPONSE] === undefined) {
    socket[RESPONSE] = response;
    socket[RELEASE] = release;
  } else (socket[MORE] ??= []).push({ response, release });
  if (channelState === 0) {
    // Until the channel is seen to fire: the response's own 'close' as well.
    response.on("close", () => {
      if (response.writableFinished && !socket.destroyed && channelState === 0) {
        // Finished with the socket still open, and the channel said nothing: it is silent here.
        if (socket[RESPONSE] === response || socket[MORE]?.some((held) => held.response === response))
          channelState = -1;
      }
      releaseHeld(socket, response);
    });
  }
}

/** Which way the releases go now, for tests: "channel" (verified), "unverified", or "listeners". */
export function releaseMode(): "channel" | "unverified" | "listeners" {
  return channelState === 1 ? "channel" : channelState === 0 ? "unverified" : "listeners";
}
