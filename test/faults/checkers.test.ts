/**
 * The fault suite's checkers on hand-made histories (the suite itself is `npm run faults`), and its proofs
 * kept applicable: every checker has a mutant in scripts/faults/prove.ts, and every mutant's text is
 * still in the tree exactly once (else `--prove` would fail to start).
 */
import { describe, expect, it } from '@jest/globals';
import { Causes, detectionBoundMs, EXIT_SLACK_MS } from '../../scripts/faults/checkers/causes.js';
import { checkExclusion } from '../../scripts/faults/checkers/exclusion.js';
import { checkFencing, type FencingContext } from '../../scripts/faults/checkers/fencing.js';
import type { Section } from '../../scripts/faults/checkers/sections.js';
import type { NemesisEvent, WorkerEvent } from '../../scripts/faults/history.js';
import type { OracleOp } from '../../scripts/faults/oracle.js';
import { PROOFS, uncoveredCheckers } from '../../scripts/faults/prove.js';
import { emptyResult } from '../../scripts/faults/result.js';
import { checkTokenReuse } from '../../scripts/faults/scenarios/postgres.js';
import { checkMutations, repoRoot } from '../../scripts/mutants/scratch.js';

const LEASE = 600;
const issued: Record<string, number> = { a: 0, b: 100, c: 200 };
const context = (resets: number[] = []): FencingContext => ({
  issuedAt: (sec) => issued[sec],
  counterReset: (x, y) => resets.some((t) => t >= x && t <= y),
  excused: () => false,
});
const write = (sec: string, tok: number, ok: boolean, t = 0): OracleOp => ({ op: 'write', sec, tok, ok, t });
const begin = (sec: string, tok: number, ok: boolean, t = 0): OracleOp => ({ op: 'begin', sec, tok, ok, t });
const section = (sec: string, start: number, end: number, w = sec): Section => ({ w, sec, tok: undefined, start, end, how: 'done' });

describe('fencing checker', () => {
  it('finds a write accepted with a token lower than one accepted before, whatever the resource said', () => {
    const ops = [begin('a', 1, true), begin('b', 2, true), write('b', 2, true), write('a', 1, true)];
    expect(checkFencing(ops, 0, 2, context()).staleWritesAccepted).toBe(1);
  });

  it('finds a write with a token another section used first (every token 0: the resource takes them all)', () => {
    const ops = [begin('a', 0, false), write('a', 0, true), begin('b', 0, false), write('b', 0, true)];
    const r = checkFencing(ops, 0, 2, context());
    expect(r.staleWritesAccepted).toBe(1);
    expect(r.staleWritesAcceptedTokenReuse).toBe(0);
  });

  it('excuses a reused token only across a counter reset between the two issues', () => {
    const ops = [begin('a', 1, true), begin('c', 1, false), write('c', 1, true)];
    expect(checkFencing(ops, 0, 1, context([150])).staleWritesAcceptedTokenReuse).toBe(1);
    expect(checkFencing(ops, 0, 1, context([300])).staleWritesAccepted).toBe(1);
  });

  it('counts a rejected stale write as fencing at work, not a failure', () => {
    const r = checkFencing([begin('a', 1, true), begin('b', 2, true), write('a', 1, false)], 0, 0, context());
    expect([r.staleWritesAccepted, r.staleWritesRejected]).toEqual([0, 1]);
  });

  it('attributes lost counter updates to the section that overwrote, and excuses only excused sections', () => {
    const ops: OracleOp[] = [{ op: 'set', sec: 'a', value: 1, t: 0 }, { op: 'set', sec: 'b', value: 2, t: 0 }, { op: 'set', sec: 'c', value: 2, t: 0 }];
    expect(checkFencing(ops, 2, 0, context()).unexcusedLostUpdates).toBe(1);
    expect(checkFencing(ops, 2, 0, { ...context(), excused: (sec) => sec === 'c' }).unexcusedLostUpdates).toBe(0);
  });
});

