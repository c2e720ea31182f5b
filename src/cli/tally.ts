import type { ObjectType } from './detect.js';
import type { Description } from './describe.js';

/** What `watch` compares between two reads of an object. */
export interface Tally {
  readonly type: ObjectType | undefined;
  /** Lock owners (a read-write lock's writer as `owner (writer)`) → hold count; expirable permit ids → 1. */
  readonly holders: ReadonlyMap<string, number>;
  /** Fair-lock waiters. */
  readonly waiting: ReadonlySet<string>;
  /** A semaphore's free permits, a latch's count. */
  readonly counter: number | undefined;
}

/** A change between two reads. */
export interface Change {
  /**
   * `acquire` / `release`: a lock owner's hold count rose or fell (`owner`, `holds` now), an expirable
   * permit appeared or went (`permit`; gone by release or expiry), or a semaphore's free count fell or rose
   * (`permits`, by how many: a rise is a release, `addPermits` or `trySetPermits`); `enqueue` / `dequeue`:
   * a fair-lock waiter joined or left the queue (`owner`); `count`: a latch's count changed (`from`, `to`).
   */
  readonly event: 'acquire' | 'release' | 'enqueue' | 'dequeue' | 'count';
  readonly owner?: string;
  readonly permit?: string;
  readonly holds?: number;
  readonly permits?: number;
  readonly from?: number;
  readonly to?: number;
}

/** The tally of an object described as `d` (`undefined`: nothing exists). */
export function tally(d: Description | undefined): Tally {
  const holders = new Map<string, number>();
  for (const h of d?.holders ?? []) holders.set(h.owner, h.holds);
  if (d?.writer) holders.set(`${d.writer.owner} (writer)`, d.writer.holds);
  for (const h of d?.readers ?? []) holders.set(h.owner, h.holds);
  for (const p of d?.permits?.leases ?? []) holders.set(p.id, 1);
  return {
    type: d?.type,
    holders,
    waiting: new Set((d?.queue ?? []).map((w) => w.owner)),
    counter: d?.freePermits ?? d?.count,
  };
}

/** The changes from `before` to `after` (nothing when there is no `before`). */
export function diff(before: Tally | undefined, after: Tally): Change[] {
  if (before === undefined) return [];
  const changes: Change[] = [];
  const permitIds = after.type === 'expirable-semaphore' || before.type === 'expirable-semaphore';
  for (const id of new Set([...before.holders.keys(), ...after.holders.keys()])) {
    const was = before.holders.get(id) ?? 0;
    const now = after.holders.get(id) ?? 0;
    if (was === now) continue;
    const event = now > was ? 'acquire' : 'release';
    changes.push(permitIds ? { event, permit: id } : { event, owner: id, holds: now });
  }
  for (const owner of after.waiting) if (!before.waiting.has(owner)) changes.push({ event: 'enqueue', owner });
  for (const owner of before.waiting) if (!after.waiting.has(owner)) changes.push({ event: 'dequeue', owner });
  const was = before.counter ?? 0;
  const now = after.counter ?? 0;
  if (was !== now && (before.counter !== undefined || after.counter !== undefined)) {
    const semaphore = after.type === 'semaphore' || (after.type === undefined && before.type === 'semaphore');
    changes.push(semaphore ? { event: now < was ? 'acquire' : 'release', permits: Math.abs(now - was) } : { event: 'count', from: was, to: now });
  }
  return changes;
}
