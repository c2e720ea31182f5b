import type { Logger } from 'pino';
import { NoSyncedReplicasError } from '../errors.js';
import { keySlot } from '../keys.js';
import type { Executor } from './executor.js';

/**
 * The `syncReplicas` check (Redisson's `checkLockSyncedSlaves` with `slavesSyncTimeout`): after a write
 * that grants something, `WAIT <replicas> <timeout>` on the same connection, so the grant is on at least
 * one replica before the caller is told it holds it. The number of replicas comes from `INFO replication`
 * of the key's primary (`connected_slaves`, cached for 5 s). With no replica there is nothing to wait for.
 * A server that refuses WAIT (unknown command, ACL) is remembered and skipped with one warning. Never
 * WAITAOF: locks need replicas, not fsync.
 */
export class ReplicaSync {
  private readonly replicas = new Map<number, { count: number; at: number }>();
  private unsupported = false;

  constructor(
    private readonly executor: Executor,
    /** Milliseconds WAIT may block. */
    readonly timeoutMs: number,
    private readonly clustered: boolean,
    private readonly log: Logger,
  ) {}

  /**
   * Waits for the replicas of `key`'s primary to acknowledge the writes made so far on this connection.
   * Throws `NoSyncedReplicasError` when there are replicas and none acknowledged within the timeout, and
   * the raw Redis error of a failed INFO or WAIT (retryable ones are retried by the caller's policy).
   */
  async confirm(key: string): Promise<void> {
    if (this.unsupported) return;
    const replicas = await this.replicaCount(key);
    if (replicas === 0) return;
    let acked: number;
    try {
      const reply = await this.executor.attempt(this.executor.connection.sendKeyless(key, ['WAIT', String(replicas), String(this.timeoutMs)]), this.timeoutMs + this.executor.responseTimeout);
      acked = Number(reply);
    } catch (error) {
      if (error instanceof Error && /unknown command|NOPERM|not allowed/i.test(error.message)) {
        this.unsupported = true;
        this.log.warn({ err: error }, 'this Redis refuses WAIT: syncReplicas is off for this client');
        return;
      }
      throw error;
    }
    if (acked > replicas) this.replicas.set(this.slot(key), { count: acked, at: performance.now() });
    if (acked === 0) {
      this.replicas.delete(this.slot(key));
      throw new NoSyncedReplicasError(key, replicas, this.timeoutMs);
    }
  }

  private slot(key: string): number {
    return this.clustered ? keySlot(key) : 0;
  }

  private async replicaCount(key: string): Promise<number> {
    const slot = this.slot(key);
    const cached = this.replicas.get(slot);
    if (cached && performance.now() - cached.at < 5000) return cached.count;
    const info = String(await this.executor.attempt(this.executor.connection.sendKeyless(key, ['INFO', 'replication'])));
    const count = Number(/connected_slaves:(\d+)/.exec(info)?.[1] ?? 0);
    this.replicas.set(slot, { count, at: performance.now() });
    return count;
  }
}