describe('overlap windows', () => {
  const pause: NemesisEvent = { kind: 'pause', t0: 100, t1: 1000, w: 'a', sec: 'a' };

  it('excuses an overlap inside its fault window and not one that outlasts it', () => {
    const causes = new Causes([pause], [], LEASE, ['holder-paused']);
    expect(checkExclusion([section('a', 0, 1500), section('b', 800, 1400)], causes).unexpectedOverlaps).toBe(0);
    expect(checkExclusion([section('a', 0, 2000), section('b', 800, 1900)], causes).unexpectedOverlaps).toBe(1);
  });

  it('excuses nothing the scenario did not declare', () => {
    const causes = new Causes([pause], [], LEASE, []);
    expect(checkExclusion([section('a', 0, 1500), section('b', 800, 1400)], causes).unexpectedOverlaps).toBe(1);
  });

  it('ends an early expiry\'s window when the stale holder was told', () => {
    const expire: NemesisEvent = { kind: 'expire', t0: 100, t1: 100, w: 'a', sec: 'a' };
    const told: WorkerEvent[] = [{ ev: 'lost', t: 200, w: 'a', sec: 'a', key: 'k', reason: 'expired' }];
    const causes = new Causes([expire], told, LEASE, ['key-expired-early']);
    expect(checkExclusion([section('a', 0, 200 + EXIT_SLACK_MS), section('b', 110, 900)], causes).unexpectedOverlaps).toBe(0);
    expect(checkExclusion([section('a', 0, 200 + EXIT_SLACK_MS + 50), section('b', 110, 900)], causes).unexpectedOverlaps).toBe(1);
    expect(detectionBoundMs(LEASE)).toBe(300);
  });

  it('counts a holder that entered while Redis restarted as granted by the dead server', () => {
    const restart: NemesisEvent = { kind: 'restart', t0: 100, t1: 200 };
    const told: WorkerEvent[] = [{ ev: 'lost', t: 400, w: 'a', sec: 'a', key: 'k', reason: 'expired' }];
    const causes = new Causes([restart], told, LEASE, ['redis-restarted']);
    expect(checkExclusion([section('a', 150, 400), section('b', 250, 900)], causes).unexpectedOverlaps).toBe(0);
    expect(checkExclusion([section('a', 250, 400), section('b', 260, 900)], causes).unexpectedOverlaps).toBe(1);
  });

  it('lets readers of a read-write lock share and keeps writers out', () => {
    const causes = new Causes([], [], LEASE, []);
    const reader = (sec: string, start: number, end: number): Section => ({ ...section(sec, start, end), mode: 'r' });
    const writer = (sec: string, start: number, end: number): Section => ({ ...section(sec, start, end), mode: 'w' });
    expect(checkExclusion([reader('a', 0, 100), reader('b', 50, 150)], causes).unexpectedOverlaps).toBe(0);
    expect(checkExclusion([reader('a', 0, 100), writer('b', 50, 150)], causes).unexpectedOverlaps).toBe(1);
  });
});

describe('proofs', () => {
  it('every checker has a mutant, and every mutant still applies to the tree', () => {
    expect(uncoveredCheckers()).toEqual([]);
    for (const proof of PROOFS) expect(() => checkMutations(repoRoot, proof.mutations)).not.toThrow();
  });
});

describe('token reuse after a restart (postgres-fenced-writes)', () => {
  const restart: NemesisEvent = { kind: 'restart', t0: 1000, t1: 1010, detail: { downMs: 0, counter: '5' } };
  const reuse = (writes: OracleOp[]): { violations: string[]; extra: Record<string, unknown> } => {
    const result = emptyResult({ name: 'postgres-fenced-writes', title: '' });
    const violations = checkTokenReuse({ events: [], nemesis: [restart], expirations: [], lockKey: 'k', leaseMs: LEASE, writes }, result);
    return { violations, extra: result.extra };
  };
  // a held token 5 and wrote before Redis died; b was handed 5 again by the restarted counter; c got 6.
  const shared = [write('a', 5, true, 900), write('b', 5, true, 1200), write('a', 5, true, 1250), write('b', 5, true, 1300), write('c', 6, true, 1500)];

  it('accepts the shared token from the two sections until a higher token is accepted, and reports the window', () => {
    const { violations, extra } = reuse(shared);
    expect(violations).toEqual([]);
    expect(extra.restarts).toEqual([expect.objectContaining({ counterAtRestart: 5, sharedTokenWrites: 3, sharedBySections: 2, catchUpMs: 190, windowClosedMs: 490 })]);
  });

  it('fails a write with a token up to the counter accepted after the window closed, and a third section sharing the token', () => {
    expect(reuse([...shared, write('a', 5, true, 1600)]).violations).toEqual([expect.stringMatching(/^fencing: 1 write\(s\) with a token ≤ 5 .* after the table had accepted a higher one/)]);
    expect(reuse([...shared.slice(0, 4), write('d', 5, true, 1400)]).violations).toEqual([expect.stringMatching(/^fencing: token 5 was accepted from 3 sections/)]);
  });

  it('says so when no restart showed the reuse (the scenario must show it)', () => {
    expect(reuse([write('a', 5, true, 900), write('c', 6, true, 1500)]).violations).toEqual([expect.stringMatching(/^harness: no restart showed the token reuse/)]);
  });
});
