/**
 * A Sentinel failover with the replication link cut, with and without `syncReplicas`. It runs in this
 * process (an `InProcessScenario`): each run starts its own primary, replica (replicating through a
 * proxy) and Sentinel with test/support/sentinel.ts, and two lock clients, A and B, on it.
 *
 * A run: replication is cut (the proxy blackholes it), A (a client through Sentinel) acquires a lock
 * (its grant never reaches the replica), the primary is SIGKILLed, Sentinel promotes the replica, and B
 * acquires the same lock there. B talks to the promoted replica directly, as a client whose Sentinel
 * client switched first would: a node-redis Sentinel client takes a second or more to switch, so with B
 * on one too, who switches first would be a coin toss. Without `syncReplicas` B gets the lock: a double
 * grant while A still believes it holds it, expected (the window asynchronous replication leaves,
 * docs/topologies.md), until A's client sees the failover and A is told (its handle's signal aborts
 * with a LockLostError). With it, A's acquire must fail with NoSyncedReplicasError and leave no key, so
 * B's grant is the only one: a double grant there is an unexpected overlap.
 */
import { randomBytes } from 'node:crypto';
import { createLockClient, LockHandle, NoSyncedReplicasError, type LockClient, type LockClientOptions } from '../../../src/index.js';
import { waitUntil } from '../../../test/support/helpers.js';
import { MASTER_NAME, startSentinel, type SentinelSetup } from '../../../test/support/sentinel.js';
import { detectionBoundMs } from '../checkers/causes.js';
import { openSentinelClient, type FaultClient, type UserClient } from '../clients.js';
import { now } from '../history.js';
import { onCleanup } from '../processes.js';
import type { ScenarioResult } from '../result.js';
import type { InProcessScenario } from '../scenario.js';
import { max, quantile, round } from '../stats.js';

/** A's watchdog lease: longer than a failover, so that A still holds the lock when the replica is promoted. */
const LEASE_MS = 10_000;
/** `syncReplicas.timeout`: generous, the replica's acknowledgements pass through the proxy on this busy event loop. */
const SYNC_TIMEOUT_MS = 1000;
/** How long B waits for the lock on the promoted replica. */
const B_WAIT_MS = 10_000;
/**
 * The bound on A's loss detection, from the promotion (Sentinel reports the replica as the primary, which
 * it does once it switched, when it also tells its clients with `+switch-master`): A's Sentinel client
 * moves its connection to the new primary (the reconnect allowance of a restart: test/support/sentinel.ts
 * reconnects within 200 ms, and the promotion is polled every 100 ms), then A's next renewal there finds
 * the key gone, within one watchdog interval plus the usual slack (`detectionBoundMs`, as after a restart).
 */
const LOSS_DETECTION_BOUND_MS = detectionBoundMs(LEASE_MS, true);

/** What one run saw. Times in ms. */
interface Outcome {
  sync: boolean;
  /** A's acquire: granted, or the error's name. */
  a: string;
  /** B was granted the lock while A's handle had not been told it was lost. */
  doubleGrant: boolean;
  /** From B's grant to A being told (a double grant's length). */
  overlapMs?: number;
  /** From the primary's kill to B's grant (undefined: B never got it). */
  recoveryMs?: number;
  /** From the promotion to A being told (its belief outlived the lock by this much). */
  toldMs?: number;
  /** From the kill to Sentinel reporting the replica as the primary. */
  failoverMs: number;
  /** Lock keys, watchdog holds and subscriptions left after both released. */
  leaks: number;
  violations: string[];
}

interface Clients {
  /** A client through Sentinel. */
  a(options: Omit<LockClientOptions, 'redis' | 'url'>): Promise<LockClient>;
  /** A client of the replica (the promoted one). */
  b(): LockClient;
}

/** One run on its own servers, stopped (with the clients) whatever happens; A's client is of the `client` family. */
async function failoverRun(sync: boolean, client: FaultClient): Promise<Outcome> {
  const setup = await startSentinel();
  const unregister = onCleanup(() => setup.stop());
  const clients: LockClient[] = [];
  const users: UserClient[] = [];
  const track = (lockClient: LockClient): LockClient => (clients.push(lockClient), lockClient);
  /** A's Sentinel client: node-redis's (closed by `setup.stop()`), or an ioredis/iovalkey one with `sentinels`. */
  const sentinelClient = async (): Promise<object> => {
    if (client === 'node-redis' || client === 'glide') return setup.connect();
    const user = await openSentinelClient(client, MASTER_NAME, setup.sentinelPort);
    users.push(user);
    return user.options.redis!;
  };
  try {
    return await cutAndFailOver(setup, sync, {
      a: async (options) => track(createLockClient({ redis: await sentinelClient(), lockWatchdogTimeout: LEASE_MS, ...options })),
      b: () => track(createLockClient({ url: setup.replica.url })),
    });
  } finally {
    await Promise.all(clients.map((c) => c.shutdown()));
    await Promise.all(users.map((u) => u.close()));
    await setup.stop();
    unregister();
  }
}

