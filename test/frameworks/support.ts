/**
 * Shared pieces of the framework tests: two app instances (each with its own Redis connection and
 * `LockClient`) against one Redis, a tracker of work running at once on one key, and a driver of bounded
 * concurrent HTTP requests.
 */
import { request } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { connect } from '../support/helpers.js';
import { IOREDIS } from '../shared/clients.js';

/** A user's Redis client of one family, as relock is given it, and how the test closes it. */
export interface Family {
  readonly name: string;
  open(url: string): Promise<{ client: object; close(): Promise<unknown> }>;
}

export const FAMILIES: readonly Family[] = [
  {
    name: 'node-redis',
    open: async (url) => {
      const client = await connect(url);
      return { client, close: () => client.close() };
    },
  },
  { name: 'ioredis', open: (url) => IOREDIS.standalone(url) },
];

/** The simulated work of a handler, in ms: long enough that requests on one key overlap without a lock. */
export const WORK_MS = 15;

/**
 * Counts work that ran while other work on the same key was running ("duplicate work"): each `run(key)`
 * marks the key busy for `WORK_MS`; a run that finds it busy is a duplicate.
 */
export class WorkTracker {
  duplicates = 0;
  runs = 0;
  private readonly active = new Map<string, number>();

  async run(key: string): Promise<void> {
    const now = this.active.get(key) ?? 0;
    if (now > 0) this.duplicates++;
    this.active.set(key, now + 1);
    this.runs++;
    try {
      await delay(WORK_MS);
    } finally {
      this.active.set(key, this.active.get(key)! - 1);
    }
  }
}

/** One HTTP request without keep-alive (so a server closes at once); resolves to its status and JSON body. */
export function post(url: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? (JSON.parse(text) as unknown) : undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Sends `total` requests, at most `concurrency` at a time, alternating between the `bases` (the app
 * instances), over `keys` keys (`${base}${path(key)}`); resolves to the statuses in order.
 */
export async function drive(bases: readonly string[], path: (key: string) => string, options: { total?: number; concurrency?: number; keys?: number } = {}): Promise<number[]> {
  const { total = 40, concurrency = 8, keys = 3 } = options;
  const statuses: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < total) {
      const i = next++;
      statuses[i] = (await post(`${bases[i % bases.length]}${path(`k${i % keys}`)}`)).status;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return statuses;
}
