/**
 * The owner's unsettled marks (src/lock/protocol/marks.ts), a leaf of the engine with no Redis call of its
 * own: after an attempt's reply was lost, the lock is marked unsettled until a grant of it has expired;
 * a later loss extends the mark, never shortens it; a recorded grant or a busy answer settles it. What the
 * marks change in Redis (the armed guard, the unguarded unlock, the undo) is tested in acquire.test.ts,
 * unlock.test.ts and undo.test.ts.
 */
import { describe, expect, it } from '@jest/globals';
import { settle, unsettle, unsettled } from '../../../src/lock/protocol/marks.js';
import { newContext } from './engine.js';

describe('unsettled marks (protocol/marks.ts)', () => {
  it('a mark is kept per owner and lock, until its time; a later loss extends it and keeps its tried flag', () => {
    const ctx = newContext();
    expect(unsettled(ctx, 'a')).toBeUndefined();
    const mark = unsettle(ctx, 'a', 1000);
    expect(mark).toEqual({ until: 1000, tried: false });
    expect(unsettled(ctx, 'a')).toBe(mark);
    expect(unsettled(ctx, 'b')).toBeUndefined();
    expect(unsettled(newContext(), 'a')).toBeUndefined();
    mark.tried = true;
    expect(unsettle(ctx, 'a', 2000)).toBe(mark);
    expect(mark).toEqual({ until: 2000, tried: true });
    // An earlier loss's end never shortens the mark: a grant of the later one may live until then.
    unsettle(ctx, 'a', 1500);
    expect(mark.until).toBe(2000);
  });

  it('settling forgets the mark of that lock only', () => {
    const ctx = newContext();
    unsettle(ctx, 'a', 1000);
    const b = unsettle(ctx, 'b', 1000);
    settle(ctx, 'a');
    expect(unsettled(ctx, 'a')).toBeUndefined();
    expect(unsettled(ctx, 'b')).toBe(b);
    settle(newContext(), 'a'); // an owner without marks: nothing to do
  });
});
