/**
 * `relock/fencing`: fenced writes that the database itself checks, for PostgreSQL (`pg`) and
 * MariaDB/MySQL (`mysql2/promise`). The driver is yours (an optional peer dependency of relock); pass its
 * pool, and the fencing token your fenced lock handed you (`getFencedLock(name).lockAndGetToken()`).
 *
 * Every resource has a row in the fence table (`relock_fences`: `resource` → highest `token` accepted);
 * a write advances it in the same transaction as your statements, and only with a token greater than or
 * equal to the highest (equal: the same holder writing again). A lower token, a holder whose lease ran
 * out while a newer holder wrote, is refused with `StaleTokenError` and nothing is written. See
 * docs/fencing.md for the SQL, the locks taken and the timeline of a paused holder.
 *
 * @module
 */
import { InvalidArgumentError } from '../errors.js';
import { fencedResource, fenceTable, fencingToken, isolationLevel, retryCount, type FencedTransactionOptions, type FenceOptions, type FencingToken } from './input.js';
import { mysqlMigrate, mysqlStatement, mysqlTransaction, type MysqlPool, type MysqlPoolConnection, type MysqlQueryable } from './mysql.js';
import { postgresMigrate, postgresStatement, postgresTransaction, type PgPool, type PgPoolClient, type PgQueryable } from './postgres.js';
import type { FencedWrite } from './transaction.js';

export { FenceTableMissingError, InvalidArgumentError, StaleTokenError } from '../errors.js';
export { FENCE_TABLE, MAX_RESOURCE_LENGTH, MAX_TOKEN, type FencedTransactionOptions, type FenceOptions, type FencingToken } from './input.js';
export { mysqlFenceTableSql, type MysqlPool, type MysqlPoolConnection, type MysqlQueryable } from './mysql.js';
export { postgresFenceTableSql, type PgPool, type PgPoolClient, type PgQueryable, type PgResult } from './postgres.js';

const isMysql = (db: object): db is MysqlPool => typeof (db as Partial<MysqlPool>).getConnection === 'function';

/** Checks every argument before anything is sent (throws `InvalidArgumentError` naming the first at fault). */
function checked(db: unknown, resource: unknown, token: unknown, options: FencedTransactionOptions = {}): FencedWrite {
  if (typeof db !== 'object' || db === null) throw new InvalidArgumentError('pool', `must be a pg Pool or a mysql2/promise Pool; got ${db === null ? 'null' : typeof db}`);
  return {
    resource: fencedResource(resource),
    token: fencingToken(token),
    table: fenceTable(options.table),
    isolation: isolationLevel(options.isolation),
    retries: retryCount(options.retries),
  };
}

/**
 * Runs `fn` in a transaction fenced by `token` on `resource`: first the fence advances the resource's
 * highest token to `token` if `token` is greater than or equal to it, then `fn(tx)` runs its statements on
 * the same connection, then the transaction commits. The fence row stays locked until the commit, so a
 * concurrent holder's fenced transaction on the same resource waits for it.
 *
 * PostgreSQL (`pg.Pool`): `INSERT … ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token WHERE
 * relock_fences.token <= EXCLUDED.token RETURNING 1`. MariaDB/MySQL (`mysql2/promise` pool): `INSERT … ON
 * DUPLICATE KEY UPDATE token = GREATEST(token, VALUES(token))`, then `SELECT token … FOR UPDATE`.
 *
 * Resolves to what `fn` resolved to. A serialization failure or deadlock runs the whole transaction
 * again, `fn` included (`options.retries`, default 5). Throws, with the transaction rolled back:
 * `StaleTokenError` (the resource already accepted a higher token), `FenceTableMissingError` (run
 * `migrate`), `InvalidArgumentError` (token not a whole number in 0..2^63-1, resource empty or over 255
 * characters, bad option; nothing sent), or whatever `fn` or the driver threw.
 */
export function fencedTransaction<C extends PgPoolClient, T>(pool: PgPool<C>, resource: string, token: FencingToken, fn: (tx: C) => Promise<T>, options?: FencedTransactionOptions): Promise<T>;
export function fencedTransaction<C extends MysqlPoolConnection, T>(pool: MysqlPool<C>, resource: string, token: FencingToken, fn: (tx: C) => Promise<T>, options?: FencedTransactionOptions): Promise<T>;
export async function fencedTransaction<T>(pool: PgPool | MysqlPool, resource: string, token: FencingToken, fn: (tx: never) => Promise<T>, options?: FencedTransactionOptions): Promise<T> {
  const write = checked(pool, resource, token, options);
  if (typeof fn !== 'function') throw new InvalidArgumentError('fn', `must be an async function of the transaction; got ${typeof fn}`);
  return isMysql(pool) ? mysqlTransaction(pool, write, fn as (tx: MysqlPoolConnection) => Promise<T>) : postgresTransaction(pool, write, fn as (tx: PgPoolClient) => Promise<T>);
}

/**
 * One fenced write: `statement` (an `INSERT`, `UPDATE` or `DELETE` with the driver's placeholders, `$1…`
 * for `pg`, `?` for `mysql2`, and no `RETURNING`) runs only if the fence accepts `token` for `resource`.
 * Resolves to the number of rows the statement changed (0 when its `WHERE` matched none: the fence still
 * advanced). Throws as `fencedTransaction`, with nothing written.
 *
 * PostgreSQL: one statement, one round trip, its own implicit transaction (or part of yours, when `db` is
 * a client inside a transaction): `WITH relock_fence AS (INSERT … ON CONFLICT … RETURNING 1), relock_write
 * AS (<statement> RETURNING 1) SELECT …`, where the `SELECT` fails the whole statement when the fence
 * refused. MariaDB/MySQL, which have no data-modifying `WITH`: a short `fencedTransaction` (four round
 * trips), so `db` must be a pool.
 */
export async function fencedStatement(db: PgQueryable | MysqlPool, resource: string, token: FencingToken, statement: string, values: readonly unknown[] = [], options?: FenceOptions): Promise<number> {
  const write = checked(db, resource, token, options);
  const text = typeof statement === 'string' ? statement.trim().replace(/;$/, '') : '';
  if (!/^(insert|update|delete)\b/i.test(text) || /\breturning\b/i.test(text)) {
    throw new InvalidArgumentError('statement', 'must be one INSERT, UPDATE or DELETE without RETURNING (use fencedTransaction for more)');
  }
  if (!Array.isArray(values)) throw new InvalidArgumentError('values', `must be an array; got ${typeof values}`);
  return isMysql(db) ? mysqlStatement(db, write, text, values) : postgresStatement(db, write, text, values);
}

/**
 * Creates the fence table if it does not exist (`CREATE TABLE IF NOT EXISTS relock_fences …`, the SQL of
 * `postgresFenceTableSql` or `mysqlFenceTableSql`; or give your migration tool that SQL instead).
 * `options.table` names another table (`name` or `schema.name`). Throws `InvalidArgumentError`, or the
 * driver's error (permission denied, say).
 */
export async function migrate(db: PgQueryable | MysqlQueryable, options: FenceOptions = {}): Promise<void> {
  const table = fenceTable(options.table);
  if (typeof db !== 'object' || db === null) throw new InvalidArgumentError('db', 'must be a pg Pool or Client, or a mysql2/promise pool or connection');
  // A mysql2 connection has `execute`, which a pg one lacks.
  if (isMysql(db) || typeof (db as { execute?: unknown }).execute === 'function') await mysqlMigrate(db as MysqlQueryable, table);
  else await postgresMigrate(db as PgQueryable, table);
}
