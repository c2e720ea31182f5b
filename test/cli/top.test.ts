/**
 * `relock top` against a real Redis: the busiest objects first, with their holders, waiters (channel
 * subscribers, a fair lock's queue), TTL and acquisitions per second between refreshes.
 */
import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import type { TopRow } from '../../src/cli/commands/top.js';
import { runInContext } from '../../src/index.js';
import { runCli, useCliHarness } from '../support/cli.js';
import { lockClient, numsub } from '../support/helpers.js';

const harness = useCliHarness();

describe('relock top', () => {
  it('ranks objects by waiters and counts the acquisitions between refreshes', async () => {
    const prefix = `cli-top-${randomBytes(4).toString('hex')}:`;
    const [a, b, c] = [0, 1, 2].map(() => lockClient(harness.redis, { keyPrefix: prefix })) as [ReturnType<typeof lockClient>, ReturnType<typeof lockClient>, ReturnType<typeof lockClient>];
    const busy = await a.getLock('busy').acquire();
    const waits = [b, c].map((client) => client.getLock('busy').acquire({ waitMs: 60_000 }));
    const fair = await a.getFairLock('fair').acquire();
    const fairWait = runInContext(() => b.getFairLock('fair').acquire({ waitMs: 60_000 }));
    const idle = await a.getLock('idle').acquire();
    while ((await numsub(harness.redis, `${prefix}relock:channel:{${prefix}busy}`)) < 2 || (await harness.redis.lLen(`${prefix}relock:queue:{${prefix}fair}`)) < 1) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const top = harness.start(['top', '--json', '--url', harness.server.url, '--prefix', prefix, '--interval', '300']);
    const first = (await top.nextWhere((line) => Array.isArray(line.rows), 'a refresh')) as unknown as { objects: number; rows: TopRow[] };
    expect(first.objects).toBe(3);
    expect(first.rows.map((r) => [r.name, r.type, r.holders, r.waiters, r.acquisitionsPerSecond])).toEqual([
      ['busy', 'lock', 1, 2, null],
      ['fair', 'fair-lock', 1, 1, null],
      ['idle', 'lock', 1, 0, null],
    ]);
    expect(first.rows[0]!.ttlMs).toBeGreaterThan(0);
    await busy.release(); // one waiter takes it: a new holder, counted as an acquisition by the next refresh
    const next = (await top.nextWhere((line) => Array.isArray(line.rows) && (line.rows as TopRow[]).some((r) => r.name === 'busy' && (r.acquisitionsPerSecond ?? 0) > 0), 'the next holder of busy')) as unknown as { rows: TopRow[] };
    const row = next.rows.find((r) => r.name === 'busy')!;
    // Waiters are the clients subscribed to the channel: the new holder's client may keep its subscription
    // for the linger after its wait (250 ms), so it counts 1 or 2 here, and 1 once the linger is over.
    expect(row.holders).toBe(1);
    expect(row.waiters).toBeLessThanOrEqual(2);
    await top.nextWhere((line) => Array.isArray(line.rows) && (line.rows as TopRow[]).some((r) => r.name === 'busy' && r.waiters === 1), 'one waiter left on busy');
    expect(next.rows.find((r) => r.name === 'idle')!.acquisitionsPerSecond).toBe(0);
    await Promise.all(waits.map(async (wait) => (await wait).release()));
    await fair.release();
    await (await fairWait).release();
    await idle.release();
  });

  it('prints a table, at most --limit rows, and stops after --count refreshes', async () => {
    const prefix = `cli-top-${randomBytes(4).toString('hex')}:`;
    const client = lockClient(harness.redis, { keyPrefix: prefix });
    const held = [await client.getLock('one').acquire(), await client.getLock('two').acquire()];
    const result = await runCli(['top', '--url', harness.server.url, '--prefix', prefix, '--count', '1', '--limit', '1']);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('relock top: 2 objects, busiest 1 shown, every 1000 ms (Ctrl-C to stop)');
    expect(lines[1]).toMatch(/^TYPE\s+NAME\s+HOLDERS\s+WAITERS\s+TTL\s+ACQ\/S$/);
    expect(lines[2]).toMatch(/^lock\s+one\s+1\s+0\s+[\d.]+ s\s+-$/);
    expect(lines).toHaveLength(3);
    for (const handle of held) await handle.release();
  });
});
