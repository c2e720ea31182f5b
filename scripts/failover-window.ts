/**
 * Measures what a failover does to a held lock (`npm run failover-window`, `--runs N`, `--json`):
 * on a primary + replica + Sentinel set with replication cut and the primary killed, how long Sentinel
 * takes to promote the replica, whether a second client gets the lock the first still believes it holds
 * (a double grant), and for how long both believe it (until the first client's watchdog reports the
 * loss); with and without `syncReplicas`. Also the cost of `syncReplicas` per acquisition with healthy
 * replication. The figures go into docs/topologies.md.
 */
import { createLockClient, type LockClient } from '../src/index.js';
import { startSentinel } from '../test/support/sentinel.js';

const argv = process.argv.slice(2);
const runs = Number(argv[argv.indexOf('--runs') + 1]) || 3;
const json = argv.includes('--json');
const LEASE = 30_000; // relock's default lockWatchdogTimeout

interface Run {
  syncReplicas: boolean;
  firstAcquired: boolean;
  failoverMs: number;
  doubleGrant: boolean;
  bothBelieveMs: number | null;
}

async function once(syncReplicas: boolean): Promise<Run> {
  const setup = await startSentinel();
  const clients: LockClient[] = [];
  const make = async (): Promise<LockClient> => {
    const c = createLockClient({ redis: await setup.connect(), lockWatchdogTimeout: LEASE, syncReplicas: syncReplicas ? { timeout: 200 } : false, retry: { retries: 1, minTimeout: 10, maxTimeout: 20 } });
    clients.push(c);
    return c;
  };
  try {
    const a = await make();
    let lostAt: number | undefined;
    a.on('lockLost', () => (lostAt ??= performance.now()));
    setup.replication.mode = 'blackhole';
    const name = `window:${syncReplicas}`;
    const firstAcquired = await a.getLock(name).tryLock(0, 'ms').catch(() => false);
    const killedAt = performance.now();
    await setup.primary.kill();
    await setup.waitForPrimary(setup.replica.port, 30_000);
    const failoverMs = performance.now() - killedAt;
    const b = await make();
    const bAcquired = await b.getLock(name).tryLock(10, 5, 'seconds');
    const grantedAt = performance.now();
    const doubleGrant = firstAcquired && bAcquired && lostAt === undefined;
    let bothBelieveMs: number | null = null;
    if (doubleGrant) {
      const deadline = performance.now() + LEASE;
      while (lostAt === undefined && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      bothBelieveMs = lostAt === undefined ? null : Math.round(lostAt - grantedAt);
    }
    return { syncReplicas, firstAcquired, failoverMs: Math.round(failoverMs), doubleGrant, bothBelieveMs };
  } finally {
    await Promise.all(clients.map((c) => c.shutdown()));
    await setup.stop();
  }
}

async function waitCost(): Promise<{ withoutMs: number; withMs: number }> {
  const setup = await startSentinel();
  try {
    const redis = await setup.connect();
    const measure = async (syncReplicas: boolean): Promise<number> => {
      const c = createLockClient({ redis, syncReplicas });
      const lock = c.getLock(`cost:${syncReplicas}`);
      const samples: number[] = [];
      for (let i = 0; i < 300; i++) {
        const t = performance.now();
        await lock.tryLock(0, 5, 'seconds');
        samples.push(performance.now() - t);
        await lock.unlock();
      }
      await c.shutdown();
      samples.sort((x, y) => x - y);
      return Math.round(samples[150] * 1000) / 1000;
    };
    return { withoutMs: await measure(false), withMs: await measure(true) };
  } finally {
    await setup.stop();
  }
}

const results: Run[] = [];
for (const sync of [false, true]) for (let i = 0; i < runs; i++) results.push(await once(sync));
const cost = await waitCost();
const summary = [false, true].map((sync) => {
  const rs = results.filter((r) => r.syncReplicas === sync);
  const windows = rs.map((r) => r.bothBelieveMs).filter((w): w is number => w !== null);
  return {
    syncReplicas: sync,
    runs: rs.length,
    firstAcquireSucceeded: rs.filter((r) => r.firstAcquired).length,
    doubleGrants: rs.filter((r) => r.doubleGrant).length,
    failoverMsMedian: median(rs.map((r) => r.failoverMs)),
    bothBelieveMsMax: windows.length ? Math.max(...windows) : null,
    acquireP50Ms: sync ? cost.withMs : cost.withoutMs,
  };
});
if (json) for (const row of summary) console.log(JSON.stringify(row));
else {
  console.log(`Sentinel failover with replication cut, lease ${LEASE} ms, ${runs} runs each (${new Date().toISOString()})`);
  console.table(summary);
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)];
}
