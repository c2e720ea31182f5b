import type { CommandSpec } from '../args.js';
import type { Target } from '../connect.js';
import { describe, type Description } from '../describe.js';
import { OBJECT_DESCRIPTORS } from '../../client.js';
import { descriptorOfType, inspectObject, objectKeys, type ObjectKeys, type ObjectType } from '../detect.js';
import { EXIT } from '../errors.js';
import { escapeGlob, globMatcher } from '../glob.js';
import { COMMON_OPTIONS, TYPES_OPTION, wholeNumber, type CommonOptions } from '../options.js';
import { printJson, printLines, progress, showProgress, type Progress } from '../output.js';
import { table, ttlText } from '../render.js';
import { withTarget } from '../run.js';

/** Options of `relock list`. */
export interface ListOptions extends CommonOptions {
  type?: ObjectType[];
  scanCount: number;
}

/** One object found by `list` (also its JSON output). */
export interface Listed {
  readonly name: string;
  readonly type: ObjectType;
  readonly key: string;
  readonly exists: boolean;
  /** `PTTL` of the main key in ms, `null` when it has none or does not exist. */
  readonly ttlMs: number | null;
  /** A short account of the state, such as `held by 1 owner` or `3 free permits`. */
  readonly summary: string;
  readonly warnings: string[];
}

/** The auxiliary keys from which an object's name can be read back (`relock:<part>:<tagged main key>`): every descriptor's. */
const AUX_KINDS: readonly string[] = [...new Set(OBJECT_DESCRIPTORS.flatMap((d) => d.keys))];
/** Entries read per key to classify an object (a sample is enough to tell a relock hash from another). */
const CLASSIFY_LIMIT = 16;
/** Objects classified at once. */
const BATCH = 64;

/**
 * `relock list [pattern]`: `SCAN`s every primary (never `KEYS`) for keys under `--prefix`, reads
 * back the object names from main keys and relock's auxiliary keys, keeps those matching the glob
 * `pattern`, and classifies each (type, TTL, a summary), with a progress line on stderr when run in a
 * terminal.
 */
export const listCommand: CommandSpec<ListOptions> = {
  name: 'list',
  description: 'find relock objects with SCAN',
  argument: { name: 'pattern', description: 'a Redis glob over object names', required: false, default: '*' },
  options: [
    ...COMMON_OPTIONS,
    TYPES_OPTION,
    { flags: '--scan-count <n>', description: 'the COUNT hint of each SCAN call', parse: wholeNumber(1), default: 1000 },
  ],
  run(pattern, options) {
    return withTarget(options, async (target) => {
      const found = await list(target, pattern, options, progress(showProgress(options.json)));
      const { objects } = found;
      if (options.json) printJson({ pattern, prefix: options.prefix, nodes: found.nodes, scannedKeys: found.scanned, objects, plainIntegers: found.plainIntegers });
      else printLines(render(objects, found.scanned, found.nodes.length, found.plainIntegers));
      return EXIT.ok;
    });
  },
};

/** The footer's note on integer keys left out (`plainInteger`), or ''. */
export function plainNote(plainIntegers: number): string {
  if (plainIntegers === 0) return '';
  return `; ${plainIntegers} integer key${plainIntegers === 1 ? '' : 's'} not shown (a semaphore keeps only an integer, like any counter: --type semaphore lists them)`;
}


/**
 * Whether `d` is a semaphore that only its value shows: an integer string with nobody waiting on its
 * channel. RSemaphore keeps nothing but that integer (Redisson's layout), so any counter of the
 * application looks the same; `list` and `top` leave these out unless `--type` names `semaphore`.
 */
export function plainInteger(d: Description): boolean {
  return d.type === 'semaphore' && d.exists && d.channels.every((c) => c.subscribers === 0);
}

/**
 * Scans every primary and classifies each object whose name matches `pattern`, sorted by name; also
 * returns each object's description by name (for `top`). Only the types of `options.type` when given;
 * integer strings nobody waits on (`plainInteger`) only when `options.type` names `semaphore`, else they
 * are counted in `plainIntegers`.
 */
