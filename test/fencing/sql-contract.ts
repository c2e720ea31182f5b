// What every database's fenced writes must do, run against a real server per database (postgres.test.ts,
// mysql.test.ts). Two transactions are interleaved deterministically: one is held open (its function
// waits on a promise the test resolves) while the other runs, and the test waits until the database shows
// the second one waiting on a row lock before it lets the first one go.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { fencedStatement, fencedTransaction, FenceTableMissingError, InvalidArgumentError, migrate, StaleTokenError, type FencedTransactionOptions } from '../../src/fencing/index.js';
import { waitUntil } from '../support/helpers.js';

/** One database under test, as the contract drives it. */
export interface SqlDatabase {
  /** A `pg.Pool` or a `mysql2/promise` pool (typed loosely: the contract only passes it on). */
  readonly pool: never;
  /** Runs `sql` on the pool (placeholders `$1`…, turned into `?` for MySQL) and resolves to its rows. */
  rows(sql: string, values?: unknown[]): Promise<Array<Record<string, unknown>>>;
  /** Runs `sql` inside a fenced transaction's `tx`. */
  txQuery(tx: unknown, sql: string, values?: unknown[]): Promise<void>;
  /** Runs the query `sql` inside a fenced transaction's `tx` and resolves to its rows. */
  txRows(tx: unknown, sql: string, values?: unknown[]): Promise<Array<Record<string, unknown>>>;
  /** How many sessions of this database wait on a lock now. */
  lockWaits(): Promise<number>;
  /** An upsert of `account` (id, balance) with the placeholders `$1`, `$2`, in this database's dialect. */
  readonly upsert: string;
  /** The statement placeholders: `$1` or `?`. */
  placeholder(index: number): string;
  drop(): Promise<void>;
}

class Deferred {
  resolve!: () => void;
  readonly promise = new Promise<void>((resolve) => (this.resolve = resolve));
}

