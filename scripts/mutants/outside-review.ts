/**
 * Catalogue entries for the gaps an outside reviewer found (issue 28, item 5): mechanisms whose removal
 * the jest suite did not notice until these tests were written. Each entry names the test written for it;
 * `catalogue.ts` appends them to `CATALOGUE`.
 */
import type { CatalogueEntry } from './entry.js';

const WATCHDOG = 'test/lock/watchdog.test.ts';
const OTEL = 'test/observe/otel.test.ts';

export const OUTSIDE_REVIEW: readonly CatalogueEntry[] = [
  {
    id: 'watchdog-renewal-from-send',
    mechanism: "the watchdog dates a hold's local deadline from the renewal's send, not its reply (a holder cut off after a slow renewal is told before its key can expire)",
    file: 'src/watchdog/watchdog.ts',
    find: 'renewal.deadline = sentAt + this.leaseMs - this.driftMs;',
    replace: 'renewal.deadline = now + this.leaseMs - this.driftMs;',
    tests: [WATCHDOG],
    pattern: "^watchdog: a grant or renewal whose reply is late dates the local deadline from the renewal's send",
  },
  {
    id: 'watchdog-grant-from-send',
    mechanism: "the watchdog dates a new hold's local deadline from the granting attempt's send, not from the confirmation",
    file: 'src/watchdog/watchdog.ts',
    find: 'renewal.deadline = Math.max(renewal.deadline, sentAt + this.leaseMs - this.driftMs);',
    replace: 'renewal.deadline = Math.max(renewal.deadline, monotonic() + this.leaseMs - this.driftMs);',
    tests: [WATCHDOG],
    pattern: "^watchdog: a grant or renewal whose reply is late dates the local deadline from the acquisition's send",
  },
  {
    id: 'waiter-passes-held-budget',
    mechanism: 'a first waiter that leaves (abort, timeout) hands the budget held back for it to the waiters behind it (a multi-permit waiter strands no permits)',
    file: 'src/pubsub/channel.ts',
    find: '    if (i === 0 && this.held > 0) this.wake(this.held);\n',
    replace: '',
    tests: ['test/semaphore/giving-up.test.ts'],
  },
  {
    id: 'waiter-passes-wakeup',
    mechanism: 'a waiter woken by a message that gives up before its attempt runs passes the wake-up on to the next local waiter',
    file: 'src/pubsub/wait.ts',
    find: '    if (woken) channel.wake(place.need);\n',
    replace: '',
    tests: ['test/pubsub/channels.test.ts'],
    pattern: '^channels a waiter woken by a message that gives up',
  },
  {
    id: 'held-drops-reentrant',
    mechanism: 'a lost reentrant hold leaves relock.held with all its holds (hold count 2: minus 2)',
    file: 'src/observe/observer.ts',
    find: 'this.meter((otel) => otel.held.add(-hold.count, attributesOf(hold.kind)));',
    replace: 'this.meter((otel) => otel.held.add(-1, attributesOf(hold.kind)));',
    tests: [OTEL],
    pattern: '^OpenTelemetry a reentrant hold',
  },
  {
    id: 'held-drops-not-held',
    mechanism: 'an unlock refused with IllegalMonitorStateError (lease ran out) drops every counted hold of the owner from relock.held, not one',
    file: 'src/observe/observer.ts',
    find: 'if (error instanceof IllegalMonitorStateError) for (const holder of list(holders)) this.drop(`${key} ${holder}`);',
    replace: 'if (error instanceof IllegalMonitorStateError) for (const holder of list(holders)) this.unheld(kind, `${key} ${holder}`, message);',
    tests: [OTEL],
    pattern: '^OpenTelemetry a reentrant hold',
  },
  {
    id: 'permit-retry-checks-id',
    mechanism: "an expirable-permit acquire retried after a first attempt that did not run takes the permits (the retry checks its first id exists), never hands out ids Redis does not have",
    file: 'src/permit-expirable-semaphore/scripts.ts',
    find: "local retried = retry == '1' and redis.call('zscore', permits, idOf(1))",
    replace: "local retried = retry == '1'",
    tests: ['test/permit-expirable-semaphore/first-attempt.test.ts'],
  },
  {
    id: 'read-write-unlock-longest-lease',
    mechanism: "a read-write unlock sets the lock's TTL from the longest remaining lease (no writer while a longer-lease reader holds)",
    file: 'src/read-write-lock/scripts.ts',
    find: "local top = redis.call('zrange', leases, -1, -1, 'withscores')",
    replace: "local top = redis.call('zrange', leases, 0, 0, 'withscores')",
    tests: ['test/read-write-lock/read-write-lock.test.ts'],
    pattern: "^RReadWriteLock leases and the watchdog a reader's unlock keeps the lock alive",
  },
];
