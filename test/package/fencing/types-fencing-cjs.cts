// Type-checked against the built package's CommonJS declarations (not run): relock/fencing from a .cts file.
import pg = require('pg');
import fencing = require('relock/fencing');

const pool = new pg.Pool();
export const write = (token: bigint): Promise<number> => fencing.fencedStatement(pool, 'account:1', token, 'UPDATE account SET balance = balance - $1 WHERE id = 1', [10]);
export const isStale = (error: unknown): error is InstanceType<typeof fencing.StaleTokenError> => error instanceof fencing.StaleTokenError;
