/**
 * The semaphore demo (`npm run demo:semaphore`): the check an operator would run by hand on an
 * `RPermitExpirableSemaphore` with a limit of 2.
 *  1. Five concurrent acquirers with a lease: exactly two get a permit, three are refused.
 *  2. The sorted set in Redis: its cardinality, each permit's score next to "now + lease" (Redis server
 *     time), and the key's PTTL.
 *  3. Releasing one permit brings the cardinality to 1.
 *  4. A holder in another process takes the free permit with a short lease and is killed with SIGKILL
 *     without releasing: its permit is reclaimed once its lease has passed, not before.
 * `--json` prints one JSON summary line. Uses REDIS_URL, or starts (and stops) a local redis-server.
 */
import { fork } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import { createLockClient } from '../src/index.js';
import { startRedis } from '../test/support/redis.js';
import type { HolderTask } from './semaphore-demo/holder.js';

const json = process.argv.slice(2).includes('--json');
const LIMIT = 2;
const ACQUIRERS = 5;
const LEASE_MS = 10_000;
const CRASH_LEASE_MS = 1500;
const log = (line = ''): void => void (json || console.log(line));

const server = await startRedis();
const redis = createClient({ url: server.url });
redis.on('error', () => {});
await redis.connect();
const client = createLockClient({ redis });
const name = `demo:semaphore:${Date.now().toString(36)}`;
const semaphore = client.getPermitExpirableSemaphore(name);

/** Redis server time in ms: the clock the permit expiries use. */
const serverNow = async (): Promise<number> => {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
};

try {
  await semaphore.setPermits(LIMIT);
  log(`Semaphore "${name}": limit ${LIMIT}, ${ACQUIRERS} concurrent acquirers, lease ${LEASE_MS} ms each\n`);

  // 1. Five concurrent acquirers, one attempt each.
  const acquiredAt = await serverNow();
  const attempts = await Promise.all(Array.from({ length: ACQUIRERS }, () => client.getPermitExpirableSemaphore(name).tryAcquire(0, LEASE_MS, 'ms')));
  const granted = attempts.filter((id): id is string => id !== undefined);
  const refused = attempts.length - granted.length;
  log(`granted: ${granted.length}, refused: ${refused}`);

  // 2. What Redis holds.
  const cardinality = await redis.zCard(name);
  const permits = await redis.zRangeWithScores(name, 0, -1);
  const pttlMs = await redis.pTTL(name);
  log(`\nZCARD ${name} = ${cardinality}`);
  for (const { value, score } of permits) {
    log(`  permit ${value}: score ${score}   (now + lease at the acquisition ≈ ${acquiredAt + LEASE_MS}, ${score - acquiredAt - LEASE_MS >= 0 ? '+' : ''}${score - acquiredAt - LEASE_MS} ms)`);
  }
  log(`PTTL ${name} = ${pttlMs} ms`);

  // 3. Release one.
  await semaphore.release(granted[0]);
  const afterReleaseCardinality = await redis.zCard(name);
  log(`\nreleased ${granted[0]} → ZCARD = ${afterReleaseCardinality}`);

  // 4. A holder in another process takes the free permit and is killed without releasing.
  const here = dirname(fileURLToPath(import.meta.url));
  const holder = fork(join(here, 'semaphore-demo', 'holder.ts'), { execArgv: ['--import', 'tsx'] });
  const task: HolderTask = { url: server.url, name, leaseMs: CRASH_LEASE_MS };
  holder.send(task);
  const reply = await new Promise<{ id?: string | null; error?: string }>((resolve) => holder.once('message', resolve));
  if (!reply.id) throw new Error(`the holder process got no permit: ${reply.error ?? 'refused'}`);
  const crashedExpiry = (await redis.zScore(name, reply.id))!;
  const exited = new Promise((resolve) => holder.once('exit', resolve));
  holder.kill('SIGKILL');
  await exited;
  log(`\nholder process ${holder.pid} took ${reply.id} with a ${CRASH_LEASE_MS} ms lease (expires at ${crashedExpiry}) and was killed with SIGKILL`);
  const refusedWhileLeased = (await semaphore.tryAcquire(0, LEASE_MS, 'ms')) === undefined;
  log(`  right after the crash: ${refusedWhileLeased ? 'refused (the dead holder\'s lease still runs)' : 'GRANTED (wrong: its lease still runs)'}`);
  const waitStarted = performance.now();
  const reclaimed = await semaphore.tryAcquire(5000, LEASE_MS, 'ms');
  const waitedMs = Math.round(performance.now() - waitStarted);
  const grantedAt = reclaimed === undefined ? undefined : (await redis.zScore(name, reclaimed))! - LEASE_MS;
  const reclaimedAfterCrash =
    refusedWhileLeased && grantedAt !== undefined && grantedAt >= crashedExpiry && (await redis.zScore(name, reply.id)) === null;
  log(
    reclaimed === undefined
      ? '  not reclaimed within 5 s'
      : `  a waiter got it after ${waitedMs} ms, at server time ${grantedAt} (${grantedAt! - crashedExpiry} ms after the dead holder's expiry)`,
  );

  const summary = { granted: granted.length, refused, cardinality, pttlMs, afterReleaseCardinality, reclaimedAfterCrash, reclaimWaitMs: waitedMs, leaseMs: LEASE_MS, crashLeaseMs: CRASH_LEASE_MS };
  if (json) console.log(JSON.stringify(summary));
  else {
    const ok = granted.length === LIMIT && refused === ACQUIRERS - LIMIT && pttlMs > 0 && afterReleaseCardinality === 1 && reclaimedAfterCrash;
    log(`\n${ok ? 'OK: at most 2 at once, expiries in Redis server time, a crashed holder\'s permit came back after its lease.' : 'FAILURE: see above.'}`);
  }
} finally {
  await redis.del([name, semaphore.permitsKey]);
  await client.shutdown();
  await redis.close();
  await server.stop();
}
