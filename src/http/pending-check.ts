/**
 * The request whose check is in its synchronous part. A check on the in-process store
 * continues before it returns, so the engine's one continuation reads the request from here
 * instead of closing over it: no closure (and context) per request. A check that continues
 * later (a store round trip) finds it inactive and is finished by a closure made only then.
 */
export class PendingCheck {
  /** True from `begin` until the continuation ran or the check returned. */
  active = false;
  request: unknown = undefined;
  shown = "";
  stored = "";
  cost = 0;
  shape: object | undefined = undefined;

  /** Marks the start of a check's synchronous part. */
  begin(request: unknown, shown: string, stored: string, cost: number, shape: object | undefined): void {
    this.active = true;
    this.request = request;
    this.shown = shown;
    this.stored = stored;
    this.cost = cost;
    this.shape = shape;
  }

  /** Marks its end, and lets go of the request. */
  end(): void {
    this.active = false;
    this.request = undefined;
    this.shape = undefined;
  }
}
