import type { OptionSpec } from './args.js';
import { OBJECT_DESCRIPTORS } from '../client.js';
import { forcedType, OBJECT_TYPES, type ObjectType } from './detect.js';

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

/** The object types `--type` accepts: every object type, and the aliases (`latch` for `count-down-latch`). */
const TYPE_CHOICES = [...OBJECT_TYPES, ...OBJECT_DESCRIPTORS.flatMap((d) => d.aliases ?? [])];

/** `--json`, `--url`, `--cluster` and `--prefix`, which every command takes first. */
export const COMMON_OPTIONS: readonly OptionSpec[] = [
  { flags: '--json', description: 'print machine-readable JSON instead of text' },
  { flags: '--url <url>', description: 'Redis URL', env: 'REDIS_URL', default: DEFAULT_URL },
  { flags: '--cluster', description: 'connect to a Redis Cluster (createCluster), --url being one of its nodes' },
  { flags: '--prefix <prefix>', description: 'the keyPrefix of the LockClient that created the objects', default: '' },
];

/** The `--type <type>` option, which skips detection (for a name that has no keys yet, e.g. to `watch` it). */
export const TYPE_OPTION: OptionSpec = { flags: '--type <type>', description: 'the object type, instead of detecting it', choices: TYPE_CHOICES };

/** An option value parser for a whole number >= `min` (a bad value is a usage error). */
export function wholeNumber(min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min) throw new Error(`expected a whole number >= ${min}, got "${value}"`);
    return n;
  };
}

/**
 * `--type a,b` of `list` and `top`. An integer string nobody waits on shows no more than an RSemaphore
 * would, so it is listed as a semaphore only when `semaphore` is named here.
 */
export const TYPES_OPTION: OptionSpec = {
  flags: '--type <types>',
  description: 'only these types (comma-separated, as inspect names them); integer keys nobody waits on are listed as semaphores only when semaphore is named',
  parse: typeList,
};

/** `--type a,b`: known object types (`latch` for `count-down-latch`), else a usage error. */
function typeList(value: string): ObjectType[] {
  const types = value.split(',').map((t) => forcedType(t.trim())!);
  const unknown = types.filter((t) => !(OBJECT_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0) throw new Error(`unknown type ${unknown.join(', ')}; use ${OBJECT_TYPES.join(', ')}`);
  return types;
}
