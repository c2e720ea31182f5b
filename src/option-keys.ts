import { InvalidArgumentError } from './errors.js';

/**
 * Throws `InvalidArgumentError` (naming `what.key`) unless `options` is an object whose keys are all in
 * `known`: a misspelt option (`atleastMs`) is refused instead of silently ignored.
 */
export function refuseUnknown(options: unknown, known: readonly string[], what: string): void {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError(what, 'must be an object');
  const unknown = Object.keys(options).filter((key) => !known.includes(key));
  if (unknown.length > 0) throw new InvalidArgumentError(`${what}.${unknown[0]}`, `unknown option; expected one of ${known.join(', ')}`);
}
