// Type-checked against the built package (not run): relock/fencing with the user's own pg and mysql2 pools.
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createLockClient } from 'relock';
import {
  FENCE_TABLE, FenceTableMissingError, fencedStatement, fencedTransaction, MAX_TOKEN, migrate, mysqlFenceTableSql, postgresFenceTableSql, StaleTokenError,
  type FencedTransactionOptions, type FencingToken,
} from 'relock/fencing';

const locks = createLockClient({ url: 'redis://localhost:6379' });
const pool = new pg.Pool({ host: '127.0.0.1' });
const maria = mysql.createPool({ host: '127.0.0.1', user: 'root' });

export async function pay(order: string): Promise<number> {
  await migrate(pool);
  await migrate(maria, { table: 'app.relock_fences' });
  const handle = await locks.getFencedLock(`order:${order}`).acquire();
  const token: FencingToken = handle.token!;
  const options: FencedTransactionOptions = { isolation: 'serializable', retries: 3 };
  try {
    // The transaction's client is the pool's own client type: pg.PoolClient, then mysql2's PoolConnection.
    const paid: boolean = await fencedTransaction(pool, `order:${order}`, token, async (tx: pg.PoolClient) => {
      const { rowCount } = await tx.query('UPDATE orders SET paid = true WHERE id = $1', [order]);
      return rowCount === 1;
    }, options);
    const mirrored: number = await fencedTransaction(maria, `order:${order}`, token, async (tx: mysql.PoolConnection) => {
      const [result] = await tx.execute<mysql.ResultSetHeader>('UPDATE orders SET paid = 1 WHERE id = ?', [order]);
      return result.affectedRows;
    });
    const changed: number = await fencedStatement(pool, `order:${order}`, token, 'UPDATE orders SET paid = $2 WHERE id = $1', [order, paid]);
    return changed + mirrored;
  } catch (error) {
    if (error instanceof StaleTokenError) {
      const seen: bigint = error.highest;
      return Number(seen > MAX_TOKEN ? 0n : error.token);
    }
    if (error instanceof FenceTableMissingError) return error.table === FENCE_TABLE ? -1 : -2;
    throw error;
  } finally {
    await handle.release();
  }
}

const sql: string = postgresFenceTableSql() + mysqlFenceTableSql('fences');
void sql;
// @ts-expect-error the token is a bigint, a safe integer or a string of digits
void fencedStatement(pool, 'r', { token: 1 }, 'DELETE FROM t');
// @ts-expect-error the transaction's function gets the pool's client, not a mysql2 connection
void fencedTransaction(pool, 'r', 1n, async (tx: mysql.PoolConnection) => tx.execute('SELECT 1'));
