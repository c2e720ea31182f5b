// MariaDB/MySQL (`mysql2/promise`) fenced writes of `relock/fencing`. The driver is the caller's: these
// functions only call `pool.getConnection()`, `connection.query(sql, values)` and `connection.release()`.
import { FenceTableMissingError, StaleTokenError } from '../errors.js';
import { FENCE_TABLE, MAX_RESOURCE_LENGTH } from './input.js';
import { runWithRetries, type FencedWrite } from './transaction.js';

/** Something that runs a query the `mysql2/promise` way: a pool or a connection; resolves to `[result, fields]`. */
export interface MysqlQueryable {
  query(sql: string, values?: unknown): Promise<[unknown, unknown]>;
}

/** A connection checked out of a `mysql2/promise` pool. */
export interface MysqlPoolConnection extends MysqlQueryable {
  release(): void;
}

/** A `mysql2/promise` pool (`mysql.createPool(…)` from `mysql2/promise`, or `pool.promise()`). */
export interface MysqlPool<C extends MysqlPoolConnection = MysqlPoolConnection> extends MysqlQueryable {
  getConnection(): Promise<C>;
}

/** The SQL that creates the fence table `table` on MariaDB/MySQL (what `migrate` runs; idempotent). */
export const mysqlFenceTableSql = (table = FENCE_TABLE): string =>
  `CREATE TABLE IF NOT EXISTS ${table} (
  resource VARCHAR(${MAX_RESOURCE_LENGTH}) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
  token BIGINT NOT NULL CHECK (token >= 0)
) ENGINE = InnoDB`;

/** MySQL error numbers after which a transaction is run again: deadlock (1213), and SQLSTATE 40001. */
const retryable = (error: unknown): boolean => {
  const e = error as { errno?: unknown; sqlState?: unknown } | null;
  return e?.errno === 1213 || e?.sqlState === '40001';
};

/**
 * The fence, in a transaction: the upsert takes the row's exclusive lock (next-key lock on a new row) and
 * raises the token to `token` when `token` is not lower (`GREATEST`); the locking read then returns the
 * row's token, which is `token` exactly when it was accepted. A concurrent holder waits on the row lock
 * until this transaction ends, then reads the newest committed token.
 */
async function advance(connection: MysqlQueryable, write: FencedWrite): Promise<void> {
  const { table, resource, token } = write;
  try {
    await connection.query(`INSERT INTO ${table} (resource, token) VALUES (?, ?) ON DUPLICATE KEY UPDATE token = GREATEST(token, VALUES(token))`, [resource, token.toString()]);
  } catch (error) {
    if ((error as { errno?: unknown }).errno === 1146) throw new FenceTableMissingError(table, { cause: error });
    throw error;
  }
  const [rows] = await connection.query(`SELECT CAST(token AS CHAR) AS token FROM ${table} WHERE resource = ? FOR UPDATE`, [resource]);
  const highest = BigInt((rows as Array<{ token: string }>)[0].token);
  if (highest !== token) throw new StaleTokenError(resource, token, highest);
}

/** See `fencedTransaction` in index.ts. */
export function mysqlTransaction<C extends MysqlPoolConnection, T>(pool: MysqlPool<C>, write: FencedWrite, fn: (tx: C) => Promise<T>): Promise<T> {
  return runWithRetries(write.retries, retryable, async () => {
    const connection = await pool.getConnection();
    try {
      if (write.isolation !== undefined) await connection.query(`SET TRANSACTION ISOLATION LEVEL ${write.isolation}`);
      await connection.query('START TRANSACTION');
      try {
        await advance(connection, write);
        const result = await fn(connection);
        await connection.query('COMMIT');
        return result;
      } catch (error) {
        await connection.query('ROLLBACK').catch(() => {});
        throw error;
      }
    } finally {
      connection.release();
    }
  });
}

/** See `fencedStatement` in index.ts: on MySQL a short transaction (it has no data-modifying `WITH`). */
export function mysqlStatement(pool: MysqlPool, write: FencedWrite, statement: string, values: readonly unknown[]): Promise<number> {
  return mysqlTransaction(pool, write, async (tx) => {
    const [result] = await tx.query(statement, values);
    return Number((result as { affectedRows?: number }).affectedRows ?? 0);
  });
}

/** See `migrate` in index.ts. */
export async function mysqlMigrate(db: MysqlQueryable, table: string): Promise<void> {
  await db.query(mysqlFenceTableSql(table));
}
