import { InvalidArgumentError, Option, type Command } from 'commander';
import { OBJECT_TYPES } from './detect.js';

/** The options every command takes. */
export interface CommonOptions {
  /** Print one JSON document (or, for `watch`, one JSON line per event) instead of text. */
  json?: boolean;
  /** The Redis URL (`--url`, else `REDIS_URL`, else `redis://localhost:6379`). */
  url: string;
  /** Connect with `createCluster`, `url` being one node of the cluster. */
  cluster?: boolean;
  /** The `keyPrefix` of the `LockClient` that made the objects ('' by default). */
  prefix: string;
}

/** The Redis URL used when neither `--url` nor `REDIS_URL` is given. */
export const DEFAULT_URL = 'redis://localhost:6379';

/** The object types `--type` accepts: every object type, and `latch` for `count-down-latch`. */
const TYPE_CHOICES = [...OBJECT_TYPES, 'latch'];

/** Adds `--json`, `--url`, `--cluster` and `--prefix` to `command`; returns it. */
export function withCommonOptions(command: Command): Command {
  return command
    .option('--json', 'print machine-readable JSON instead of text')
    .addOption(new Option('--url <url>', 'Redis URL').env('REDIS_URL').default(DEFAULT_URL))
    .option('--cluster', 'connect to a Redis Cluster (createCluster), --url being one of its nodes')
    .option('--prefix <prefix>', 'the keyPrefix of the LockClient that created the objects', '');
}

/** The `--type <type>` option, which skips detection (for a name that has no keys yet, e.g. to `watch` it). */
export function typeOption(): Option {
  return new Option('--type <type>', 'the object type, instead of detecting it').choices(TYPE_CHOICES);
}

/** A commander argument parser for a whole number >= `min` (a bad value is a usage error). */
export function wholeNumber(min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min) throw new InvalidArgumentError(`expected a whole number >= ${min}, got "${value}"`);
    return n;
  };
}
