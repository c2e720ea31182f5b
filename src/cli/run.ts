import { commandError, connect, type Target } from './connect.js';
import type { Detection, ObjectKeys } from './detect.js';
import { CliError, EXIT } from './errors.js';
import type { CommonOptions } from './options.js';

/**
 * Connects, runs `body` and closes every connection, whatever happens. Resolves to the exit code `body`
 * returned; rejects with a `CliError` (a Redis or node-redis error becomes one naming the URL).
 */
export async function withTarget(options: CommonOptions, body: (target: Target) => Promise<number>): Promise<number> {
  const target = await connect(options);
  try {
    return await body(target);
  } catch (error) {
    throw commandError(error, options);
  } finally {
    await target.close();
  }
}

/** The error (exit code 3) for a name whose keys show no relock object. */
export function notFoundError(keys: ObjectKeys, detection: Exclude<Detection, { found: 'object' }>): CliError {
  const message =
    detection.found === 'nothing'
      ? `no relock object "${keys.name}": neither ${keys.main} nor any other relock key of it exists, and nobody waits on its channels (an unheld lock, an open latch and a semaphore that was never given permits have no keys; check --prefix)`
      : `"${keys.name}" is not a relock object: ${detection.reason}`;
  return new CliError(message, EXIT.notFound);
}
