/**
 * At most `limit` of relock's commands in flight on a client that refuses commands past a limit of its
 * own; the others wait for a free slot in arrival order. Valkey GLIDE refuses a request past its
 * `inflightRequestsLimit` (1,000 by default) unsent, with "Reached maximum inflight requests": relock
 * retried such a refusal with its retry policy, so a burst of more calls than that (3,000 tasks on 1,000
 * locks in the benchmark's scenario 7) ended, once the policy's retries ran out, in
 * `RedisUnavailableError` although Redis answered everything. The user's own commands on the same client
 * count against the client's limit too: a refusal they cause is still retried as transient.
 * @internal Not exported from the package.
 */
export class InFlightGate {
  private inFlight = 0;
  /** Callers waiting for a slot, oldest first. */
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  /**
   * Takes a slot: undefined when one was free (taken now), else a promise that resolves once a `leave()`
   * handed one over. Every slot taken must be given back with `leave()` once its command settled.
   */
  enter(): Promise<void> | undefined {
    if (this.inFlight < this.limit) {
      this.inFlight++;
      return undefined;
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Gives a slot back: to the oldest waiter, if any (the count stays), else to the pool. */
  leave(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.inFlight--;
  }
}
