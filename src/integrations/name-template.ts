import { InvalidArgumentError } from '../errors.js';

/**
 * A lock name built per call: a template such as `'order:{{0.userId}}'` whose `{{path}}` placeholders are
 * read from the call's data (a dot-separated path: `0.userId` is `args[0].userId` for a NestJS method,
 * `params.id` is `req.params.id` for an Express or Fastify request), or a function of that data that
 * returns the name.
 */
export type LockNameSource<T> = string | ((data: T) => string);

const PLACEHOLDER = /\{\{\s*([^{}\s]+)\s*\}\}/g;

/**
 * The lock name `source` gives for `data`. Throws `InvalidArgumentError` (argument `name`) when a
 * placeholder's value is missing (`undefined`/`null`) or is not a string, number, bigint or boolean, or
 * when the function does not return a non-empty string: nothing is locked then.
 */
export function lockName<T>(source: LockNameSource<T>, data: T): string {
  const name = typeof source === 'function' ? source(data) : source.replace(PLACEHOLDER, (_, path: string) => placeholder(source, path, data));
  if (typeof name !== 'string' || name === '') throw new InvalidArgumentError('name', `the lock name must be a non-empty string; got ${name === '' ? 'an empty string' : typeof name}`);
  return name;
}

function placeholder(template: string, path: string, data: unknown): string {
  let value: unknown = data;
  for (const step of path.split('.')) value = value === null || value === undefined ? undefined : (value as Record<string, unknown>)[step];
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  throw new InvalidArgumentError('name', `{{${path}}} of the lock name template "${template}" is ${value === null || value === undefined ? String(value) : `a ${typeof value}`}, not a string or number`);
}

/** Throws `InvalidArgumentError` unless `source` is a non-empty string or a function (checked when a route or method is declared). */
export function checkNameSource(source: unknown): void {
  if (!(typeof source === 'function' || (typeof source === 'string' && source !== ''))) {
    throw new InvalidArgumentError('name', `must be a non-empty string (a template such as 'order:{{0.userId}}') or a function returning one; got ${typeof source}`);
  }
}
