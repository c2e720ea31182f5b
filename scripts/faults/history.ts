/**
 * The history of one scenario run, Jepsen style: what every worker did (one JSON line per event, written
 * synchronously so that SIGKILL loses at most the line being written), what the nemesis did, and what
 * Redis itself reported (key expirations). Every time is `process.hrtime` in milliseconds: the
 * system-wide monotonic clock, so times of different processes on this host compare directly.
 */
import { closeSync, existsSync, openSync, readFileSync, writeSync } from 'node:fs';

/** Monotonic milliseconds, comparable across processes on one host (CLOCK_MONOTONIC). */
export const now = (): number => Number(process.hrtime.bigint()) / 1e6;

/** One line of a worker's log. `w` = worker id, `sec` = critical-section id (`w:n`), `t` = hrtime ms. */
export type WorkerEvent =
  | { ev: 'start'; t: number; w: string; pid: number }
  /** acquire() called. */
  | { ev: 'acquire'; t: number; w: string; sec: string }
  /** acquire() gave up or failed (`err` is the error's name). */
  | { ev: 'acq-fail'; t: number; w: string; sec: string; err: string; msg?: string }
  /**
   * acquire() returned: the section starts. `tok` is the fencing token (a lock), `permit` the permit id and
   * `leaseMs` its lease (a semaphore; none: the watchdog), `side` the side of a read-write lock.
   */
  | { ev: 'enter'; t: number; w: string; sec: string; tok?: string; permit?: string; leaseMs?: number; side?: 'r' | 'w'; waitMs: number }
  /** The hold count read back right after enter (scenarios checking reentrancy after a lost reply). */
  | { ev: 'holds'; t: number; w: string; sec: string; holds: number }
  /** The fenced resource's answer to the section's first operation (`ok` false: fenced out). */
  | { ev: 'begin'; t: number; w: string; sec: string; ok: boolean }
  /** The event loop was blocked on purpose (nemesis) from `t0` to `t`. */
  | { ev: 'block'; t: number; w: string; sec: string; t0: number }
  /** The commit (counter write + fenced write) was sent; `ok` is the fenced resource's answer. */
  | { ev: 'commit'; t: number; w: string; sec: string; ok: boolean; t0: number }
  /** Postgres mode: a write through relock/fencing sent at `t0`; `ok` false: refused (StaleTokenError), `highest` the table's token then. */
  | { ev: 'write'; t: number; w: string; sec: string; tok: string; t0: number; ok: boolean; highest?: string; form: string }
  /** The section ends: `done`, or `lost` when the handle's signal aborted the work first. */
  | { ev: 'exit'; t: number; w: string; sec: string; reason: 'done' | 'lost' | 'error'; msg?: string }
  /** release() settled (`err`: the error's name when it threw). */
  | { ev: 'release'; t: number; w: string; sec: string; ok: boolean; err?: string; msg?: string }
  /** The client's `lockLost` event. */
  | { ev: 'lost'; t: number; w: string; sec?: string; key: string; reason: string }
  /** The event loop was late by `lagMs` (measured by a 10 ms ticker): the machine stalled the worker. */
  | { ev: 'stall'; t: number; w: string; lagMs: number }
  /** Leader mode: the leadership's signal aborted (`reason`: resigned or lost). */
  | { ev: 'signal'; t: number; w: string; tok: string; reason?: string }
  /** Leader mode: `observe()` started, yielded a change, or failed. */
  | { ev: 'observing'; t: number; w: string }
  | { ev: 'observed'; t: number; w: string; tok: string; leader: string }
  | { ev: 'observe-fail'; t: number; w: string; msg: string }
  /** Free-form figures (many-locks mode, end-of-run stats). */
  | { ev: 'stats'; t: number; w: string; [figure: string]: unknown };

/** Something the orchestrator did to the system, with the time span it covered. */
export interface NemesisEvent {
  kind:
    | 'kill' | 'pause' | 'block' | 'restart' | 'redis-pause' | 'busy' | 'client-pause' | 'pubsub-kill'
    | 'latency' | 'blackhole' | 'reset' | 'cut' | 'expire';
  /** Start (the fault is on) and end (healed) in hrtime ms; instant faults have t1 = t0. */
  t0: number;
  t1: number;
  /** The worker affected, when the fault targets one. */
  w?: string;
  /** The section the target was in when the fault started, if it held the lock. */
  sec?: string;
  detail?: Record<string, unknown>;
  /**
   * Whether the liveness checker measures the time from this fault to the next entry by another worker.
   * Default: when the fault hit the holder (`sec` set) or the whole server (no `w`).
   */
  recovery?: boolean;
}

/** A key the Redis under test expired (`__keyevent@0__:expired`), as seen by the orchestrator. */
export interface Expiration {
  t: number;
  key: string;
}

/** Appends JSON lines to a file with one synchronous write each. */
export class LogWriter {
  private fd: number | undefined;
  constructor(readonly file: string) {
    this.fd = openSync(file, 'a');
  }

  write(event: Record<string, unknown>): void {
    if (this.fd !== undefined) writeSync(this.fd, `${JSON.stringify(event)}\n`);
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Reads a JSON-lines file, skipping a last line cut short by a kill. */
export function readLog<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  const out: T[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.length === 0) continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch {
      // A line cut by SIGKILL.
    }
  }
  return out;
}
