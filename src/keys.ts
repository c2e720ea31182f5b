import { CrossSlotError, InvalidArgumentError } from './errors.js';

/**
 * Key and channel names. Every key and channel of one object carries the same Redis Cluster hash tag,
 * so each script touches one slot and its channel can be published (SPUBLISH) from inside the script.
 *
 * The object's main key is `keyPrefix + name` (a lock's hash, a semaphore's counter). Its other keys
 * and channels are `keyPrefix + 'relock:' + kind + ':' + tagged`, where `tagged` is the main key when it
 * already has a hash tag, and `{` main key `}` when it has no braces at all. A name with braces that do
 * not form a hash tag (such as `a{}b` or `a}b`) is refused: no name built from it could share its slot.
 */

/** The hash tag Redis Cluster hashes for `key`, or `undefined` when the whole key is hashed. */
export function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close <= open + 1) return undefined;
  return key.slice(open + 1, close);
}

/** The main key with a hash tag that covers the whole of it, for use inside other names. */
export function tagged(key: string): string {
  if (hashTag(key) !== undefined) return key;
  if (!key.includes('{') && !key.includes('}')) return `{${key}}`;
  throw new CrossSlotError(`"${key}" contains "{" or "}" that do not form a hash tag, so relock cannot give its other keys and channels the same slot; use a tag with at least one character between the braces, or no braces at all`);
}

/**
 * The longest object name, in characters (UTF-16 code units, JavaScript's `length`): 1,024. Redis takes
 * keys of up to 512 MB, but relock repeats the name in every key and channel of the object (latches,
 * queues, `relock:channel:{name}:…`), in each pub/sub subscription, log line, span attribute and row of the
 * `relock` CLI, so a name is an identifier, not data: 1,024 leaves room for any path, URL or composite id
 * (`tenant:{42}:orders:<uuid>`) while keeping each of those copies small. Longer names throw `InvalidArgumentError`.
 */
export const MAX_NAME_LENGTH = 1024;

/** Control characters: C0 (NUL, CR, LF, TAB, ESC, …), DEL, C1, and the Unicode line and paragraph separators. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/u;

/**
 * Validates an object name and returns `keyPrefix + name`: a non-empty string of at most
 * `MAX_NAME_LENGTH` characters with no control character (`\0`, `\r`, `\n`, tab, escape, DEL, C1
 * controls, U+2028/U+2029: they would break log lines, the CLI's tables and terminals, and are surely
 * not meant as part of a name), whose braces form a hash tag (see `tagged`). Throws
 * `InvalidArgumentError` (argument `name`) naming the problem, `CrossSlotError` for the braces.
 */
export function mainKey(keyPrefix: string, name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidArgumentError('name', `must be a non-empty string; got ${name === '' ? 'an empty string' : typeof name}`);
  }
  if (name.length > MAX_NAME_LENGTH) throw new InvalidArgumentError('name', `must be at most ${MAX_NAME_LENGTH} characters; got ${name.length} (starting ${JSON.stringify(name.slice(0, 32))})`);
  const control = CONTROL.exec(name);
  if (control) {
    throw new InvalidArgumentError('name', `must not contain control characters; found ${JSON.stringify(control[0])} (U+${control[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}) at index ${control.index} of ${JSON.stringify(name.slice(0, 64))}`);
  }
  const key = keyPrefix + name;
  tagged(key);
  return key;
}

/** The name of an auxiliary key or channel of the object whose main key is `key`. */
export function auxName(keyPrefix: string, kind: string, key: string, suffix?: string): string {
  const base = `${keyPrefix}relock:${kind}:${tagged(key)}`;
  return suffix === undefined ? base : `${base}:${suffix}`;
}

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/** The Redis Cluster slot of `key` (CRC16/XMODEM of its hash tag or of the whole key, mod 16384). */
export function keySlot(key: string): number {
  const bytes = Buffer.from(hashTag(key) ?? key);
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc % 16384;
}
