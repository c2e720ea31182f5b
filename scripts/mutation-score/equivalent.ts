/**
 * Mutants triaged equivalent (docs/reliability.md, "Sampled mutation score"): no input tells them apart
 * from the code, so they are set apart before the draw, as Stryker's `// Stryker disable` comments would
 * set them apart, but one mutant at a time (a disable comment names a mutator for a whole line, and
 * these lines hold other mutants of the same mutator that are not equivalent). Each is matched by file,
 * mutator, the code it replaces, its replacement and the source line it is on (trimmed), so it follows its
 * code when lines move; an entry
 * that matches no mutant, or more than one, fails test/mutation-score/sample.test.ts.
 */
export interface Equivalent {
  readonly file: string;
  readonly mutatorName: string;
  /** The code the mutant replaces, whitespace collapsed (as `originalText` reads it). */
  readonly original: string;
  /** The source line the mutant starts on, trimmed. */
  readonly line: string;
  readonly replacement: string;
  /** Why no input can tell it apart: one line, for the triage table. */
  readonly reason: string;
}

/**
 * Two readings of the monotonic clock (`performance.now()`, a double) compared with `<` or `<=`: the
 * mutant differs only when a reading equals the bound to the last bit, where either answer is right.
 */
const CLOCK_BOUNDARY = 'differs only when a performance.now() reading equals the bound to the last bit of a double, an instant at which either answer is right';

export const EQUIVALENT: readonly Equivalent[] = [
  {
    file: 'src/redis/executor.ts',
    mutatorName: 'BooleanLiteral',
    original: 'true',
    line: "if (signal) signal.addEventListener('abort', call, { once: true });",
    replacement: 'false',
    reason: "an attempt's abort listener kept after it fires: InFlight.settle() removes it on every path that settles the attempt, the abort's own included (handleEvent → giveUp → settle), and a signal aborts once",
  },
  {
    file: 'src/redis/executor.ts',
    mutatorName: 'BooleanLiteral',
    original: 'false',
    line: 'if (options.signal?.aborted) return false;',
    replacement: 'true',
    reason: 'an aborted call counted retryable: p-retry checks the signal before every attempt and in every delay, and translate() answers the signal\'s reason for an aborted call whatever the error',
  },
  {
    file: 'src/job-lock/job-lock.ts',
    mutatorName: 'ObjectLiteral',
    original: '{ once: true }',
    line: "hold.signal.addEventListener('abort', stop, { once: true });",
    replacement: '{}',
    reason: "the hold signal's listener kept after it fires: the run's finally removes it on every path once fn settles (returned or thrown), and a signal aborts once",
  },
  {
    file: 'src/multi-lock/members.ts',
    mutatorName: 'ObjectLiteral',
    original: '{ once: true }',
    line: "for (const member of members) member.signal.addEventListener('abort', onMemberLost, { once: true });",
    replacement: '{}',
    reason: "a member signal's listener kept after it fires: a signal aborts once, so the listener never runs again, and the member's signal goes with its hold",
  },
  { file: 'src/lock/protocol/caller.ts', mutatorName: 'EqualityOperator', original: 'until > monotonic()', line: 'return ctx.holds.has(lock.holdKey) && until > monotonic() && (until < Infinity || lock.core.watchdog.renews(lock.key, lock.ownerOf(ctx)));', replacement: 'until >= monotonic()', reason: `${CLOCK_BOUNDARY}: the hold's lease ends at that instant` },
  {
    file: 'src/option-keys.ts',
    mutatorName: 'ConditionalExpression',
    original: 'b.length > 64',
    line: 'if (a.length > 64 || b.length > 64) return Math.max(a.length, b.length);',
    replacement: 'false',
    reason: 'b is a known option key, and none is over 22 characters (the longest property name in src/), so the condition is never true',
  },
  { file: 'src/lock/protocol/acquire.ts', mutatorName: 'EqualityOperator', original: 'mark.until <= started', line: 'if (mark && mark.until <= started) settle(ctx, holdKey);', replacement: 'mark.until < started', reason: CLOCK_BOUNDARY },
  {
    file: 'src/lock/protocol/undo.ts',
    mutatorName: 'EqualityOperator',
    original: 'mark.until > monotonic()',
    line: 'if (mark.until > monotonic()) void undo(lock, lock.ownerOf(ctx), mark.until);',
    replacement: 'mark.until >= monotonic()',
    reason: `${CLOCK_BOUNDARY}: the possible grant's lease ends at that instant, so the one unlock the mutant sends releases a hold at its last instant or finds none`,
  },
  { file: 'src/red-lock/red-lock.ts', mutatorName: 'EqualityOperator', original: 'validUntil > monotonic()', line: 'if (!signal?.aborted && held.length >= this.quorum && validUntil > monotonic()) return { holding: { held, grants }, validUntil, answered, unavailable, error: undefined };', replacement: 'validUntil >= monotonic()', reason: CLOCK_BOUNDARY },
  {
    file: 'src/watchdog/watchdog.ts',
    mutatorName: 'EqualityOperator',
    original: 'renewal.nextAt <= now',
    line: 'for (const renewal of this.retrying) if (renewal.nextAt <= now) due.push(renewal);',
    replacement: 'renewal.nextAt < now',
    reason: `${CLOCK_BOUNDARY}; on equality the renewal goes out on the timer's next turn, armed at once for its nextAt`,
  },
  {
    file: 'src/context.ts',
    mutatorName: 'BooleanLiteral',
    original: 'true',
    line: 'return (Array.isArray(flags) ? flags.at(-1) : flags) ?? true;',
    replacement: 'false',
    reason: 'a release with no hold record and no handle: the watchdog renews (key, owner) only from the registration before an acquisition is sent to its record or abandonment, and unlock first waits for the owner\'s acquisitions in flight, so Watchdog.release finds nothing either way, and recordReleased returns at once without a record',
  },
  {
    file: 'src/observe/otel.ts',
    mutatorName: 'ConditionalExpression',
    original: 'span.isRecording()',
    line: 'if (span.isRecording()) return false;',
    replacement: 'true',
    reason: 'passThrough always false: the call takes the measured path, recording into the no-op meter and tracer; same results and side effects, only slower',
  },
  {
    file: 'src/multi-lock/members.ts',
    mutatorName: 'ConditionalExpression',
    original: 'promises.length === 0',
    line: 'if (promises.length === 0) return Promise.resolve(results);',
    replacement: 'false',
    reason: 'no caller passes an empty list: settleWithin is internal, and a multi-lock or RedLock has at least one member (refused otherwise when it is made) and a hold or handle at least one granted member',
  },
  {
    file: 'src/redis/clients/node-redis.ts',
    mutatorName: 'ConditionalExpression',
    original: 'defaults[k] !== undefined',
    line: 'const overrides = defaults !== undefined && Object.keys(COMMAND_OPTIONS).some((k) => defaults[k] !== undefined);',
    replacement: 'true',
    reason: "relock's command options passed although the client's defaults set none of them: node-redis merges them over its defaults, and every one is undefined, as the defaults already have it; only a per-call object is added",
  },
];

/** The entry of `EQUIVALENT` that `m`, replacing `original` on the source line `line` (trimmed), is, if any. */
export function equivalentOf(m: { readonly file: string; readonly mutatorName: string; readonly replacement: string }, original: string, line: string): Equivalent | undefined {
  return EQUIVALENT.find((e) => e.file === m.file && e.mutatorName === m.mutatorName && e.replacement === m.replacement && e.original === original && e.line === line);
}
