// PostgreSQL (node-postgres, `pg`) fenced writes of `relock/fencing`. The driver is the caller's: these
// functions only call `pool.connect()`, `client.query(text, values)` and `client.release()`.
import { FenceTableMissingError, StaleTokenError } from '../errors.js';
import { FENCE_TABLE, MAX_RESOURCE_LENGTH } from './input.js';
import { runWithRetries, type FencedWrite } from './transaction.js';

/** What the helpers read of a `pg` query result. */
export interface PgResult {
  /** The rows (typed as `pg` types them: `any`, since the type of a query's rows is the caller's to know). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as pg's QueryResult<any>
  rows: any[];
  rowCount: number | null;
  /** The command tag (`COMMIT`, or `ROLLBACK` when PostgreSQL rolled an aborted transaction back instead). */
  command: string;
}

/** Something that runs a query: a `pg.Pool`, a `pg.Client` or a pool's client. */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<PgResult>;
}

/** A client checked out of a pool (`pg.PoolClient`). */
export interface PgPoolClient extends PgQueryable {
  release(destroy?: boolean | Error): void;
}

/** A pool of clients (`pg.Pool`): the fenced transaction checks one out for its transaction. */
export interface PgPool<C extends PgPoolClient = PgPoolClient> {
  connect(): Promise<C>;
}

/** The SQL that creates the fence table `table` on PostgreSQL (what `migrate` runs; idempotent). */
export const postgresFenceTableSql = (table = FENCE_TABLE): string =>
  `CREATE TABLE IF NOT EXISTS ${table} (
  resource text PRIMARY KEY CHECK (char_length(resource) <= ${MAX_RESOURCE_LENGTH}),
  token numeric(20, 0) NOT NULL CHECK (token >= 0)
)`;

/**
 * The fence: inserts the resource's row with `token`, or raises its token to `token` when `token` is
 * greater than or equal to it; the row comes back only when the token was accepted. `INSERT … ON CONFLICT
 * DO UPDATE` takes the row's lock (as `SELECT … FOR UPDATE`) and, under read committed, evaluates the
 * `WHERE` against the newest committed version once a concurrent holder's transaction ended; under
 * repeatable read and serializable that concurrent update aborts it with 40001 instead (then retried).
 */
const advance = (table: string, resource: string, token: string): string =>
  `INSERT INTO ${table} AS relock_f (resource, token) VALUES (${resource}, ${token}::numeric)
ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token WHERE relock_f.token <= EXCLUDED.token
RETURNING 1`;

/** The highest token the table holds for `$1` (the reply of a refused write). */
const highest = (table: string): string => `SELECT token::text AS token FROM ${table} WHERE resource = $1`;

/** The SQLSTATEs after which a transaction is run again: serialization failure, deadlock. */
const RETRYABLE = new Set(['40001', '40P01']);

const sqlState = (error: unknown): string | undefined => (error as { code?: unknown } | null)?.code as string | undefined;

/** The highest token of `resource` as the table holds it now (0 when it has no row). */
async function highestToken(db: PgQueryable, table: string, resource: string): Promise<bigint> {
  const { rows } = await db.query(highest(table), [resource]);
  return BigInt((rows[0] as { token?: string } | undefined)?.token ?? '0');
}

/** Runs the fence query `text`, turning PostgreSQL's undefined_table (42P01) into `FenceTableMissingError`. */
async function fenceQuery(db: PgQueryable, table: string, text: string, values: unknown[]): Promise<PgResult> {
  try {
    return await db.query(text, values);
  } catch (error) {
    if (sqlState(error) === '42P01' && (error as Error).message.includes(table.split('.').pop()!)) throw new FenceTableMissingError(table, { cause: error });
    throw error;
  }
}

/** See `fencedTransaction` in index.ts. */
export function postgresTransaction<C extends PgPoolClient, T>(pool: PgPool<C>, write: FencedWrite, fn: (tx: C) => Promise<T>): Promise<T> {
  const { resource, token, table, isolation } = write;
  return runWithRetries(write.retries, (error) => RETRYABLE.has(sqlState(error) ?? ''), async () => {
    const client = await pool.connect();
    let broken: Error | undefined;
    try {
      await client.query(isolation === undefined ? 'BEGIN' : `BEGIN ISOLATION LEVEL ${isolation}`);
      const fenced = await fenceQuery(client, table, advance(table, '$1', '$2'), [resource, token.toString()]);
      if (fenced.rows.length === 0) throw new StaleTokenError(resource, token, await highestToken(client, table, resource));
      const result = await fn(client);
      const committed = await client.query('COMMIT');
      if (committed.command !== 'COMMIT') throw new Error(`the fenced transaction on "${resource}" was aborted by an earlier error (PostgreSQL answered COMMIT with ${committed.command}); nothing was written`);
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((failed: unknown) => {
        broken = failed instanceof Error ? failed : new Error(String(failed));
      });
      throw error;
    } finally {
      client.release(broken);
    }
  });
}

/** The reply that marks a refused fence inside the statement (cast to an integer, it aborts the statement). */
const STALE_MARK = 'relock: stale fencing token';

/** See `fencedStatement` in index.ts. */
export async function postgresStatement(db: PgQueryable, write: FencedWrite, statement: string, values: readonly unknown[]): Promise<number> {
  const { resource, token, table } = write;
  const n = values.length;
  // One statement, so one implicit transaction: the fence and the caller's statement both happen, or the
  // cast of STALE_MARK fails when the fence refused the token and PostgreSQL undoes both.
  const text = `WITH relock_fence AS (${advance(table, `$${n + 1}`, `$${n + 2}`)}),
relock_write AS (${statement} RETURNING 1)
SELECT (SELECT CASE WHEN count(*) = 0 THEN '${STALE_MARK}' ELSE '1' END FROM relock_fence)::int AS fenced,
(SELECT count(*) FROM relock_write)::int AS changed`;
  try {
    const { rows } = await fenceQuery(db, table, text, [...values, resource, token.toString()]);
    return Number((rows[0] as { changed: number }).changed);
  } catch (error) {
    if (sqlState(error) === '22P02' && (error as Error).message.includes(STALE_MARK)) throw new StaleTokenError(resource, token, await highestToken(db, table, resource));
    throw error;
  }
}

/** See `migrate` in index.ts. */
export async function postgresMigrate(db: PgQueryable, table: string): Promise<void> {
  await db.query(postgresFenceTableSql(table));
}
