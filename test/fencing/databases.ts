// The real PostgreSQL and MariaDB/MySQL of the machine (as in CI), each test file in a database of its own
// created for the run and dropped after it. Connection: PGHOST/PGPORT/PGUSER/PGPASSWORD (default
// 127.0.0.1:5432, postgres, trust auth) and RELOCK_MYSQL_URL (default mysql://root@127.0.0.1:3306).
// A suite is skipped, with a message, only when the server's binary is not on the machine; a server that
// is installed but not running fails the suite (.ci/run starts both).
import { existsSync, readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import mysql from 'mysql2/promise';

/** Whether PostgreSQL is installed here (Debian: /usr/lib/postgresql/<major>/bin/postgres). */
export const postgresInstalled = (): boolean =>
  existsSync('/usr/lib/postgresql') && readdirSync('/usr/lib/postgresql').some((major) => existsSync(`/usr/lib/postgresql/${major}/bin/postgres`));

/** Whether MariaDB or MySQL is installed here. */
export const mysqlInstalled = (): boolean => ['/usr/sbin/mariadbd', '/usr/sbin/mysqld', '/usr/bin/mariadbd'].some((path) => existsSync(path));

const runName = (): string => `relock_fence_${process.pid}_${randomBytes(4).toString('hex')}`;

/** The connection settings of the machine's PostgreSQL (PGHOST, PGPORT, PGUSER, PGPASSWORD) for `database`. */
export const pgConfig = (database: string): pg.PoolConfig => ({
  host: process.env.PGHOST ?? '127.0.0.1',
  port: Number(process.env.PGPORT ?? 5432),
  user: process.env.PGUSER ?? 'postgres',
  password: process.env.PGPASSWORD,
  database,
  max: 6,
});

/** A fresh PostgreSQL database: its pool, and `drop()` to end the pool and drop the database. */
export async function postgresDatabase(): Promise<{ name: string; pool: pg.Pool; drop(): Promise<void> }> {
  const name = runName();
  const admin = new pg.Client(pgConfig('postgres'));
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const pool = new pg.Pool(pgConfig(name));
  return {
    name,
    pool,
    drop: async () => {
      await pool.end();
      const cleanup = new pg.Client(pgConfig('postgres'));
      await cleanup.connect();
      try {
        await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await cleanup.end();
      }
    },
  };
}

const mysqlUrl = (): URL => new URL(process.env.RELOCK_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306');

/** A fresh MariaDB/MySQL database: its pool (`mysql2/promise`), and `drop()`. */
export async function mysqlDatabase(): Promise<{ name: string; pool: mysql.Pool; drop(): Promise<void> }> {
  const name = runName();
  const url = mysqlUrl();
  const options = { host: url.hostname, port: Number(url.port || 3306), user: decodeURIComponent(url.username || 'root'), password: decodeURIComponent(url.password) };
  const admin = await mysql.createConnection(options);
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const pool = mysql.createPool({ ...options, database: name, connectionLimit: 6, supportBigNumbers: true, bigNumberStrings: true });
  return {
    name,
    pool,
    drop: async () => {
      await pool.end();
      const cleanup = await mysql.createConnection(options);
      try {
        await cleanup.query(`DROP DATABASE IF EXISTS ${name}`);
      } finally {
        await cleanup.end();
      }
    },
  };
}