async function cutAndFailOver(setup: SentinelSetup, sync: boolean, clients: Clients): Promise<Outcome> {
  const violations: string[] = [];
  const name = `faults:sentinel:${randomBytes(3).toString('hex')}`;
  const a = await clients.a(sync ? { syncReplicas: { timeout: SYNC_TIMEOUT_MS }, retry: { retries: 1, minTimeout: 10, maxTimeout: 20 } } : {});
  // Replication works before the cut (and A's client has seen that the primary has a replica).
  if (sync) await (await a.getLock(`${name}:before-cut`).acquire({ waitMs: 0 })).release();
  setup.replication.mode = 'blackhole';
  const outcome = await a.getLock(name).acquire({ waitMs: 0 }).catch((error: unknown) => error as Error);
  const held = outcome instanceof LockHandle ? outcome : undefined;
  let toldAt: number | undefined;
  held?.signal.addEventListener('abort', () => (toldAt = now()), { once: true });
  if (!held && !sync) throw outcome;
  if (sync && held) violations.push('with syncReplicas A was granted the lock although no replica could acknowledge it');
  if (sync && !held && !(outcome instanceof NoSyncedReplicasError)) violations.push(`A's acquire failed with ${(outcome as Error).name} instead of NoSyncedReplicasError`);
  if (sync && !held && (await a.getLock(name).isLocked())) violations.push("A's refused acquire left the lock's key on the primary");

  const killed = now();
  await setup.primary.kill();
  await setup.waitForPrimary(setup.replica.port);
  const promoted = now();
  const b = clients.b();
  const granted = await b.getLock(name).acquire({ waitMs: B_WAIT_MS }).catch(() => undefined);
  const grantedAt = now();
  const doubleGrant = granted !== undefined && held !== undefined && !held.signal.aborted;
  if (!granted) violations.push(`B did not get the lock on the promoted replica within ${B_WAIT_MS} ms`);
  if (held) {
    await waitUntil(() => held.signal.aborted, 3 * LEASE_MS, 10, 'A to be told').catch(() => violations.push(`A was not told its lock was lost within ${3 * LEASE_MS} ms of the promotion`));
    const reason = held.signal.reason as Error | undefined;
    if (reason && reason.name !== 'LockLostError') violations.push(`A's handle aborted with ${reason.name}, not LockLostError`);
  }
  await granted?.release();
  await held?.release().catch(() => {}); // lost: the release reports it
  return {
    sync,
    a: held ? 'granted' : (outcome as Error).name,
    doubleGrant,
    overlapMs: doubleGrant && toldAt !== undefined ? round(toldAt - grantedAt) : undefined,
    recoveryMs: granted ? round(grantedAt - killed) : undefined,
    toldMs: toldAt !== undefined ? round(toldAt - promoted) : undefined,
    failoverMs: round(promoted - killed),
    leaks: await leftovers(b, name, [a, b]),
    violations,
  };
}

/** The lock's key if still there, plus the watchdog holds and subscriptions the clients keep (after 2 s to let them go). */
async function leftovers(client: LockClient, name: string, clients: LockClient[]): Promise<number> {
  const count = (): number => clients.reduce((n, c) => n + c.stats().watchdogHolds + c.stats().subscriptions, 0);
  await waitUntil(() => count() === 0, 2000, 20).catch(() => {});
  return count() + ((await client.getLock(name).isLocked()) ? 1 : 0);
}