export async function list(
  target: Target,
  pattern: string,
  options: Pick<ListOptions, 'prefix' | 'scanCount' | 'type'>,
  bar: Progress,
): Promise<{ nodes: string[]; scanned: number; objects: Listed[]; plainIntegers: number; descriptions: Map<string, Description> }> {
  const { prefix } = options;
  const matches = globMatcher(pattern);
  const seen = new Set<string>();
  const objects: Listed[] = [];
  const descriptions = new Map<string, Description>();
  const nodes = await target.primaries();
  let scanned = 0;
  let plainIntegers = 0;
  const wanted = (d: Description): boolean => {
    if (options.type !== undefined) return options.type.includes(d.type);
    if (plainInteger(d)) plainIntegers++;
    return !plainInteger(d);
  };
  const match = prefix === '' ? [] : ['MATCH', `${escapeGlob(prefix)}*`];
  for (const [n, node] of nodes.entries()) {
    let cursor = '0';
    do {
      const [next, keys] = (await node.send(['SCAN', cursor, ...match, 'COUNT', String(options.scanCount)])) as [string, string[]];
      cursor = String(next);
      scanned += keys.length;
      const names = [...new Set(keys.flatMap((key) => namesOf(key, prefix)))].filter((name) => matches(name) && !seen.has(name));
      for (const name of names) seen.add(name);
      for (let i = 0; i < names.length; i += BATCH) objects.push(...(await classify(target, names.slice(i, i + BATCH), descriptions, wanted)));
      bar.update(`scanning ${node.address}${nodes.length > 1 ? ` (${n + 1}/${nodes.length})` : ''}: ${scanned} keys read, ${objects.length} relock objects`);
    } while (cursor !== '0');
  }
  bar.done();
  return { nodes: nodes.map((node) => node.address), scanned, plainIntegers, objects: dropShadows(objects).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)), descriptions };
}

/**
 * The object names a key may belong to: `key` minus the prefix for a main key; for an auxiliary key
 * `relock:<kind>:<tagged>`, the main key inside it (`{x}` may stand for `x` or for the key `{x}` itself).
 */
function namesOf(key: string, prefix: string): string[] {
  if (!key.startsWith(prefix)) return [];
  const rest = key.slice(prefix.length);
  if (!rest.startsWith('relock:')) return [rest];
  const kind = AUX_KINDS.find((k) => rest.startsWith(`relock:${k}:`));
  if (kind === undefined) return [];
  const tagged = rest.slice(`relock:${kind}:`.length);
  const mains = /^\{[^{}]+\}$/.test(tagged) ? [tagged.slice(1, -1), tagged] : [tagged];
  return mains.filter((main) => main.startsWith(prefix)).map((main) => main.slice(prefix.length));
}

/**
 * Reads and classifies `names` (their descriptions go to `descriptions`); names that are no relock
 * object, or whose description is not `wanted`, are left out.
 */
async function classify(target: Target, names: readonly string[], descriptions: Map<string, Description>, wanted: (d: Description) => boolean): Promise<Listed[]> {
  const results = await Promise.all(
    names.map(async (name): Promise<Listed | undefined> => {
      let keys: ObjectKeys;
      try {
        keys = objectKeys(target.locks, name);
      } catch {
        return undefined; // braces that no relock name can have
      }
      const { state, subs, detection } = await inspectObject(target.connection, keys, CLASSIFY_LIMIT, undefined);
      if (detection.found !== 'object') return undefined;
      const d = await describe(target.connection, state, detection.type, subs);
      if (!wanted(d)) return undefined;
      descriptions.set(name, d);
      return { name, type: d.type, key: d.key, exists: d.exists, ttlMs: d.ttlMs, summary: summary(d), warnings: d.warnings };
    }),
  );
  return results.filter((r): r is Listed => r !== undefined);
}

/**
 * `x` and `{x}` share their auxiliary keys, so both are found from them: keeps the one whose main key
 * exists, or `x` when neither does.
 */
function dropShadows(objects: Listed[]): Listed[] {
  const byName = new Map(objects.map((o) => [o.name, o]));
  return objects.filter((o) => {
    if (o.exists) return true;
    const braced = /^\{([^{}]+)\}$/.exec(o.name);
    if (braced) return !byName.has(braced[1]);
    return !byName.get(`{${o.name}}`)?.exists;
  });
}

/** The descriptor's account of the state (`held by 1 owner`, `3 free permits`). */
function summary(d: Description): string {
  return descriptorOfType(d.type).summary(d);
}

function render(objects: readonly Listed[], scanned: number, nodes: number, plainIntegers: number): string[] {
  const footer = `${objects.length} relock object${objects.length === 1 ? '' : 's'} (${scanned} keys scanned on ${nodes} node${nodes === 1 ? '' : 's'})${plainNote(plainIntegers)}`;
  if (objects.length === 0) return [footer];
  const rows = objects.map((o) => [o.type, o.name, ttlText(o.ttlMs, o.exists), o.summary + (o.warnings.length > 0 ? '  (no TTL!)' : '')]);
  return [...table([['TYPE', 'NAME', 'TTL', 'STATE'], ...rows]), footer];
}
