/**
 * TLS (`rediss://`) against a redis-server that serves TLS only, with a certificate from a throwaway CA
 * made by the openssl CLI for this file. The two ways a user reaches such a server: their own node-redis
 * client (`socket: { tls: true, ca }`), and `url`, with the CA trusted process-wide through
 * `NODE_EXTRA_CA_CERTS` (read at start-up, so that side runs in a worker process). Each side takes and
 * releases locks and wakes a waiter of the other through pub/sub.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLockClient, RelockError } from '../src/index.js';
import { closeAll, connect, lockClient, numsub, uniqueName, waitUntil, Worker, type Redis } from './support/helpers.js';
import { startRedis, type RedisServer } from './support/redis.js';

/** A CA, and a server certificate it signed for 127.0.0.1 and localhost (EC P-256, valid one day). */
function makeCertificates(dir: string): { ca: string; cert: string; key: string } {
  const file = (name: string): string => join(dir, name);
  const openssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.crt'), '-days', '1', '-subj', '/CN=relock test CA');
  openssl('req', ...ec, '-keyout', file('server.key'), '-out', file('server.csr'), '-subj', '/CN=localhost');
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '1', '-extfile', file('server.ext'), '-out', file('server.crt'));
  return { ca: file('ca.crt'), cert: file('server.crt'), key: file('server.key') };
}

describe('TLS (rediss://) with a private CA', () => {
  let dir: string;
  let files: ReturnType<typeof makeCertificates>;
  let server: RedisServer;
  let redis: Redis;
  const workers: Worker[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'relock-tls-'));
    files = makeCertificates(dir);
    server = await startRedis({ tls: files });
    redis = await connect(server.url, { socket: { tls: true, ca: readFileSync(files.ca) } });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await closeAll();
  });
  afterAll(async () => {
    await redis?.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the server speaks TLS only, and `url` without a trusted CA fails on the certificate', async () => {
    expect(server.url).toMatch(/^rediss:\/\//);
    // A plaintext PING gets no answer: the server closes the connection on the failed handshake.
    const plaintext = await new Promise<string>((resolve) => {
      let received = '';
      const socket = tcpConnect(server.port, '127.0.0.1', () => socket.write('PING\r\n'));
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
      socket.on('error', () => {});
      socket.on('close', () => resolve(received));
    });
    expect(plaintext).not.toContain('PONG');
    const untrusting = createLockClient({ url: server.url });
    try {
      // A typed error whose cause is Node's verification failure (not retried: it cannot pass later).
      const error = await untrusting.getLock(uniqueName()).tryLock(0, 1, 'seconds').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RelockError);
      expect((error as Error).message).toMatch(/certificate/);
      expect((error as Error).cause).toMatchObject({ code: 'SELF_SIGNED_CERT_IN_CHAIN' });
    } finally {
      await untrusting.shutdown();
    }
  });

  it("through the user's client (socket.tls + ca): lock, unlock, and a waiter woken by pub/sub", async () => {
    const name = uniqueName('tls');
    const holder = lockClient(redis).getLock(name);
    await holder.lock();
    expect(await holder.isHeldByCurrentContext()).toBe(true);
    // The watchdog's lease (30 s) outlasts the wait time: only the unlock message can wake the waiter.
    const waiting = lockClient(redis).getLock(name).tryLock(10, 'seconds');
    await waitUntil(async () => (await numsub(redis, holder.channel)) === 1, 5000, 2, 'the waiter to subscribe');
    await holder.unlock();
    expect(await waiting).toBe(true);
  });

  it('through `url` with the CA in NODE_EXTRA_CA_CERTS: a waiter on each side woken by the other', async () => {
    const name = uniqueName('tls');
    const own = lockClient(redis).getLock(name);
    const worker = new Worker('lock-worker', { url: server.url, ownConnections: true }, { ...process.env, NODE_EXTRA_CA_CERTS: files.ca });
    workers.push(worker);
    await worker.next('ready');

    // The url side waits (wait time 10 s, under the holder's 30 s watchdog lease) and the unlock here wakes it.
    await own.lock();
    worker.send({ cmd: 'acquire', name, waitMs: 10_000 });
    await waitUntil(async () => (await numsub(redis, own.channel)) === 1, 10_000, 5, 'the worker to subscribe');
    await own.unlock();
    expect(await worker.next('acquired')).toMatchObject({ ok: true });

    // Then the other way round: the url side's release wakes a waiter here.
    const waiting = own.tryLock(10, 'seconds');
    await waitUntil(async () => (await numsub(redis, own.channel)) === 1, 5000, 2, 'the waiter to subscribe');
    worker.send({ cmd: 'release', name });
    await worker.next('released');
    expect(await waiting).toBe(true);
    await own.unlock();
  }, 90_000);
});
