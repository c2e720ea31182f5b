import { createInterface } from 'node:readline/promises';
import { coreOf, OBJECT_DESCRIPTORS } from '../../client.js';
import type { CommandSpec } from '../args.js';
import type { Target } from '../connect.js';
import { describe, type Description } from '../describe.js';
import { descriptorOfType, forcedType, inspectObject, objectKeys, type ObjectKeys, type ObjectType } from '../detect.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { COMMON_OPTIONS, TYPE_OPTION, type CommonOptions } from '../options.js';
import { printJson, printLines } from '../output.js';
import { holdersText, TYPE_LABEL } from '../render.js';
import { notFoundError, withTarget } from '../run.js';
import { DEFAULT_LIMIT } from './inspect.js';

/** The kinds `force-unlock` applies to: those whose descriptor has a `lock` part. */
const LOCK_TYPES = OBJECT_DESCRIPTORS.filter((d) => d.lock !== undefined).map((d) => d.kind);

/** Options of `relock force-unlock`. */
export interface ForceUnlockOptions extends CommonOptions {
  yes?: boolean;
  type?: string;
}

/**
 * `relock force-unlock <name>`: deletes a held lock whoever holds it with the library's
 * `forceUnlock` of its type (`RLock`, `RSpinLock`, `RFencedLock`, `RFairLock`, or the side of `RReadWriteLock` in the
 * current mode), which wakes its waiters. Asks for confirmation on a terminal unless `--yes`; refuses
 * without `--yes` when stdin is not a terminal.
 */
export const forceUnlockCommand: CommandSpec<ForceUnlockOptions> = {
  name: 'force-unlock',
  description: 'delete a held lock whoever holds it, and wake its waiters',
  argument: { name: 'name', description: 'the lock name (without --prefix)', required: true },
  options: [...COMMON_OPTIONS, { flags: '-y, --yes', description: 'do not ask for confirmation' }, TYPE_OPTION],
  run(name, options) {
    return withTarget(options, (target) => forceUnlock(target, name, options));
  },
};

async function forceUnlock(target: Target, name: string, options: ForceUnlockOptions): Promise<number> {
  const keys = objectKeys(target.locks, name);
  const { state, subs, detection } = await inspectObject(target.connection, keys, DEFAULT_LIMIT, forcedType(options.type));
  if (detection.found !== 'object') throw notFoundError(keys, detection);
  const { type } = detection;
  const lock = descriptorOfType(type).lock;
  if (!lock) throw usageError(`"${name}" is a ${TYPE_LABEL[type]}: force-unlock applies to locks (${LOCK_TYPES.join(', ')})`);
  const before = await describe(target.connection, state, type, subs);
  if (!before.exists) return report(options, { ...result(before, []), message: `${TYPE_LABEL[type]} "${name}" is not held: nothing to unlock` });
  if (!options.yes) await confirm(before);
  const deleted = await lock.forceUnlock(coreOf(target.locks), name, before);
  const keysDeleted = deleted ? deletedKeys(keys, lock.deletes) : [];
  const message = deleted
    ? `force-unlocked ${TYPE_LABEL[type]} "${name}": deleted ${keysDeleted.join(', ')} (holders were ${holdersOf(before)}); waiters were woken`
    : `"${name}" was released or changed mode before it could be force-unlocked: nothing was deleted`;
  return report(options, { ...result(before, keysDeleted), message });
}

/** The keys `forceUnlock` deletes: the lock hash, and the auxiliary keys its descriptor names (a read-write lock's leases; a fence counter and a fair queue stay). */
function deletedKeys(keys: ObjectKeys, parts: readonly string[]): string[] {
  return [keys.main, ...parts.map((part) => keys.aux.get(part)!)];
}

function holdersOf(d: Description): string {
  return holdersText(d.holders ?? [...(d.writer ? [{ owner: `${d.writer.owner} (writer)`, holds: d.writer.holds }] : []), ...(d.readers ?? [])]);
}

interface Outcome {
  readonly name: string;
  readonly type: ObjectType;
  readonly key: string;
  readonly deleted: string[];
  /** The state before the force-unlock. */
  readonly before: Description;
  readonly message: string;
}

function result(before: Description, deleted: string[]): Omit<Outcome, 'message'> {
  return { name: before.name, type: before.type, key: before.key, deleted, before };
}

function report(options: ForceUnlockOptions, outcome: Outcome): number {
  if (options.json) printJson(outcome);
  else printLines([outcome.message]);
  return EXIT.ok;
}

/**
 * Asks on the terminal (prompt on stderr, so stdout stays clean for `--json`); throws a usage error when
 * stdin is not a terminal, a `CliError` when the answer is not yes.
 */
async function confirm(d: Description): Promise<void> {
  if (!process.stdin.isTTY) throw usageError('stdin is not a terminal: pass --yes to force-unlock without confirmation');
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await prompt.question(
      `Force-unlock ${TYPE_LABEL[d.type]} "${d.name}" held by ${holdersOf(d)}? Its holders are not told (they may still be working), its waiters are woken. [y/N] `,
    );
    if (!/^y(es)?$/i.test(answer.trim())) throw new CliError('not confirmed: nothing was changed');
  } finally {
    prompt.close();
  }
}
