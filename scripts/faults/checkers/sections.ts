/**
 * Critical sections rebuilt from the workers' logs: the interval from `enter` (logged after acquire
 * returned) to `exit` (logged before release is sent), so an overlap found is a real double belief. A
 * holder killed inside its section ends it at the kill; one whose process died otherwise ends it at the
 * end of the history (conservative: any later entry overlaps it).
 */
import type { NemesisEvent, WorkerEvent } from '../history.js';

export interface Section {
  w: string;
  sec: string;
  /** The fencing token; none for a semaphore permit. */
  tok: bigint | undefined;
  /** The side of a read-write lock (`r` shared, `w` exclusive); none for other primitives (exclusive up to their capacity). */
  mode?: 'r' | 'w';
  start: number;
  end: number;
  /** How it ended: `done`, `lost`, `error`, `killed` or `open` (never logged an exit). */
  how: string;
}

export function sections(events: readonly WorkerEvent[], nemesis: readonly NemesisEvent[], endOfHistory: number): Section[] {
  const kills = new Map<string, number>();
  for (const n of nemesis) if (n.kind === 'kill' && n.w) kills.set(n.w, n.t0);
  const open = new Map<string, Section>();
  const out: Section[] = [];
  for (const e of events) {
    if (e.ev === 'enter') {
      const s: Section = { w: e.w, sec: e.sec, tok: e.tok === undefined ? undefined : BigInt(e.tok), start: e.t, end: endOfHistory, how: 'open', ...(e.side ? { mode: e.side } : {}) };
      open.set(e.sec, s);
      out.push(s);
    } else if (e.ev === 'exit') {
      const s = open.get(e.sec);
      if (s) {
        s.end = e.t;
        s.how = e.reason;
        open.delete(e.sec);
      }
    }
  }
  for (const s of open.values()) {
    const killedAt = kills.get(s.w);
    if (killedAt !== undefined && killedAt >= s.start) {
      s.end = killedAt;
      s.how = 'killed';
    }
  }
  return out.sort((a, b) => a.start - b.start);
}
