/**
 * An UNSUBSCRIBE cut by a connection drop must not leave the channel subscribed (issue 19, the net-reset
 * flake). node-redis keeps a channel whose UNSUBSCRIBE failed and subscribes it again when its connection
 * comes back; relock then owes the UNSUBSCRIBE and sends it again after the reconnect. The proxy lets
 * Redis run the UNSUBSCRIBE, drops its reply and resets the connection (refusing new ones for a while),
 * so the client sees the command fail in flight; the server must end with no subscriber for the channel,
 * as a separate connection sees it (`PUBSUB NUMSUB`). ioredis re-sends such a command after its own
 * re-subscription (relock's subscriber turns `autoResendUnfulfilledCommands` on): it must end clean too.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis as IoRedis } from 'ioredis';
import pino from 'pino';
import { Channels, LINGER_MS } from '../../src/pubsub/channels.js';
import { waitFor } from '../../src/pubsub/wait.js';
import { openConnection } from '../../src/redis/clients/index.js';
import type { Connection } from '../../src/redis/connection.js';
import { useRedis } from '../support/harness.js';
import { numsub, uniqueName, waitUntil } from '../support/helpers.js';
import { startProxy, type TcpProxy } from '../support/tcp-proxy.js';

const env = useRedis();
/** How long the proxy refuses new connections after the cut: several reconnect attempts fail. */
const REFUSE_MS = 400;

let cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function proxied(): Promise<TcpProxy> {
  const proxy = await startProxy(env.server.host, env.server.port);
  cleanup.push(() => proxy.close());
  return proxy;
}

function layer(connection: Connection): Channels {
  const channels = new Channels(connection, pino({ level: 'silent' }));
  cleanup.push(async () => {
    await channels.close();
    await connection.close();
  });
  return channels;
}

/** One wait on `channel` that is woken by a message, then leaves (the channel lingers, then is unsubscribed). */
async function waitOnce(channels: Channels, channel: string): Promise<void> {
  let n = 0;
  const waiting = waitFor<string>({
    channels,
    channel,
    rule: () => 1,
    waitMs: 5000,
    subscriptionTimeoutMs: 2000,
    maxPollMs: 10_000,
    attempt: () => Promise.resolve(n++ < 2 ? { acquired: false, retryAfterMs: 10_000 } : { acquired: true, value: 'woken' }),
  });
  await waitUntil(async () => (await numsub(env.redis, channel)) === 1 && channels.size === 1, 3000, 5, 'the channel to be subscribed');
  await waitUntil(async () => (await env.redis.publish(channel, '0')) === 1 && n > 2, 3000, 5, 'the waiter to be woken');
  expect(await waiting).toBe('woken');
}

/** A request that is the UNSUBSCRIBE of `channel` (any case, RESP-encoded). */
const unsubscribeOf = (channel: string) => (request: Buffer): boolean => {
  const text = request.toString('latin1').toLowerCase();
  return text.includes('unsubscribe') && text.includes(channel.toLowerCase());
};

/**
 * A node-redis layer through a proxy, one wait on a new channel, and the UNSUBSCRIBE after its linger cut:
 * Redis runs it, its reply is lost and the connection reset; relock now owes it.
 */
async function cutUnsubscribe(): Promise<{ channels: Channels; channel: string }> {
  const proxy = await proxied();
  const channels = layer(openConnection({ url: `redis://${env.server.host}:${proxy.port}`, onError: () => {} }));
  const channel = uniqueName();
  const cut = proxy.loseReply({ match: unsubscribeOf(channel), refuseMs: REFUSE_MS });
  await waitOnce(channels, channel);
  await cut;
  await waitUntil(() => channels.owedCount === 1, 2000, 2, 'the failed UNSUBSCRIBE to be owed');
  return { channels, channel };
}

describe('an UNSUBSCRIBE cut by a connection drop', () => {
  it('node-redis: the channel is not subscribed again for good after the reconnect (relock sends the UNSUBSCRIBE again)', async () => {
    const { channels, channel } = await cutUnsubscribe();
    // node-redis reconnects after the refusal and subscribes the channel again; relock unsubscribes it.
    const deadline = REFUSE_MS + 4000;
    await waitUntil(async () => channels.owedCount === 0 && (await numsub(env.redis, channel)) === 0, deadline, 20, 'no subscriber for the channel after the reconnect');
    // And it stays so (a late re-subscription would show here).
    await new Promise((resolve) => setTimeout(resolve, LINGER_MS));
    expect(await numsub(env.redis, channel)).toBe(0);
    expect(channels.owedCount).toBe(0);
  });

  it('node-redis: a waiter that joins the channel again before the reconnect keeps its subscription (the owed UNSUBSCRIBE only forgets the old listener)', async () => {
    const { channels, channel } = await cutUnsubscribe();
    // A new waiter joins while the connection is still refused, and stays (every attempt answers busy).
    const stop = new AbortController();
    const waiting = waitFor<string>({
      channels, channel, rule: () => 1, waitMs: 20_000, subscriptionTimeoutMs: 5000, maxPollMs: 10_000, signal: stop.signal,
      attempt: () => Promise.resolve({ acquired: false, retryAfterMs: 10_000 }),
    }).catch(() => 'stopped');
    await waitUntil(() => channels.owedCount === 0 && channels.size === 1, REFUSE_MS + 4000, 5, 'the owed UNSUBSCRIBE to be settled after the reconnect');
    await waitUntil(async () => (await numsub(env.redis, channel)) === 1, 3000, 20, 'the new waiter\'s subscription');
    await new Promise((resolve) => setTimeout(resolve, LINGER_MS));
    expect(await numsub(env.redis, channel)).toBe(1);
    stop.abort();
    expect(await waiting).toBe('stopped');
    // The second waiter left: after its linger the channel goes for good.
    await waitUntil(async () => (await numsub(env.redis, channel)) === 0, 3000, 20, 'no subscriber after the second linger');
  });

  it('ioredis: the channel ends unsubscribed after the reconnect', async () => {
    const proxy = await proxied();
    const client = new IoRedis(`redis://${env.server.host}:${proxy.port}`, { lazyConnect: true });
    client.on('error', () => {});
    await client.connect();
    cleanup.push(() => client.quit().catch(() => client.disconnect()));
    const channels = layer(openConnection({ redis: client, onError: () => {} }));
    const channel = uniqueName();
    const cut = proxy.loseReply({ match: unsubscribeOf(channel), refuseMs: REFUSE_MS });
    await waitOnce(channels, channel);
    await cut;
    await waitUntil(async () => channels.owedCount === 0 && (await numsub(env.redis, channel)) === 0, REFUSE_MS + 4000, 20, 'no subscriber for the channel after the reconnect');
    await new Promise((resolve) => setTimeout(resolve, LINGER_MS));
    expect(await numsub(env.redis, channel)).toBe(0);
  });
});
