import type { Logger } from 'pino';
import { auxName } from '../keys.js';
import { newId, outsideContexts } from '../context.js';
import type { Executor } from './executor.js';
import { keySlot } from '../keys.js';

/**
 * Unlock latches (Redisson's `unlock_latch`): each unlock call gets a request id, and its script stores
 * its answer under `relock:unlock:{name}:<id>` so that a retry of the same call after a lost reply
 * replays the first answer instead of failing as "not the owner". A latch is needed only while its call
 * is running: when the call returns, it is deleted in a batch (one UNLINK per slot every 50 ms), and its
 * TTL removes it if this process dies first. A hash lock's unlock with a hold-count guard stores only a
 * "not held" answer (see `unlockSource`): its caller releases the latch only when one may exist.
 */
export class UnlockLatches {
  private readonly done = new Map<number, string[]>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  /** `ttlMs` as a script argument. */
  readonly ttlArg: string;

  constructor(
    /** The client's id, which makes request ids unique across clients. */
    private readonly clientId: string,
    private readonly executor: Executor,
    private readonly keyPrefix: string,
    /** TTL of a latch in milliseconds: longer than the whole retry policy of one unlock. */
    readonly ttlMs: number,
    private readonly clustered: boolean,
    private readonly log: Logger,
  ) {
    this.ttlArg = String(ttlMs);
  }

  /** The part of latch keys that is the same for every unlock of the object whose main key is `key`. */
  prefix(key: string): string {
    return `${auxName(this.keyPrefix, 'unlock', key)}:${this.clientId}:`;
  }

  /** A fresh latch key for one unlock call; `prefix` from `prefix(key)`. */
  next(prefix: string): string {
    return prefix + newId();
  }

  /** The unlock call that used `latch` returned: delete the latch soon. */
  release(latch: string): void {
    const slot = this.clustered ? keySlot(latch) : 0;
    const keys = this.done.get(slot);
    if (keys) keys.push(latch);
    else this.done.set(slot, [latch]);
    if (!this.timer) {
      this.timer = outsideContexts(() => setTimeout(() => void this.flush(), 50));
      this.timer.unref();
    }
  }

  /** Deletes the latches of finished calls now. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batches = [...this.done.values()];
    this.done.clear();
    const run = Promise.all(
      batches.map((keys) =>
        this.executor.attempt(this.executor.connection.send(keys[0], ['UNLINK', ...keys])).catch((error: unknown) => {
          this.log.debug({ err: error, latches: keys.length }, 'could not delete unlock latches; their TTL will');
        }),
      ),
    ).then(() => {});
    this.flushing = this.flushing.then(() => run);
    return this.flushing;
  }
}
