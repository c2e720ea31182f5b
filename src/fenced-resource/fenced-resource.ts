import type { Core } from '../core.js';
import { InvalidArgumentError, StaleTokenError } from '../errors.js';
import { fencingToken, type FencingToken } from '../fencing/input.js';
import { auxName, mainKey } from '../keys.js';
import type { TypedScript } from '../redis/script.js';
import { FENCED_DEL, FENCED_HDEL, FENCED_HSET, FENCED_READ, FENCED_SET, type FencedReply } from './scripts.js';

declare module '../object-kind.js' {
  interface ObjectKinds {
    /** `RFencedResource`. */
    'fenced-resource': true;
  }
}

/** What `RFencedResource.read()` returns. */
export interface FencedResourceState {
  /** The string value (`set`), `undefined` when none. */
  readonly value: string | undefined;
  /** The highest token the resource accepted (0n when none). */
  readonly highest: bigint;
  /** The hash variant's fields (`hset`). */
  readonly fields: ReadonlyMap<string, string>;
}

const requireString = (argument: string, value: unknown): string => {
  if (typeof value !== 'string') throw new InvalidArgumentError(argument, `must be a string; got ${typeof value}`);
  return value;
};

/**
 * Data in Redis that only the current holder of a fenced lock can change: every write carries the token
 * the holder's `RFencedLock` handed out, and a Lua script checks it and writes in one atomic step, only
 * when the token is greater than or equal to the highest the resource has accepted (equal: the same
 * holder writing again). A holder whose lease ran out while a newer one wrote is refused with
 * `StaleTokenError`, and nothing is written. A string value (`set`/`get`/`del`) and a hash (`hset`/`hget`/
 * `hgetall`/`hdel`) share one fence. Same checks as `relock/fencing`'s SQL helpers, in Redis.
 *
 * Works in Cluster (both keys carry the name's hash tag: one slot) and in Functions mode (`scripting:
 * 'functions'`). A retry after a lost reply is safe: the same token is accepted again unless a newer
 * holder wrote meanwhile, which refuses it.
 *
 * Redis keys: a hash `keyPrefix + name` with `kind` = `fenced-resource`, `token` (the highest accepted)
 * and `value`; a hash `relock:fields:{name}` for the hash variant. No TTL; relock never deletes them.
 * The tokens' own counter is the lock's (`relock:fence:{lockName}`): give the resource and the lock
 * related names, and see docs/fencing.md for when tokens can go back (a Redis restart without persistence).
 */
export class RFencedResource {
  /** The hash holding the fence, the value and the kind (`keyPrefix + name`). */
  readonly key: string;
  /** The hash of the hash variant's fields. */
  readonly fieldsKey: string;

  /** @internal Use `LockClient.getFencedResource(name)`. */
  constructor(
    private readonly core: Core,
    /** The name given to `getFencedResource`. */
    readonly name: string,
  ) {
    this.key = mainKey(core.keyPrefix, name);
    this.fieldsKey = auxName(core.keyPrefix, 'fields', this.key);
  }

  /**
   * Sets the string value if `token` passes the fence. Throws `StaleTokenError` (nothing written),
   * `InvalidArgumentError` (token not a whole number in 0..2^63-1, value not a string; nothing sent),
   * `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`.
   */
  async set(token: FencingToken, value: string): Promise<void> {
    const t = fencingToken(token);
    await this.write('fencedResource.set', t, FENCED_SET, { resource: this.key, token: t.toString(), value: requireString('value', value) });
  }

  /** Deletes the string value if `token` passes the fence (the fence stays); resolves to whether there was one. Throws as `set`. */
  async del(token: FencingToken): Promise<boolean> {
    const t = fencingToken(token);
    return (await this.write('fencedResource.del', t, FENCED_DEL, { resource: this.key, token: t.toString() })) === 1;
  }

  /** Sets hash fields (`HSET`) if `token` passes the fence; resolves to the number of new fields. Throws as `set`. */
  async hset(token: FencingToken, fields: Readonly<Record<string, string>>): Promise<number> {
    const t = fencingToken(token);
    if (typeof fields !== 'object' || fields === null || Object.keys(fields).length === 0) throw new InvalidArgumentError('fields', 'must be an object of at least one field name → string value');
    const pairs = Object.entries(fields).flatMap(([field, value]) => [field, requireString(`fields.${field}`, value)]);
    return this.write('fencedResource.hset', t, FENCED_HSET, { resource: this.key, fields: this.fieldsKey, token: t.toString(), pairs });
  }

  /** Deletes hash fields (`HDEL`) if `token` passes the fence; resolves to the number removed. Throws as `set`. */
  async hdel(token: FencingToken, ...names: string[]): Promise<number> {
    const t = fencingToken(token);
    if (names.length === 0) throw new InvalidArgumentError('names', 'must name at least one field');
    names.forEach((n, i) => requireString(`names[${i}]`, n));
    return this.write('fencedResource.hdel', t, FENCED_HDEL, { resource: this.key, fields: this.fieldsKey, token: t.toString(), names });
  }

  /** The value, the highest token and the fields, read at once. Throws `WrongTypeError`, `RedisUnavailableError`, `ClientClosedError`. */
  read(): Promise<FencedResourceState> {
    this.core.checkOpen();
    return this.core.executor.run('fencedResource.read', () => FENCED_READ.run(this.core.connection, { resource: this.key, fields: this.fieldsKey }), {
      idempotent: true,
      expects: { key: this.key, kind: 'fenced-resource' },
    });
  }

  /** The string value, `undefined` when none. Throws as `read`. */
  async get(): Promise<string | undefined> {
    return (await this.read()).value;
  }

  /** The value of hash field `field`, `undefined` when none. Throws as `read`. */
  async hget(field: string): Promise<string | undefined> {
    return (await this.read()).fields.get(requireString('field', field));
  }

  /** Every hash field. Throws as `read`. */
  async hgetall(): Promise<Record<string, string>> {
    return Object.fromEntries((await this.read()).fields);
  }

  /** The highest token the resource accepted (0n when none). Throws as `read`. */
  async highestToken(): Promise<bigint> {
    return (await this.read()).highest;
  }

  /** The name given to `getFencedResource`. */
  getName(): string {
    return this.name;
  }

  private async write<V>(operation: string, token: bigint, script: TypedScript<V, FencedReply>, values: V): Promise<number> {
    this.core.checkOpen();
    const reply = await this.core.executor.run(operation, () => script.run(this.core.connection, values), {
      idempotent: true,
      expects: { key: this.key, kind: 'fenced-resource' },
    });
    if (!reply.written) throw new StaleTokenError(this.name, token, reply.highest);
    return reply.count;
  }
}
