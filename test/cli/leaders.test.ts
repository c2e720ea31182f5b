/**
 * `relock inspect` and `relock leaders` on leader elections (issue 32), and `relock inspect` on a job lock,
 * run as child processes against a real Redis: the leader's identity, term and lease, from the descriptors.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { json, runCli, useCliHarness } from '../support/cli.js';
import { lockClient, uniqueName, type Redis } from '../support/helpers.js';
import type { RedisServer } from '../support/redis.js';

const harness = useCliHarness();
let server: RedisServer;
let redis: Redis;
beforeAll(() => {
  ({ server, redis } = harness);
});

describe('relock leaders / inspect on elections', () => {
  it('inspect shows the leader, its term and lease; leaders lists every election, led or not', async () => {
    const client = lockClient(redis);
    const led = uniqueName('cli-elect');
    const idle = uniqueName('cli-elect');
    const leadership = await client.getLeaderElection(led, { identity: 'worker-7' }).campaign();
    await (await client.getLeaderElection(idle).campaign()).resign();
    const described = await runCli(['inspect', led, '--json', '--url', server.url]);
    expect(described.code).toBe(0);
    const d = json(described) as Record<string, any>;
    expect(d).toMatchObject({ type: 'leader-election', exists: true, leader: { identity: 'worker-7', term: String(leadership.term) }, term: String(leadership.term) });
    expect(d.leader.remainingMs).toBeGreaterThan(0);
    // The leader's hold, its owner → hold count: the election's own fields (leader, term) are not holders.
    expect(d.holders).toEqual([{ owner: expect.stringMatching(/^[^:]+:\d+$/), holds: 1 }]);
    const text = await runCli(['inspect', led, '--url', server.url]);
    expect(text.stdout).toMatch(/leader\s+worker-7, term 1, lease/);
    const idleDescribed = json(await runCli(['inspect', idle, '--json', '--url', server.url])) as Record<string, any>;
    expect(idleDescribed).toMatchObject({ type: 'leader-election', exists: false, term: '1' });
    const leaders = await runCli(['leaders', 'cli-elect*', '--json', '--url', server.url]);
    expect(leaders.code).toBe(0);
    const rows = (json(leaders) as { elections: Array<Record<string, unknown>> }).elections;
    expect(rows).toEqual(expect.arrayContaining([
      expect.objectContaining({ name: led, leader: 'worker-7', term: String(leadership.term) }),
      expect.objectContaining({ name: idle, leader: null, term: null, lastTerm: '1' }),
    ]));
    const table = await runCli(['leaders', '--url', server.url]);
    expect(table.stdout).toMatch(new RegExp(`${led}\\s+worker-7\\s+term 1`));
    await leadership.resign();
  }, 150_000);

  it('inspect describes a job lock left to expire by atLeastMs', async () => {
    const name = uniqueName('cli-job');
    await lockClient(redis).runExclusive(name, () => undefined, { atMostMs: 60_000, atLeastMs: 30_000 });
    const d = json(await runCli(['inspect', name, '--json', '--url', server.url])) as Record<string, any>;
    expect(d).toMatchObject({ type: 'job-lock', exists: true });
    expect(d.ttlMs).toBeLessThanOrEqual(30_000);
    expect(d.holders).toHaveLength(1);
  }, 60_000);
});
