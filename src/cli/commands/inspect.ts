import type { CommandSpec } from '../args.js';
import { describe } from '../describe.js';
import { forcedType, inspectObject, objectKeys } from '../detect.js';
import { EXIT } from '../errors.js';
import { COMMON_OPTIONS, TYPE_OPTION, wholeNumber, type CommonOptions } from '../options.js';
import { printJson, printLines, printWarnings } from '../output.js';
import { renderDescription } from '../render.js';
import { notFoundError, withTarget } from '../run.js';

/** Options of `relock inspect`. */
export interface InspectOptions extends CommonOptions {
  type?: string;
  limit: number;
}

/** Most entries read per key by default (holders, waiters, permits). */
export const DEFAULT_LIMIT = 1000;

/**
 * `relock inspect <name>`: detects the object's type and prints its state (holders and hold counts,
 * TTL, fencing token, read-write mode with each hold's lease, free and taken permits with their leases,
 * the fair-lock queue with deadlines, the latch count, channel subscribers), warning about a lock without
 * TTL. Exit code 3 when the name shows no relock object.
 */
export const inspectCommand: CommandSpec<InspectOptions> = {
  name: 'inspect',
  description: 'show the state of a lock, semaphore or latch',
  argument: { name: 'name', description: 'the object name (as given to getLock, getSemaphore…, without --prefix)', required: true },
  options: [...COMMON_OPTIONS, TYPE_OPTION, { flags: '--limit <n>', description: 'read at most this many holders, waiters or permits per key', parse: wholeNumber(1), default: DEFAULT_LIMIT }],
  run(name, options) {
    return withTarget(options, async (target) => {
      const keys = objectKeys(target.locks, name);
      const { state, subs, detection } = await inspectObject(target.connection, keys, options.limit, forcedType(options.type));
      if (detection.found !== 'object') {
        const error = notFoundError(keys, detection);
        if (options.json) printJson({ name, key: keys.main, found: false, reason: error.message });
        throw error;
      }
      const description = await describe(target.connection, state, detection.type, subs);
      if (options.json) {
        printJson(description);
      } else {
        printLines(renderDescription(description));
        printWarnings(description.warnings);
      }
      return EXIT.ok;
    });
  },
};
