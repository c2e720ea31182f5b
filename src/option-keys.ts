import { InvalidArgumentError } from './errors.js';

/**
 * The one check every options object relock takes goes through: a key relock does not know is refused
 * (`InvalidArgumentError` naming it and the nearest known key), so a typo such as `{ leaseMS: 1000 }`
 * cannot silently become "no lease: the watchdog renews it forever", nor `{ waitMS: 100 }` "wait until
 * free". Each options type lists its keys once, beside its interface, with `optionKeys`.
 */

/**
 * The known keys of the options type `T`, checked by the compiler against `T` (every key of `T`, and
 * nothing else, must be listed): `optionKeys<AcquireOptions>({ waitMs: true, … })`.
 */
export function optionKeys<T extends object>(keys: { readonly [K in keyof Required<T>]: true }): readonly string[] {
  return Object.freeze(Object.keys(keys));
}

/**
 * Throws `InvalidArgumentError` when `options` (an object) has an own enumerable key that is not in
 * `known`: the error's `argument` is `path` + the key (`path` such as `'retry.'` for a nested object),
 * and its message names the nearest known key (Levenshtein distance, case-insensitive, when at most
 * about half the key differs) and every known key. Symbol keys are ignored. Reads only the keys.
 */
export function refuseUnknownKeys(options: object, known: readonly string[], path = ''): void {
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const near = nearest(key, known);
    const hint = near === undefined ? '' : `; did you mean ${near}?`;
    throw new InvalidArgumentError(`${path}${key}`, `unknown option ${JSON.stringify(key)}${hint} (known: ${known.join(', ')})`);
  }
}

/** The known key closest to `key`, or `undefined` when even the closest differs in more than half of it. */
function nearest(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = distance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 2)) ? best : undefined;
}

/** Levenshtein distance (insertions, deletions, substitutions) of `a` and `b`; keys are short, so O(|a|·|b|). */
function distance(a: string, b: string): number {
  if (a.length > 64 || b.length > 64) return Math.max(a.length, b.length);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length];
}


/**
 * Throws `InvalidArgumentError` (naming `what`) unless `options` is an object, then refuses its unknown
 * keys as `refuseUnknownKeys` does (the error names `what.key` and the nearest known key). For options
 * objects that have no time fields (`checkOptions` in time.ts covers those).
 */
export function refuseUnknown(options: unknown, known: readonly string[], what: string): void {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError(what, 'must be an object');
  refuseUnknownKeys(options, known, `${what}.`);
}
