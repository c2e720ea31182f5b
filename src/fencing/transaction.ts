// What the fenced SQL helpers share: the checked arguments of one write, and running a transaction again
// after the database aborted it for a reason that a new attempt may not meet (serialization, deadlock).

/** One fenced write's arguments, checked (see input.ts). */
export interface FencedWrite {
  readonly resource: string;
  readonly token: bigint;
  readonly table: string;
  /** `READ COMMITTED`, `REPEATABLE READ`, `SERIALIZABLE`, or undefined: the database's default. */
  readonly isolation: string | undefined;
  readonly retries: number;
}

/** Runs `attempt` up to `retries` more times while it fails with an error `retryable` accepts. */
export async function runWithRetries<T>(retries: number, retryable: (error: unknown) => boolean, attempt: () => Promise<T>): Promise<T> {
  for (let left = retries; ; left--) {
    try {
      return await attempt();
    } catch (error) {
      if (left === 0 || !retryable(error)) throw error;
    }
  }
}
