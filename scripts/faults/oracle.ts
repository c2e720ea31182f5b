/**
 * The oracle: a separate redis-server the nemesis never touches, holding two resources written under the
 * lock, and an append-only log of every operation in the order the oracle applied them.
 *
 * - A fenced resource (a register with a value and the highest token it has seen). A section's first
 *   operation (`enter`) is accepted only with a token higher than any seen; its write (`commit`) only
 *   with a token at least as high as any seen (its own `enter` raised it). This is the SQL pattern
 *   `UPDATE … WHERE fence_token <= $token` after a `SELECT … FOR UPDATE` that records the token: a holder
 *   whose lease ran out and whose successor has touched the resource is rejected.
 * - A plain counter, read at enter and written (read + 1) at commit, without any token: the lost-update
 *   probe of Jepsen's lock workloads.
 *
 * The oracle only records: every attempt on the fenced resource is logged with its token, its writer (the
 * section, whose prefix is the worker), the writer's time (hrtime ms when it sent the attempt) and the
 * resource's answer, and the checkers (checkers/fencing.ts) judge the log by their own rules, so a
 * resource that accepts what it should not is caught like a lock that grants what it should not.
 *
 * Log entries: `b <sec> <tok> <0|1> <t>` (fenced enter), `w <sec> <tok> <0|1> <t>` (fenced write),
 * `s <sec> <value> <t>` (counter set).
 */
import { createClient } from 'redis';
import { now } from './history.js';

type Client = ReturnType<typeof createClient>;

/** The resource's policy on a section's first operation: a token higher than any seen. */
const ENTER = `local max = tonumber(redis.call('hget', KEYS[1], 'max') or '0')
local ok = 0
if tonumber(ARGV[1]) > max then
  redis.call('hset', KEYS[1], 'max', ARGV[1])
  ok = 1
end
redis.call('rpush', KEYS[2], 'b ' .. ARGV[2] .. ' ' .. ARGV[1] .. ' ' .. ok .. ' ' .. ARGV[3])
return {ok, tonumber(redis.call('hget', KEYS[1], 'value') or '0'), tonumber(redis.call('get', KEYS[3]) or '0')}`;

/** The resource's policy on a write: a token at least as high as any seen (its own enter raised it). */
const COMMIT = `redis.call('set', KEYS[3], ARGV[4])
redis.call('rpush', KEYS[2], 's ' .. ARGV[2] .. ' ' .. ARGV[4] .. ' ' .. ARGV[5])
local ok = 0
if tonumber(ARGV[1]) >= tonumber(redis.call('hget', KEYS[1], 'max') or '0') then
  redis.call('hset', KEYS[1], 'max', ARGV[1], 'value', ARGV[3])
  ok = 1
end
redis.call('rpush', KEYS[2], 'w ' .. ARGV[2] .. ' ' .. ARGV[1] .. ' ' .. ok .. ' ' .. ARGV[5])
return ok`;

/** Sets the plain counter (read earlier by `read()`) and logs it, for sections with no fencing token (read-write lock). */
const SET = `redis.call('set', KEYS[3], ARGV[1])
redis.call('rpush', KEYS[2], 's ' .. ARGV[2] .. ' ' .. ARGV[1] .. ' ' .. ARGV[3])
return 1`;

/** The oracle keys of one scenario run. */
export function oracleKeys(run: string): [resource: string, log: string, counter: string] {
  return [`oracle:{${run}}:resource`, `oracle:{${run}}:log`, `oracle:{${run}}:counter`];
}

/** What a section read when it entered. */
export interface Entered {
  /** The fenced resource accepted the token. */
  ok: boolean;
  fencedValue: number;
  counter: number;
}

/** A worker's connection to the oracle (direct, never through a proxy). */
export class OracleClient {
  private constructor(
    private readonly client: Client,
    private readonly keys: string[],
    private readonly shas: { enter: string; commit: string; set: string },
  ) {}

  static async open(url: string, run: string): Promise<OracleClient> {
    const client = createClient({ url });
    client.on('error', () => {});
    await client.connect();
    const [enter, commit, set] = await Promise.all([client.scriptLoad(ENTER), client.scriptLoad(COMMIT), client.scriptLoad(SET)]);
    return new OracleClient(client as Client, oracleKeys(run), { enter, commit, set });
  }

  /** The section's first operation: registers `token` with the fenced resource and reads both resources. */
  async enter(sec: string, token: string): Promise<Entered> {
    const args = [token, sec, String(now())];
    const [ok, fencedValue, counter] = await this.client.sendCommand<number[]>(['EVALSHA', this.shas.enter, '3', ...this.keys, ...args]);
    return { ok: ok === 1, fencedValue: fencedValue, counter: counter };
  }

  /** Writes counter + 1 unconditionally and the fenced value + 1 if the token is still the highest. */
  async commit(sec: string, token: string, entered: Entered): Promise<boolean> {
    const args = [token, sec, String(entered.fencedValue + 1), String(entered.counter + 1), String(now())];
    return Number(await this.client.sendCommand(['EVALSHA', this.shas.commit, '3', ...this.keys, ...args])) === 1;
  }

  /** The plain counter's value (a section without a token reads it first). */
  async read(): Promise<number> {
    return Number((await this.client.get(this.keys[2])) ?? 0);
  }

  /** Sets the plain counter to `value` (what the section read, plus one). */
  async set(sec: string, value: number): Promise<void> {
    await this.client.sendCommand(['EVALSHA', this.shas.set, '3', ...this.keys, String(value), sec, String(now())]);
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** One operation in the oracle's log, in the order the oracle applied it. */
export type OracleOp =
  /** An attempt on the fenced resource, at the writer's time `t`, and whether the resource accepted it. */
  | { op: 'begin' | 'write'; sec: string; tok: number; ok: boolean; t: number }
  /** The plain counter set to `value`. */
  | { op: 'set'; sec: string; value: number; t: number };

/** Reads (and deletes) a run's oracle log and final values. */
export async function readOracle(client: Client, run: string): Promise<{ ops: OracleOp[]; counter: number; fencedValue: number }> {
  const [resource, log, counter] = oracleKeys(run);
  const [lines, value, fenced] = await Promise.all([client.lRange(log, 0, -1), client.get(counter), client.hGet(resource, 'value')]);
  await client.del([resource, log, counter]);
  const ops = lines.map((line): OracleOp => {
    const [kind, sec, a, b, c] = line.split(' ') as [string, string, string, string, string?];
    if (kind === 's') return { op: 'set', sec, value: Number(a), t: Number(b) };
    return { op: kind === 'b' ? 'begin' : 'write', sec, tok: Number(a), ok: b === '1', t: Number(c) };
  });
  return { ops, counter: Number(value ?? 0), fencedValue: Number(fenced ?? 0) };
}
