/**
 * Child Node processes for the scenarios that need more than one process (4) or a process of their
 * own (5): `worker.ts` run through tsx, driven over the IPC channel with JSON messages that have a
 * `type`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkerTask } from './worker-task.js';

export type Message = { type: string } & Record<string, unknown>;

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'worker.ts');

export class Child {
  private readonly process: ChildProcess;
  private readonly inbox: Message[] = [];
  private wake: (() => void) | undefined;
  private exitCode: number | null | undefined;
  private stderr = '';

  /** `nodeOptions`: more Node flags for the child (the memory scenario's young generation size). */
  constructor(task: WorkerTask, nodeOptions: readonly string[] = []) {
    this.process = fork(WORKER, [], { execArgv: ['--import', 'tsx', '--expose-gc', ...nodeOptions], stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
    this.process.stderr!.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-4000)));
    this.process.on('message', (message: Message) => {
      this.inbox.push(message);
      this.wake?.();
    });
    this.process.once('exit', (code) => {
      this.exitCode = code;
      this.wake?.();
    });
    this.process.send(task);
  }

  send(message: Message): void {
    if (this.process.connected) this.process.send(message);
  }

  /** The next message of `type` (of shape `T`), waiting up to `timeoutMs`; throws if the child reports an error or exits. */
  async next<T = Message>(type: string, timeoutMs = 60_000): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const error = this.inbox.find((m) => m.type === 'error');
      if (error) throw new Error(`worker failed: ${String(error.message)}`);
      const i = this.inbox.findIndex((m) => m.type === type);
      if (i >= 0) return this.inbox.splice(i, 1)[0] as T;
      if (this.exitCode !== undefined) throw new Error(`worker exited (${this.exitCode}) before "${type}": ${this.stderr}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`worker sent no "${type}" within ${timeoutMs} ms: ${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          this.wake = undefined;
          resolve();
        };
      });
    }
  }

  /** Kills the child (it holds locks or waits for them: there is nothing to finish) and waits for its exit. */
  async stop(): Promise<void> {
    if (this.exitCode !== undefined) return;
    const exited = new Promise<void>((resolve) => this.process.once('exit', () => resolve()));
    this.process.kill('SIGKILL');
    await exited;
  }
}

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes of one machine. */
export const epochNow = (): number => performance.timeOrigin + performance.now();
