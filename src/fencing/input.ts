// The arguments every fenced write checks before it sends anything: the token, the resource name and the
// fence table's name. A leaf of `relock/fencing` (and of the Redis fenced resource, for the token).
import { InvalidArgumentError } from '../errors.js';

/** The highest token relock can hand out: Redis `INCR` counts in signed 64-bit integers. */
export const MAX_TOKEN = 2n ** 63n - 1n;

/**
 * The longest resource name, in characters (Unicode code points): the fence table's `resource` column is
 * `varchar(255)` on MariaDB/MySQL (an InnoDB primary key of utf8mb4 fits 3072 bytes) and `text` with a
 * `CHECK (char_length(resource) <= 255)` on PostgreSQL, so that one name is valid on both.
 */
export const MAX_RESOURCE_LENGTH = 255;

/** A fencing token as relock's fenced locks hand it out: a `bigint`, a safe integer or a string of digits. */
export type FencingToken = bigint | number | string;

/**
 * `token` as a bigint in 0..2^63-1 (the range of the Redis counter, of PostgreSQL's `bigint` and MySQL's
 * `BIGINT`). Throws `InvalidArgumentError('token')` for anything else: a fraction, a negative, an unsafe
 * `number` (it may already have lost digits), a string that is not plain decimal digits, or a larger value.
 */
export function fencingToken(token: unknown): bigint {
  let value: bigint | undefined;
  if (typeof token === 'bigint') value = token;
  else if (typeof token === 'number' && Number.isSafeInteger(token)) value = BigInt(token);
  else if (typeof token === 'string' && /^\d{1,19}$/.test(token)) value = BigInt(token);
  if (value === undefined || value < 0n || value > MAX_TOKEN) {
    const shown = typeof token === 'string' || typeof token === 'number' || typeof token === 'bigint' ? `${typeof token} ${JSON.stringify(String(token))}` : typeof token;
    throw new InvalidArgumentError('token', `must be a whole number from 0 to 2^63-1 (a bigint, a safe integer or a string of digits), as a fenced lock hands out; got ${shown}`);
  }
  return value;
}

/** `resource` checked: a non-empty string of at most `MAX_RESOURCE_LENGTH` characters. Throws `InvalidArgumentError('resource')`. */
export function fencedResource(resource: unknown): string {
  if (typeof resource !== 'string' || resource.length === 0) {
    throw new InvalidArgumentError('resource', `must be a non-empty string; got ${resource === '' ? 'an empty string' : typeof resource}`);
  }
  const length = [...resource].length;
  if (length > MAX_RESOURCE_LENGTH) {
    throw new InvalidArgumentError('resource', `is ${length} characters long; the fence table's resource column holds at most ${MAX_RESOURCE_LENGTH}`);
  }
  return resource;
}

/** The default fence table. */
export const FENCE_TABLE = 'relock_fences';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/;

/**
 * `table` checked: `name` or `schema.name`, each an unquoted SQL identifier (letters, digits, `_`, at most
 * 63 characters), since it is written into the SQL text. Throws `InvalidArgumentError('options.table')`.
 */
export function fenceTable(table: unknown = FENCE_TABLE): string {
  if (typeof table !== 'string' || !IDENTIFIER.test(table)) {
    throw new InvalidArgumentError('options.table', `must be an unquoted SQL identifier, optionally schema-qualified (letters, digits and _); got ${typeof table === 'string' ? JSON.stringify(table) : typeof table}`);
  }
  return table;
}

/** How many times a transaction is run again after a serialization failure or a deadlock, unless `options.retries` says. */
export const DEFAULT_RETRIES = 5;

/** `retries` checked: a whole number from 0 to 100. Throws `InvalidArgumentError('options.retries')`. */
export function retryCount(retries: unknown = DEFAULT_RETRIES): number {
  if (typeof retries !== 'number' || !Number.isInteger(retries) || retries < 0 || retries > 100) {
    throw new InvalidArgumentError('options.retries', `must be a whole number from 0 to 100; got ${String(retries)}`);
  }
  return retries;
}

/** Options of every fenced SQL helper. */
export interface FenceOptions {
  /** The fence table, `name` or `schema.name` (default `relock_fences`). */
  table?: string;
}

/** Options of the fenced transactions. */
export interface FencedTransactionOptions extends FenceOptions {
  /**
   * The isolation level of the transaction (default: the database's, read committed on PostgreSQL,
   * repeatable read on MariaDB/MySQL). The fence holds at every level.
   */
  isolation?: 'read committed' | 'repeatable read' | 'serializable';
  /**
   * How many times the whole transaction (your function included) is run again when the database aborts it
   * with a serialization failure (PostgreSQL 40001, which serializable and repeatable read raise when a newer
   * holder's transaction advanced the fence concurrently) or a deadlock (PostgreSQL 40P01, MySQL 1213).
   * Default 5. Your function must therefore be safe to run again: keep side effects outside the database
   * after the transaction.
   */
  retries?: number;
}

const ISOLATIONS = new Set(['read committed', 'repeatable read', 'serializable']);

/** `isolation` checked (undefined: the database's default). Throws `InvalidArgumentError('options.isolation')`. */
export function isolationLevel(isolation: unknown): string | undefined {
  if (isolation === undefined) return undefined;
  if (typeof isolation !== 'string' || !ISOLATIONS.has(isolation)) {
    throw new InvalidArgumentError('options.isolation', `must be 'read committed', 'repeatable read' or 'serializable'; got ${typeof isolation === 'string' ? JSON.stringify(isolation) : typeof isolation}`);
  }
  return isolation.toUpperCase();
}
