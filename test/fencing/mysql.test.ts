// relock/fencing on the machine's real MariaDB/MySQL (a database of its own per run; see databases.ts).
import { describe, it } from '@jest/globals';
import type { PoolConnection } from 'mysql2/promise';
import { mysqlDatabase, mysqlInstalled } from './databases.js';
import { fencedSqlContract } from './sql-contract.js';

/** `$1`, `$2`… as `?` (the contract writes PostgreSQL's placeholders; it uses each once, in order). */
const questionMarks = (sql: string): string => sql.replace(/\$\d+/g, '?');

if (mysqlInstalled()) {
  fencedSqlContract('relock/fencing on MariaDB/MySQL', async () => {
    const { name, pool, drop } = await mysqlDatabase();
    return {
      pool: pool as never,
      rows: async (sql, values) => (await pool.query(questionMarks(sql), values))[0] as Array<Record<string, unknown>>,
      txQuery: async (tx, sql, values) => void (await (tx as PoolConnection).query(questionMarks(sql), values)),
      // The transaction's own level (INNODB_TRX: it has written the fence row), not the session's variable,
      // which a one-transaction `SET TRANSACTION ISOLATION LEVEL` leaves as it was.
      txRows: async (tx, sql, values) => (await (tx as PoolConnection).query(questionMarks(sql), values))[0] as Array<Record<string, unknown>>,
      // A session whose fence upsert is running while the other holds the row: it waits on the row lock
      // (MariaDB's INNODB_TRX shows LOCK WAIT only some of the time; the statement shows throughout).
      lockWaits: async () => {
        const [rows] = await pool.query("SELECT count(*) AS n FROM information_schema.PROCESSLIST WHERE DB = ? AND INFO LIKE 'INSERT INTO relock_fences %'", [name]);
        return Number((rows as Array<{ n: number }>)[0].n);
      },
      upsert: 'INSERT INTO account (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE balance = VALUES(balance)',
      placeholder: () => '?',
      drop,
    };
  });
} else {
  describe('relock/fencing on MariaDB/MySQL', () => {
    it.skip('skipped: neither MariaDB nor MySQL is installed on this machine (no /usr/sbin/mariadbd or mysqld)', () => {});
  });
}
