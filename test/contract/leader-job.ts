/**
 * Leader election and scheduled-job locks (issue 32) on a topology: run by every client family's files
 * (test/clients/), the standalone and Cluster contract files, the least-privilege ACL files (both scripting
 * modes) and Sentinel (test/sentinel/contract.test.ts).
 */
import { describe, expect, it } from '@jest/globals';
import type { LeaderChange, Leadership } from '../../src/index.js';
import type { Topology } from '../shared/topology.js';
import { uniqueName, waitUntil } from '../support/helpers.js';
import { probeReplies, stallTolerant } from '../support/stalls.js';

/** A name with a hash tag: its keys and channels are in one slot. */
const newName = (): string => `elect:{${uniqueName()}}`;

/** Registers the leader-election and runExclusive contract of the topology. */
export function leaderJobContractTests(topology: () => Topology): void {
  describe('leader election and scheduled jobs', () => {
    it('one leader at a time; resign hands over at once with a greater term; leader() and observe() follow', async () => {
      const t = topology();
      // The waiting campaign (subscribed to the release channel) takes over within ms of the resignation,
      // against a bound of 1,000 ms. CI's whole suite on Node 24 once took 1,109 ms here on Sentinel (stop
      // 41's second try, 2026-12-07), the clock started before the campaign had subscribed: the first
      // subscription of the file's Sentinel client opens its pub/sub connection (alone: 8.8 ms, 3.3 ms
      // once subscribed). `wokenBy` is not asserted: a release that lands while the campaign's attempt after
      // subscribing is in flight is retried at once and reported as 'timer'. A round that failed while this
      // process's loop or the election's node stalled past 400 ms (stallTolerant; probeReplies PINGs the
      // node of the name's slot) is repeated, up to 3 rounds, on a fresh name, its leaderships resigned;
      // without the release message the campaign waits for the leader's 5 s lease, every round.
      await stallTolerant(async (_, slowReply) => {
        const name = newName();
        const a = t.client({ lockWatchdogTimeout: 5_000 }).getLeaderElection(name, { identity: 'a' });
        const b = t.client().getLeaderElection(name, { identity: 'b' });
        const watching = new AbortController();
        const seen: LeaderChange[] = [];
        const observing = (async () => {
          for await (const change of t.client().getLeaderElection(name).observe({ signal: watching.signal })) seen.push(change);
        })();
        let first: Leadership | undefined;
        let second: Promise<Leadership> | undefined;
        const stop = probeReplies({ ping: () => t.command(name, ['PING']) }, slowReply);
        try {
          first = await a.campaign();
          await waitUntil(async () => seen.length === 1, 5000, 5, 'observe() to see the first leader');
          second = b.campaign();
          expect(await a.leader()).toMatchObject({ identity: 'a', term: first.term });
          const releases = t.client().getFencedLock(name).channel; // the election's lock's release channel
          await waitUntil(async () => (await t.subscribers(releases)) === 1, 5000, 5, 'the second campaign to wait');
          const start = performance.now();
          await first.resign();
          expect(first.signal.aborted).toBe(true);
          const taken = await second;
          const took = performance.now() - start;
          stop();
          expect(took).toBeLessThan(1000);
          expect(taken.term).toBeGreaterThan(first.term);
          const now = await b.leader();
          expect(now).toMatchObject({ identity: 'b', term: taken.term });
          expect(now!.remainingMs).toBeGreaterThan(0);
          await waitUntil(async () => seen.length === 2, 5000, 5, 'observe() to see the second leader');
          expect(seen.map((c) => [c.identity, c.term])).toEqual([
            ['a', first.term],
            ['b', taken.term],
          ]);
          await taken.resign();
          expect(await a.leader()).toBeUndefined();
        } finally {
          stop();
          await first?.resign().catch(() => {});
          await second?.then((l) => l.resign()).catch(() => {});
          watching.abort();
          await observing;
        }
      });
    });

    it('runExclusive: a busy lock is not waited for; atLeastMs leaves the lock to expire, atLeastMs 0 releases it', async () => {
      const t = topology();
      const name = newName();
      const client = t.client();
      let inner: unknown;
      const outer = await client.runExclusive(
        name,
        async () => {
          inner = await t.client().runExclusive(name, () => 'twice', { atMostMs: 10_000 });
          return 'once';
        },
        { atMostMs: 10_000, atLeastMs: 2_000 },
      );
      expect(outer).toEqual({ ran: true, value: 'once' });
      expect(inner).toEqual({ ran: false });
      const key = client.getLock(name).key;
      const ttl = await t.redis.pTTL(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(2_000);
      expect(await client.runExclusive(name, () => 1, { atMostMs: 10_000 })).toEqual({ ran: false });
      const other = newName();
      expect(await client.runExclusive(other, () => 2, { atMostMs: 10_000, atLeastMs: 0, watchdog: true })).toEqual({ ran: true, value: 2 });
      expect(await t.redis.exists(client.getLock(other).key)).toBe(0);
    });
  });
}
