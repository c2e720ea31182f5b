// relock/fencing on the machine's real PostgreSQL (a database of its own per run; see databases.ts).
import { describe, it } from '@jest/globals';
import type { PoolClient } from 'pg';
import { postgresDatabase, postgresInstalled } from './databases.js';
import { fencedSqlContract } from './sql-contract.js';

if (postgresInstalled()) {
  fencedSqlContract('relock/fencing on PostgreSQL', async () => {
    const { name, pool, drop } = await postgresDatabase();
    return {
      pool: pool as never,
      rows: async (sql, values) => (await pool.query(sql, values)).rows as Array<Record<string, unknown>>,
      txQuery: async (tx, sql, values) => void (await (tx as PoolClient).query(sql, values)),
      txRows: async (tx, sql, values) => (await (tx as PoolClient).query(sql, values)).rows as Array<Record<string, unknown>>,
      lockWaits: async () => Number((await pool.query("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'", [name])).rows[0].n),
      upsert: 'INSERT INTO account (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance',
      placeholder: (index) => `$${index}`,
      drop,
    };
  });
} else {
  describe('relock/fencing on PostgreSQL', () => {
    it.skip('skipped: PostgreSQL is not installed on this machine (no /usr/lib/postgresql/*/bin/postgres)', () => {});
  });
}
