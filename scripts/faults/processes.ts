/**
 * Worker processes and everything else the suite starts, so that every exit path (the end, an error,
 * Ctrl-C) kills them all: `cleanupAll()`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkerCommand, WorkerConfig, WorkerMessage } from './worker.js';

const here = dirname(fileURLToPath(import.meta.url));
const cleanups = new Set<() => Promise<void> | void>();

/** Registers `fn` to run on every exit path; returns a function that unregisters it. */
export function onCleanup(fn: () => Promise<void> | void): () => void {
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}

/** Runs every registered cleanup (kills workers, stops servers, closes proxies). */
export async function cleanupAll(): Promise<void> {
  const fns = [...cleanups];
  cleanups.clear();
  await Promise.allSettled(fns.map(async (fn) => fn()));
}

type Listener = (message: WorkerMessage) => void;

/** A forked worker (scripts/faults/worker.ts). One process can serve several runs one after another. */
export class WorkerProcess {
  /** The id of the run it serves now. */
  w = '';
  /** Killed by the nemesis (or by cleanup). */
  killed = false;
  /** Stopped with SIGSTOP and not continued yet. */
  paused = false;
  readonly exited: Promise<void>;
  private readonly listeners = new Set<Listener>();
  private readonly unregister: () => void;

  private constructor(readonly child: ChildProcess) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.on('message', (message: WorkerMessage) => {
      for (const listener of [...this.listeners]) listener(message);
    });
    this.unregister = onCleanup(() => this.kill());
    void this.exited.then(() => this.unregister());
  }

  /** Forks a worker (stderr appended to `stderrFile`) and waits until it is ready. */
  static async fork(stderrFile: string): Promise<WorkerProcess> {
    const child = fork(join(here, 'worker.ts'), [], {
      execArgv: ['--import', 'tsx', '--unhandled-rejections=strict'],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'json',
    });
    child.stderr!.pipe(createWriteStream(stderrFile, { flags: 'a' }));
    const worker = new WorkerProcess(child);
    await worker.next('ready', 60_000);
    return worker;
  }

  get pid(): number {
    return this.child.pid!;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Calls `listener` with every message until the returned function is called. */
  on(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The next message of `type`; rejects when the worker exits first or after `timeoutMs`. */
  next<T extends WorkerMessage['type']>(type: T, timeoutMs: number): Promise<Extract<WorkerMessage, { type: T }>> {
    return new Promise((resolve, reject) => {
      const off = this.on((message) => {
        if (message.type === 'error') finish(() => reject(new Error(`worker ${this.w}: ${message.error}`)));
        else if (message.type === type) finish(() => resolve(message as Extract<WorkerMessage, { type: T }>));
      });
      const timer = setTimeout(() => finish(() => reject(new Error(`worker ${this.w || this.pid} sent no "${type}" within ${timeoutMs} ms`))), timeoutMs);
      const onExit = (): void => finish(() => reject(new Error(`worker ${this.w || this.pid} exited before "${type}"`)));
      this.child.once('exit', onExit);
      const finish = (settle: () => void): void => {
        off();
        clearTimeout(timer);
        this.child.off('exit', onExit);
        settle();
      };
    });
  }

  send(command: WorkerCommand): void {
    if (this.alive && this.child.connected) this.child.send(command);
  }

  /** Starts a run and waits until the worker runs it. */
  async run(config: WorkerConfig): Promise<void> {
    this.w = config.w;
    const running = this.next('running', 30_000);
    this.send({ cmd: 'run', config });
    await running;
  }

  signal(signal: 'SIGSTOP' | 'SIGCONT'): void {
    if (!this.alive) return;
    this.child.kill(signal);
    this.paused = signal === 'SIGSTOP';
  }

  /** SIGKILL (after SIGCONT, so a stopped process dies at once) and wait for the exit. */
  async kill(): Promise<void> {
    this.killed = true;
    if (this.alive) {
      this.child.kill('SIGCONT');
      this.child.kill('SIGKILL');
    }
    await this.exited;
  }
}

/**
 * Worker processes kept between runs (a tsx start costs about a second of CPU on this machine): `take()`
 * returns an idle one or forks one; `give()` returns one that finished its run cleanly.
 */
export class WorkerPool {
  private readonly idle: WorkerProcess[] = [];
  constructor(private readonly stderrFile: string) {
    onCleanup(() => this.close());
  }

  async take(n: number): Promise<WorkerProcess[]> {
    const reused = this.idle.splice(0, n).filter((p) => p.alive);
    const forked = await Promise.all(Array.from({ length: n - reused.length }, () => WorkerProcess.fork(this.stderrFile)));
    return [...reused, ...forked];
  }

  give(worker: WorkerProcess): void {
    if (worker.alive && !worker.killed) this.idle.push(worker);
  }

  async close(): Promise<void> {
    const all = this.idle.splice(0);
    for (const worker of all) worker.send({ cmd: 'exit' });
    await Promise.all(all.map((w) => Promise.race([w.exited, new Promise((r) => setTimeout(r, 2000))]).then(() => w.kill())));
  }
}
