import { monotonic } from '../time.js';
import type { Connection } from './connection.js';
import type { Executor, RunOptions } from './executor.js';
import type { UnlockLatches } from './latches.js';
import { Script } from './script.js';

/**
 * Scripts of the counting synchronizers (semaphores, count-down latch): one argument layout, a
 * `publish()` helper, and retries made safe by a request latch.
 *
 * Every such script gets ARGV[1] = latch TTL (ms), ARGV[2] = '1' when the call is a retry, ARGV[3] = the
 * object's channel, ARGV[4] = the publish command; its own arguments start at ARGV[5]. A script built
 * with `replay: true` also gets a request latch as its last key (`relock:unlock:{name}:<requestId>`,
 * one per call, see `UnlockLatches`): a change that must not happen twice (a permit count moved, a
 * count-down) ends with `return answer(n)`, which stores the integer `n` in the latch, and a retry of the
 * same call after a lost reply returns the stored `n` instead of changing anything again. A reply that
 * changed nothing is returned directly and simply computed again by a retry.
 */
export class ObjectScript extends Script {
  constructor(
    name: string,
    body: string,
    /** Whether the script ends its changes with `answer(n)` and takes a request latch as its last key. */
    readonly replay: boolean,
  ) {
    super(name, (replay ? PUBLISH + REPLAY : PUBLISH) + body);
  }
}

const PUBLISH = `local function publish(message)
  redis.call(ARGV[4], ARGV[3], message)
end
`;

const REPLAY = `local latch = KEYS[#KEYS]
if ARGV[2] == '1' then
  local replay = redis.call('get', latch)
  if replay then return tonumber(replay) end
end
local function answer(result)
  redis.call('set', latch, result, 'px', ARGV[1])
  return result
end
`;

/** Options of `runObjectScript`: those of `Executor.run` (always idempotent), and a send hook. */
export type ObjectRunOptions = Omit<RunOptions<unknown>, 'idempotent'> & {
  /** Called with the monotonic time just before each attempt is sent (a lease counts from there). */
  onSend?: (at: number) => void;
};

/** What `runObjectScript` uses of the object's client (a `Core` is one). */
export interface ObjectScriptHost {
  readonly connection: Connection;
  readonly executor: Executor;
  readonly latches: UnlockLatches;
  /** Throws `ClientClosedError` after `shutdown()`. */
  checkOpen(): void;
}

/**
 * Runs `script` on `keys` (the object's main key first) with the layout above, retrying through the
 * executor: scripts with `replay` are idempotent through their latch, the others are idempotent by
 * design. The latch, if any, is deleted in the next batch once the call returned.
 */
export async function runObjectScript(
  core: ObjectScriptHost,
  operation: string,
  script: ObjectScript,
  keys: readonly string[],
  channel: string,
  args: readonly string[],
  options: ObjectRunOptions = {},
): Promise<unknown> {
  const { connection, executor, latches } = core;
  core.checkOpen();
  const latch = script.replay ? latches.next(latches.prefix(keys[0])) : undefined;
  const allKeys = latch === undefined ? keys : [...keys, latch];
  const { onSend, ...runOptions } = options;
  try {
    return await executor.run(
      operation,
      (attempt) => {
        onSend?.(monotonic());
        return script.run(connection, allKeys, [latches.ttlArg, attempt > 1 ? '1' : '0', channel, connection.publishCommand, ...args]);
      },
      { ...runOptions, idempotent: true },
    );
  } finally {
    if (latch !== undefined) latches.release(latch);
  }
}
