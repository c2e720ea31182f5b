/**
 * The PostgreSQL side of the `postgres-fenced-writes` scenario: a database of its own per run (on the
 * machine's PostgreSQL, PGHOST/PGPORT/PGUSER/PGPASSWORD, default 127.0.0.1:5432 as in CI; see
 * test/fencing/databases.ts), the fence table of `relock/fencing` (`migrate`) and a history table, and
 * the worker's writer. Every write a holder makes goes through relock's helper (alternately the
 * single-statement form, `fencedStatement`, and `fencedTransaction`) and inserts one row into the history
 * table, so the table holds exactly the writes the fence accepted, in the order PostgreSQL applied them:
 * each accepted write holds the fence row's lock from its fence to its commit, so ids (a sequence, taken
 * at the insert) follow the commit order.
 */
import pg from 'pg';
import { fencedStatement, fencedTransaction, migrate, StaleTokenError } from '../../src/fencing/index.js';
import { pgConfig, postgresDatabase } from '../../test/fencing/databases.js';
import type { OracleOp } from './oracle.js';

/** The history table: one row per write the fence accepted. `t`: the writer's hrtime ms when it sent the write. */
const HISTORY_SQL = `CREATE TABLE fault_writes (
  id bigserial PRIMARY KEY, sec text NOT NULL, w text NOT NULL, tok bigint NOT NULL, t double precision NOT NULL, form text NOT NULL
)`;
const INSERT = 'INSERT INTO fault_writes (sec, w, tok, t, form) VALUES ($1, $2, $3, $4, $5)';

/**
 * Why PostgreSQL cannot be used (connection refused, authentication failed), or undefined when a client
 * connects and answers `SELECT 1` within 3 s.
 */
export async function postgresUnreachable(): Promise<string | undefined> {
  const config = pgConfig('postgres');
  const client = new pg.Client({ ...config, connectionTimeoutMillis: 3000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return `PostgreSQL is unreachable at ${config.host}:${config.port} as ${config.user} (${(error as Error).message || (error as Error).name}); ` +
      'start it (.ci/run does) or point PGHOST/PGPORT/PGUSER/PGPASSWORD at one to run this scenario';
  } finally {
    await client.end().catch(() => {});
  }
}

/** One run's database: the orchestrator's pool, the fence's highest token, the accepted writes, and drop. */
export interface FaultDatabase {
  /** The database's name (the workers connect to it). */
  readonly name: string;
  /** The highest token the fence table holds for `resource` (0n: no row yet). */
  highest(resource: string): Promise<bigint>;
  /** The accepted writes (the run has one resource), in the order PostgreSQL applied them, as oracle operations (`write`, ok). */
  history(): Promise<OracleOp[]>;
  drop(): Promise<void>;
}

/** Creates a database for one run with the fence table (`migrate`) and the history table. */
export async function openFaultDatabase(): Promise<FaultDatabase> {
  const database = await postgresDatabase();
  const { name, pool } = database;
  const drop = (): Promise<void> => database.drop();
  try {
    await migrate(pool);
    await pool.query(HISTORY_SQL);
  } catch (error) {
    await drop();
    throw error;
  }
  return {
    name,
    highest: async (resource) => BigInt((await pool.query<{ token: string }>('SELECT token::text AS token FROM relock_fences WHERE resource = $1', [resource])).rows[0]?.token ?? '0'),
    history: async () => {
      const { rows } = await pool.query<{ sec: string; tok: string; t: number }>('SELECT sec, tok::text AS tok, t FROM fault_writes ORDER BY id');
      return rows.map((r) => ({ op: 'write' as const, sec: r.sec, tok: Number(r.tok), ok: true, t: r.t }));
    },
    drop,
  };
}

/** What one write through the helper got: accepted, or refused with the highest token the table held. */
export type WriteOutcome = { ok: true } | { ok: false; highest: string };

/** A worker's writer: its own small pool on the run's database. */
export class PostgresWriter {
  private readonly pool: pg.Pool;
  private writes = 0;

  constructor(database: string, private readonly resource: string) {
    this.pool = new pg.Pool({ ...pgConfig(database), max: 2 });
    this.pool.on('error', () => {});
  }

  /**
   * One fenced write of section `sec` with `token`: even writes use `fencedStatement` (one round trip),
   * odd ones `fencedTransaction`. Resolves with whether the fence accepted it; throws what else failed.
   */
  async write(w: string, sec: string, token: string, t: number): Promise<WriteOutcome & { form: string }> {
    const form = this.writes++ % 2 === 0 ? 'statement' : 'transaction';
    const values = [sec, w, token, t, form];
    try {
      if (form === 'statement') await fencedStatement(this.pool, this.resource, token, INSERT, values);
      else await fencedTransaction(this.pool, this.resource, token, async (tx) => void (await tx.query(INSERT, values)));
      return { ok: true, form };
    } catch (error) {
      if (error instanceof StaleTokenError) return { ok: false, highest: error.highest.toString(), form };
      throw error;
    }
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}
