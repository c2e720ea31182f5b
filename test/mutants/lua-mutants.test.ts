/**
 * The generated Lua pass of `npm run mutants -- --lua` (scripts/mutants/lua.ts, lua-catalogue.ts): every
 * mutant it generates is Lua that Redis compiles (`SCRIPT LOAD`) and differs from its script, so a mutant
 * is killed by what it changes, never by a syntax error the generator made; and each operator yields the
 * mutants the pass promises, on a known source.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { luaCatalogue } from '../../scripts/mutants/lua-catalogue.js';
import { luaMutants } from '../../scripts/mutants/lua.js';
import { startRedis, type RedisServer } from '../support/redis.js';

describe('generated Lua mutants', () => {
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });

  it('are one per comparison, guard, early return and write, leaving strings and comments alone', () => {
    const source = `local n = tonumber(redis.call('get', key) or '0') -- n < 1 here is a comment
if n < limit and mode ~= '<=' then
  redis.call('set', key, n + 1)
  return 1
elseif n >= limit then return redis.call('del', key) end
local function f() return n == 2 end
return f()`;
    const mutants = luaMutants(source);
    expect(mutants.map((m) => [m.kind, m.line, m.operator])).toEqual([
      ['comparison', 2, '`<` → `<=`'],
      ['comparison', 2, '`~=` → `==`'],
      ['comparison', 5, '`>=` → `>`'],
      ['comparison', 6, '`==` → `~=`'],
      ['negate-if', 2, "negate `if n < limit and mode ~= '<='`"],
      ['negate-if', 5, 'negate `elseif n >= limit`'],
      ['drop-return', 4, 'drop `return 1`'],
      ['drop-return', 5, "drop `return redis.call('del', key)`"],
      ['drop-write', 3, "drop `redis.call('set', key, n + 1)`"],
      ['drop-write', 5, "drop `redis.call('del', key)` (its value read as false)"],
    ]);
    expect(mutants[4].source).toContain("if not (n < limit and mode ~= '<=') then");
    expect(mutants[9].source).toContain('then return false end');
  });

  it('compile in Redis, each under its own id', async () => {
    const entries = await luaCatalogue();
    expect(entries.length).toBeGreaterThan(300);
    for (const entry of entries) {
      const source = JSON.parse(/source = ("(?:[^"\\]|\\.)*");/.exec(entry.replace)![1]) as string;
      await expect(redis.script('LOAD', source).then(() => entry.id)).resolves.toBe(entry.id);
    }
    const ids = new Set(entries.map((e) => e.id));
    expect(ids.size).toBe(entries.length);
  });
});
