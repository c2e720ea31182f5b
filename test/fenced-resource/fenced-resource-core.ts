// RFencedResource on any topology, with EVALSHA and with Redis Functions (test/fenced-resource/*.test.ts).
import { describe, expect, it } from '@jest/globals';
import { InvalidArgumentError, StaleTokenError, WrongTypeError, type ScriptingMode } from '../../src/index.js';
import { keySlot } from '../../src/keys.js';
import type { Topology } from '../shared/topology.js';
import { uniqueName } from '../support/helpers.js';

export function fencedResourceTests(topology: () => Topology): void {
  for (const scripting of ['eval', 'functions'] as const satisfies readonly ScriptingMode[]) {
    describe(`RFencedResource (${scripting})`, () => {
      const client = () => topology().client({ scripting });

      it('writes with a token at least the highest, refuses a lower one with StaleTokenError and writes nothing', async () => {
        const c = client();
        const resource = c.getFencedResource(`res:{${uniqueName()}}`);
        expect(keySlot(resource.fieldsKey)).toBe(keySlot(resource.key));
        expect(await resource.get()).toBeUndefined();
        expect(await resource.highestToken()).toBe(0n);
        await resource.set(5n, 'five');
        await resource.set('5', 'five again');
        await resource.set(7, 'seven');
        await expect(resource.set(6n, 'six')).rejects.toMatchObject({ constructor: StaleTokenError, code: 'STALE_TOKEN', resource: resource.name, token: 6n, highest: 7n });
        expect(await resource.get()).toBe('seven');
        expect(await resource.hset(7n, { a: '1', b: '2' })).toBe(2);
        await expect(resource.hset(6n, { a: 'stale' })).rejects.toBeInstanceOf(StaleTokenError);
        await expect(resource.hdel(6n, 'a')).rejects.toBeInstanceOf(StaleTokenError);
        await expect(resource.del(6n)).rejects.toBeInstanceOf(StaleTokenError);
        expect(await resource.hgetall()).toEqual({ a: '1', b: '2' });
        expect(await resource.hdel(8n, 'a', 'zz')).toBe(1);
        expect(await resource.hget('b')).toBe('2');
        expect(await resource.del(8n)).toBe(true);
        expect(await resource.get()).toBeUndefined();
        expect(await resource.highestToken()).toBe(8n);
      });

      it('compares tokens above 2^53 exactly (as decimal strings, not Lua doubles)', async () => {
        const resource = client().getFencedResource(`res:{${uniqueName()}}`);
        const big = 2n ** 63n - 1n;
        await resource.set(big - 1n, 'a');
        await expect(resource.set(big - 2n, 'b')).rejects.toMatchObject({ highest: big - 1n });
        await resource.set(big, 'c');
        await expect(resource.set(big - 1n, 'd')).rejects.toMatchObject({ highest: big });
        await expect(resource.set(999n, 'e')).rejects.toBeInstanceOf(StaleTokenError);
        expect(await resource.get()).toBe('c');
      });

      it('refuses bad tokens and values before sending anything; another kind on the name: WrongTypeError', async () => {
        const c = client();
        const resource = c.getFencedResource(`res:{${uniqueName()}}`);
        for (const token of [1.5, -1, 2n ** 63n, '0x10', Number.MAX_SAFE_INTEGER + 2, null]) {
          await expect(resource.set(token as never, 'x')).rejects.toMatchObject({ constructor: InvalidArgumentError, argument: 'token' });
        }
        // The message says what a token must be and what it got.
        await expect(resource.set(2n ** 63n, 'x')).rejects.toThrow(/must be a whole number from 0 to 2\^63-1 \(a bigint, a safe integer or a string of digits\).*; got bigint "9223372036854775808"/);
        await expect(resource.set(null as never, 'x')).rejects.toThrow(/; got object$/);
        await expect(resource.set(1n, 5 as never)).rejects.toMatchObject({ argument: 'value' });
        await expect(resource.hset(1n, {})).rejects.toMatchObject({ argument: 'fields' });
        await expect(resource.hdel(1n)).rejects.toMatchObject({ argument: 'names' });
        expect(await topology().redis.exists(resource.key)).toBe(0);
        const lock = c.getLock(`lock:{${uniqueName()}}`);
        await lock.lock(5, 'seconds');
        const onLock = c.getFencedResource(lock.name);
        await expect(onLock.set(1n, 'x')).rejects.toMatchObject({ constructor: WrongTypeError, foundKind: 'lock', askedKind: 'fenced-resource' });
        await expect(onLock.get()).rejects.toBeInstanceOf(WrongTypeError);
        expect(await topology().redis.hGet(lock.key, 'value')).toBeNull();
        await lock.unlock();
      });

      it('a holder paused past its lease is refused after the next holder wrote (tokens from RFencedLock)', async () => {
        const c = client();
        const name = `acct:{${uniqueName()}}`;
        const lock = c.getFencedLock(name);
        const resource = c.getFencedResource(`${name}:data`);
        const old = await lock.tryLockAndGetToken(0, 150, 'ms');
        expect(old).toBeDefined();
        const next = await c.getFencedLock(name).tryLockAndGetToken(2, 5, 'seconds'); // waits for the lease to end
        expect(next).toBe(old! + 1n);
        await resource.set(next!, 'new holder');
        await expect(resource.set(old!, 'paused holder')).rejects.toMatchObject({ token: old, highest: next });
        expect(await resource.get()).toBe('new holder');
        await c.getFencedLock(name).forceUnlock();
      });
    });
  }
}
