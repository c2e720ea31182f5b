import { monotonic } from '../time.js';
import type { Connection } from './connection.js';
import type { Executor, RunOptions } from './executor.js';
import type { UnlockLatches } from './latches.js';
import { PUBLISH } from './lua.js';
import { TypedScript, type Names, type ScriptSpec, type ScriptValues } from './script.js';

/**
 * Scripts of the counting synchronizers (semaphores, count-down latch): arguments every such script
 * gets, a `publish()` helper, and retries made safe by a request latch.
 *
 * Every such script gets, before its own arguments, `latchTtl` (ms), `retry` ('1' when the call is a
 * retry), `channel` (the object's) and `publishCommand` (`PUBLISH`: `publish(message)`). A script built
 * with `replay: true` also gets a request latch as its last key, `requestLatch`
 * (`relock:unlock:{name}:<requestId>`, one per call, see `UnlockLatches`): a change that must not happen
 * twice (a permit count moved, a count-down) ends with `return answer(n)`, which stores the integer `n`
 * in the latch, and a retry of the same call after a lost reply returns the stored `n` instead of
 * changing anything again. A reply that changed nothing is returned directly and simply computed again by
 * a retry. `runObjectScript` fills all of these in.
 */
export class ObjectScript<V, R> extends TypedScript<V & ObjectFixed, R> {
  /** Whether the script ends its changes with `answer(n)` and takes a request latch as its last key. */
  readonly replay: boolean;
  /** The name of the object's main key (the script's first key). */
  private readonly main: string;

  constructor(spec: ScriptSpec<Names, Names, R, string> & { readonly replay: boolean }) {
    super({
      ...spec,
      keys: spec.replay ? [...spec.keys, 'requestLatch'] : spec.keys,
      args: [...OBJECT_ARGS, ...spec.args],
      lua: (spec.replay ? PUBLISH + REPLAY : PUBLISH) + spec.lua,
    });
    this.replay = spec.replay;
    this.main = spec.keys[0];
  }

  /** The object's main key among `values`: request latches are named after it. */
  mainKey(values: V): string {
    return (values as Readonly<Record<string, string>>)[this.main];
  }
}

const OBJECT_ARGS = ['latchTtl', 'retry', 'channel', 'publishCommand'] as const;

/** The values `runObjectScript` adds to a call of an `ObjectScript`. */
interface ObjectFixed {
  requestLatch?: string | undefined;
  latchTtl: string;
  retry: string;
  channel: string;
  publishCommand: string;
}

/**
 * Declares an `ObjectScript`: as `defineScript` (its own keys, the main key first, and arguments), plus
 * `replay` (see `ObjectScript`).
 */
export function defineObjectScript<const K extends Names, const A extends Names, R, const Rest extends string = never>(
  spec: ScriptSpec<K, A, R, Rest> & { readonly replay: boolean },
): ObjectScript<ScriptValues<K, A, Rest>, R> {
  return new ObjectScript(spec);
}

const REPLAY = `if retry == '1' then
  local replay = redis.call('get', requestLatch)
  if replay then return tonumber(replay) end
end
local function answer(result)
  redis.call('set', requestLatch, result, 'px', latchTtl)
  return result
end
`;

/** Options of `runObjectScript`: those of `Executor.run` (always idempotent), and a send hook. */
export type ObjectRunOptions<R = unknown> = Omit<RunOptions<R>, 'idempotent'> & {
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
 * Runs `script` with `values` (its own keys and arguments) on the object's `channel`, filling in the
 * arguments above, retrying through the executor: scripts with `replay` are idempotent through their
 * latch, the others are idempotent by design. The latch, if any, is deleted in the next batch once the
 * call returned.
 */
export async function runObjectScript<V, R>(core: ObjectScriptHost, operation: string, script: ObjectScript<V, R>, values: V, channel: string, options: ObjectRunOptions<R> = {}): Promise<R> {
  const { connection, executor, latches } = core;
  core.checkOpen();
  const requestLatch = script.replay ? latches.next(latches.prefix(script.mainKey(values))) : undefined;
  const all: V & ObjectFixed = { ...values, requestLatch, latchTtl: latches.ttlArg, retry: '0', channel, publishCommand: connection.publishCommand };
  const { onSend, ...runOptions } = options;
  try {
    return await executor.run(
      operation,
      (attempt) => {
        onSend?.(monotonic());
        all.retry = attempt > 1 ? '1' : '0';
        return script.run(connection, all);
      },
      { ...runOptions, idempotent: true },
    );
  } finally {
    if (requestLatch !== undefined) latches.release(requestLatch);
  }
}