export function fencedSqlContract(title: string, open: () => Promise<SqlDatabase>): void {
  describe(title, () => {
    let db: SqlDatabase;
    let resourceNo = 0;
    const resource = (): string => `account:${++resourceNo}`;
    beforeAll(async () => {
      db = await open();
      await migrate(db.pool);
      await migrate(db.pool); // idempotent
      await db.rows('CREATE TABLE account (id varchar(64) PRIMARY KEY, balance varchar(64) NOT NULL)');
    });
    afterAll(async () => {
      await db?.drop();
    });

    const highest = async (name: string): Promise<string | undefined> => {
      const rows = await db.rows('SELECT token FROM relock_fences WHERE resource = $1', [name]);
      return rows.length === 0 ? undefined : String(rows[0].token);
    };
    const balance = async (id: string): Promise<string | undefined> => {
      const rows = await db.rows('SELECT balance FROM account WHERE id = $1', [id]);
      return rows.length === 0 ? undefined : String(rows[0].balance);
    };
    const write = (id: string, value: string) => (tx: unknown) =>
      db.txQuery(tx, db.upsert, [id, value]);

    it('accepts increasing and equal tokens, refuses a lower one with StaleTokenError, and rolls its statements back', async () => {
      const name = resource();
      expect(await fencedTransaction(db.pool, name, 5n, async (tx) => (await write(name, 'five')(tx), 'done'))).toBe('done');
      await fencedTransaction(db.pool, name, '5', write(name, 'five again'));
      await fencedTransaction(db.pool, name, 7, write(name, 'seven'));
      const stale = fencedTransaction(db.pool, name, 6n, write(name, 'six'));
      await expect(stale).rejects.toBeInstanceOf(StaleTokenError);
      await expect(stale).rejects.toMatchObject({ code: 'STALE_TOKEN', resource: name, token: 6n, highest: 7n });
      expect(await balance(name)).toBe('seven');
      expect(await highest(name)).toBe('7');
    });

    it('rolls back the fence too when the function throws', async () => {
      const name = resource();
      await expect(fencedTransaction(db.pool, name, 3n, async (tx) => {
        await write(name, 'three')(tx);
        throw new Error('boom');
      })).rejects.toThrow('boom');
      expect(await highest(name)).toBeUndefined();
      expect(await balance(name)).toBeUndefined();
    });

    it('runs at the isolation level it is given: read committed sees a write another session committed meanwhile, repeatable read does not', async () => {
      // Each database's default is the other one (PostgreSQL: read committed; InnoDB: repeatable read), so
      // a level that is not applied shows on one of the two. (MariaDB's INNODB_TRX.TRX_ISOLATION_LEVEL is
      // no witness: on a pooled connection it keeps the first transaction's level; the reads are.)
      const seen: Record<string, unknown[]> = {};
      for (const isolation of ['read committed', 'repeatable read'] as const) {
        const id = `${resource()}:${isolation}`;
        await db.rows(db.upsert, [id, '0']);
        await fencedTransaction(db.pool, resource(), 1n, async (tx) => {
          const read = async (): Promise<unknown> => (await db.txRows(tx, `SELECT balance FROM account WHERE id = ${db.placeholder(1)}`, [id]))[0]?.balance;
          const before = await read();
          await db.rows(db.upsert, [id, '1']); // another session, committed at once
          seen[isolation] = [before, await read()];
        }, { isolation });
      }
      expect(seen).toEqual({ 'read committed': ['0', '1'], 'repeatable read': ['0', '0'] });
    });

    for (const isolation of ['read committed', 'serializable'] as const) {
      const options: FencedTransactionOptions = { isolation };
      it(`${isolation}: 6 holds the fence open, 5 waits on its row lock, then is refused; 6's write stays`, async () => {
        const name = resource();
        const go = new Deferred();
        const entered = new Deferred();
        const six = fencedTransaction(db.pool, name, 6n, async (tx) => {
          await write(name, 'six')(tx);
          entered.resolve();
          await go.promise;
        }, options);
        await entered.promise;
        let ran = false;
        const five = fencedTransaction(db.pool, name, 5n, async (tx) => {
          ran = true;
          await write(name, 'five')(tx);
        }, options);
        const refused = expect(five).rejects.toMatchObject({ code: 'STALE_TOKEN', token: 5n, highest: 6n });
        await waitUntil(async () => (await db.lockWaits()) >= 1, 5000, 10, '5 to wait on the fence row lock');
        go.resolve();
        await six;
        await refused;
        expect(ran).toBe(false);
        expect(await balance(name)).toBe('six');
        expect(await highest(name)).toBe('6');
      });

      it(`${isolation}: 5 holds the fence open, 6 waits on its row lock, then writes after 5 commits`, async () => {
        const name = resource();
        const go = new Deferred();
        const entered = new Deferred();
        const five = fencedTransaction(db.pool, name, 5n, async (tx) => {
          await write(name, 'five')(tx);
          entered.resolve();
          await go.promise;
        }, options);
        await entered.promise;
        const six = fencedTransaction(db.pool, name, 6n, write(name, 'six'), options);
        await waitUntil(async () => (await db.lockWaits()) >= 1, 5000, 10, '6 to wait on the fence row lock');
        go.resolve();
        await five; // 5 held the lock then: its write was not stale
        await six;
        expect(await balance(name)).toBe('six');
        expect(await highest(name)).toBe('6');
        await expect(fencedTransaction(db.pool, name, 5n, write(name, 'five late'), options)).rejects.toBeInstanceOf(StaleTokenError);
        expect(await balance(name)).toBe('six');
      });
    }

    it('fencedStatement: writes with a current token, refuses a stale one with nothing written', async () => {
      const name = resource();
      const [a, b] = [db.placeholder(1), db.placeholder(2)];
      await db.rows('INSERT INTO account (id, balance) VALUES ($1, $2)', [name, 'initial']);
      expect(await fencedStatement(db.pool, name, 10n, `UPDATE account SET balance = ${a} WHERE id = ${b}`, ['ten', name])).toBe(1);
      expect(await fencedStatement(db.pool, name, 10n, `UPDATE account SET balance = ${a} WHERE id = ${b};`, ['ten again', name])).toBe(1);
      expect(await fencedStatement(db.pool, name, 11n, `UPDATE account SET balance = ${a} WHERE id = ${b}`, ['eleven', 'no such id'])).toBe(0);
      expect(await highest(name)).toBe('11');
      await expect(fencedStatement(db.pool, name, 10n, `UPDATE account SET balance = ${a} WHERE id = ${b}`, ['stale', name])).rejects.toMatchObject({ code: 'STALE_TOKEN', token: 10n, highest: 11n });
      expect(await balance(name)).toBe('ten again');
      await expect(fencedStatement(db.pool, name, 12n, 'SELECT 1')).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(fencedStatement(db.pool, name, 12n, `DELETE FROM account WHERE id = ${a} RETURNING id`, [name])).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(fencedStatement(db.pool, name, 12n, `UPDATE account SET balance = ${a} WHERE id = ${b}`, name as never)).rejects.toMatchObject({ name: 'InvalidArgumentError', argument: 'values' });
      expect(await highest(name)).toBe('11');
    });

    it('refuses a token that is not bigint-compatible, with nothing sent or written', async () => {
      const name = resource();
      let ran = 0;
      for (const token of [1.5, -1, -1n, 2n ** 63n, '12a', '', ' 7', '1e3', Number.MAX_SAFE_INTEGER + 2, NaN, null, undefined, {}]) {
        const attempt = fencedTransaction(db.pool, name, token as never, async () => void ran++);
        await expect(attempt).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(attempt).rejects.toMatchObject({ argument: 'token' });
        await expect(fencedStatement(db.pool, name, token as never, `DELETE FROM account WHERE id = ${db.placeholder(1)}`, [name])).rejects.toMatchObject({ argument: 'token' });
      }
      expect(ran).toBe(0);
      expect(await highest(name)).toBeUndefined();
      await fencedTransaction(db.pool, name, 2n ** 63n - 1n, async () => {});
      expect(await highest(name)).toBe(String(2n ** 63n - 1n));
    });

    it('refuses a pool that is not one and a function that is not one, naming each, with nothing written', async () => {
      const name = resource();
      for (const [pool, got] of [[null, 'got null'], [undefined, 'got undefined'], ['postgres://x', 'got string']] as const) {
        const error = { code: 'INVALID_ARGUMENT', argument: 'pool', message: expect.stringContaining(got) as unknown };
        await expect(fencedTransaction(pool as never, name, 1n, async () => {})).rejects.toMatchObject(error);
        await expect(fencedStatement(pool as never, name, 1n, `DELETE FROM account WHERE id = ${db.placeholder(1)}`, [name])).rejects.toMatchObject(error);
      }
      await expect(fencedTransaction(db.pool, name, 1n, 'not a function' as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', argument: 'fn', message: expect.stringContaining('got string') as unknown });
      expect(await highest(name)).toBeUndefined();
    });

    it('refuses a resource name over 255 characters and accepts 255 multi-byte ones; nothing written', async () => {
      const long = 'r'.repeat(256);
      await expect(fencedTransaction(db.pool, long, 1n, async () => {})).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', argument: 'resource', message: expect.stringContaining("is 256 characters long; the fence table's resource column holds at most 255") as unknown });
      await expect(fencedTransaction(db.pool, '', 1n, async () => {})).rejects.toMatchObject({ argument: 'resource', message: expect.stringContaining('must be a non-empty string; got an empty string') as unknown });
      expect(await db.rows('SELECT resource FROM relock_fences WHERE resource = $1', [long])).toEqual([]);
      const wide = '🔒'.repeat(255);
      await fencedTransaction(db.pool, wide, 1n, async () => {});
      expect(await highest(wide)).toBe('1');
    });

    it('a missing fence table: FenceTableMissingError, the function not run, nothing written', async () => {
      const name = resource();
      let ran = false;
      const attempt = fencedTransaction(db.pool, name, 1n, async (tx) => {
        ran = true;
        await write(name, 'one')(tx);
      }, { table: 'no_such_fences' });
      await expect(attempt).rejects.toBeInstanceOf(FenceTableMissingError);
      await expect(attempt).rejects.toMatchObject({ code: 'FENCE_TABLE_MISSING', table: 'no_such_fences', message: expect.stringMatching(/^fence table no_such_fences does not exist: create it with migrate\(pool\)/) as unknown });
      await expect(fencedStatement(db.pool, name, 1n, `DELETE FROM account WHERE id = ${db.placeholder(1)}`, [name], { table: 'no_such_fences' })).rejects.toBeInstanceOf(FenceTableMissingError);
      expect(ran).toBe(false);
      expect(await balance(name)).toBeUndefined();
      await expect(fencedTransaction(db.pool, name, 1n, async () => {}, { table: 'x; DROP TABLE account' })).rejects.toMatchObject({ argument: 'options.table' });
      await expect(fencedTransaction(db.pool, name, 1n, async () => {}, { isolation: 'chaos' as never })).rejects.toMatchObject({ argument: 'options.isolation' });
    });
  });
}