/** The result's figures from the runs done so far. */
function summarize(result: ScenarioResult, outcomes: readonly Outcome[]): void {
  const values = (list: readonly Outcome[], pick: (o: Outcome) => number | undefined): number[] => list.map(pick).filter((v) => v !== undefined);
  const without = outcomes.filter((o) => !o.sync);
  const withSync = outcomes.filter((o) => o.sync);
  const expected = without.filter((o) => o.doubleGrant);
  const unexpected = withSync.filter((o) => o.doubleGrant);
  const recoveries = values(outcomes, (o) => o.recoveryMs);
  const told = values(outcomes, (o) => o.toldMs);
  // A holder (A granted) told later than the bound after the promotion, or never told, is a late detection.
  const late = outcomes.filter((o) => o.a === 'granted' && (o.toldMs === undefined || o.toldMs > LOSS_DETECTION_BOUND_MS)).length;
  Object.assign(result, {
    runs: outcomes.length,
    faultsInjected: 2 * outcomes.length, // the replication cut and the primary's kill
    sections: outcomes.reduce((n, o) => n + (o.a === 'granted' ? 1 : 0) + (o.recoveryMs === undefined ? 0 : 1), 0),
    expectedOverlaps: expected.length,
    maxExpectedOverlapMs: max(values(expected, (o) => o.overlapMs)),
    excusedOverlapMs: round(values(expected, (o) => o.overlapMs).reduce((a, b) => a + b, 0)),
    causes: expected.length > 0 ? { 'unreplicated-failover': expected.length } : {},
    unexpectedOverlaps: unexpected.length,
    maxUnexpectedOverlapMs: max(values(unexpected, (o) => o.overlapMs)),
    maxOccupancy: outcomes.some((o) => o.doubleGrant) ? 2 : recoveries.length > 0 ? 1 : 0,
    recoveryP50Ms: quantile(recoveries, 0.5),
    recoveryP99Ms: quantile(recoveries, 0.99),
    recoveryMaxMs: max(recoveries),
    unrecovered: outcomes.length - recoveries.length,
    losses: told.length,
    lossDetectionMs: quantile(told, 0.5),
    lossDetectionMaxMs: max(told),
    lossDetectionBoundMs: LOSS_DETECTION_BOUND_MS,
    lateDetections: late,
    leaks: outcomes.reduce((n, o) => n + o.leaks, 0),
  } satisfies Partial<ScenarioResult>);
  result.acquireErrors = {};
  for (const o of outcomes) if (o.a !== 'granted') result.acquireErrors[o.a] = (result.acquireErrors[o.a] ?? 0) + 1;
  result.extra = {
    failoverMs: values(outcomes, (o) => o.failoverMs),
    withoutSyncReplicas: {
      runs: without.length,
      /** B got the lock A was granted (whether A had been told by then or not). */
      grantedAgain: without.filter((o) => o.a === 'granted' && o.recoveryMs !== undefined).length,
      doubleGrants: expected.length,
      beliefAfterPromotionMs: values(without, (o) => o.toldMs),
      doubleGrantMs: values(expected, (o) => o.overlapMs),
    },
    withSyncReplicas: { runs: withSync.length, acquiresRefused: withSync.filter((o) => o.a !== 'granted').length, doubleGrants: unexpected.length },
  };
  result.violations.push(...outcomes.flatMap((o) => o.violations.map((v) => `${o.sync ? 'with' : 'without'} syncReplicas: ${v}`)));
}

export const sentinelFailover: InProcessScenario = {
  name: 'sentinel-failover',
  title: `Sentinel failover with the replication link cut: A acquires through Sentinel, the primary is SIGKILLed, B acquires on the promoted replica (connected to it directly); ` +
    `without and with syncReplicas (timeout ${SYNC_TIMEOUT_MS} ms)`,
  expect:
    'without syncReplicas a double grant per run unless A was told first (cause unreplicated-failover: the grant never reached the replica), lasting until A\'s client sees the failover and A is told ' +
    `(loss detection: from the promotion to A being told, at most ${LOSS_DETECTION_BOUND_MS} ms: A's client reconnects to the new primary, then its next renewal finds the key gone); ` +
    'with syncReplicas none (A\'s acquire fails with NoSyncedReplicasError and leaves no key), any is unexpected. ' +
    'Recovery: from the kill to B\'s grant',
  skip: (client) => (client === 'glide' ? 'Valkey GLIDE 2 has no Sentinel support' : undefined),
  async runInProcess(quick, result, progress, client) {
    result.leaseMs = LEASE_MS;
    const outcomes: Outcome[] = [];
    try {
      for (const sync of [false, true]) {
        for (let i = 0; i < (quick ? 1 : 5); i++) {
          const outcome = await failoverRun(sync, client);
          outcomes.push(outcome);
          progress(`  ${sync ? 'with' : 'without'} syncReplicas: A ${outcome.a}, failover ${outcome.failoverMs} ms, B ${outcome.recoveryMs === undefined ? 'not granted' : 'granted'}${outcome.doubleGrant ? `, double grant for ${outcome.overlapMs} ms` : ''}`);
        }
      }
    } finally {
      summarize(result, outcomes);
    }
  },
};
