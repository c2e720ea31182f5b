/**
 * The suite's jest test environment: Node's, plus a check that a test file leaves no socket, server or child
 * process behind that keeps the process alive (a Redis client or a `redis-server` not closed, a proxy not
 * stopped). Such a leftover is a defect: jest's worker cannot exit when the run ends ("A worker process has
 * failed to exit gracefully", seen twice in the clean-clone rehearsals of 2026-12-07 with no file named).
 * At the end of each file the handles keeping the loop alive (`process._getActiveHandles()`, ref'd ones)
 * are compared, by identity, with those at its start; those the file added have 2 s to close, after which
 * the file fails with their list. Timers are not listed by Node (`getActiveResourcesInfo()` gives their
 * count only, which jest's own timers blur); a timer left running is caught by the tests that count them.
 */
import { TestEnvironment as NodeEnvironment } from 'jest-environment-node';
import type { EnvironmentContext, JestEnvironmentConfig } from '@jest/environment';

const GRACE_MS = 2_000;

interface Handle {
  constructor: { name: string };
  hasRef?: () => boolean;
  _handle?: { hasRef?: () => boolean } | null;
  remoteAddress?: string;
  remotePort?: number;
  spawnargs?: string[];
  pid?: number;
  address?: () => unknown;
}

const activeHandles = (): Handle[] => (process as unknown as { _getActiveHandles(): Handle[] })._getActiveHandles();

/** Whether `handle` keeps the event loop alive. */
function referenced(handle: Handle): boolean {
  return handle._handle?.hasRef?.() ?? handle.hasRef?.() ?? true;
}

function label(handle: Handle): string {
  const name = handle.constructor.name;
  if (handle.spawnargs) return `${name} ${handle.spawnargs.join(' ').slice(0, 80)} (pid ${handle.pid})`;
  if (handle.remotePort !== undefined) return `${name} to ${handle.remoteAddress}:${handle.remotePort}`;
  if (name === 'Server') return `${name} on ${JSON.stringify(handle.address?.())}`;
  return name;
}

export default class LeakCheckingEnvironment extends NodeEnvironment {
  private readonly testPath: string;
  private before = new Set<Handle>();

  constructor(config: JestEnvironmentConfig, context: EnvironmentContext) {
    super(config, context);
    this.testPath = context.testPath;
  }

  override async setup(): Promise<void> {
    await super.setup();
    this.before = new Set(activeHandles());
  }

  override async teardown(): Promise<void> {
    const left = (): Handle[] => activeHandles().filter((handle) => !this.before.has(handle) && referenced(handle));
    const deadline = performance.now() + GRACE_MS;
    let extra = left();
    while (extra.length > 0 && performance.now() < deadline) {
      await new Promise<void>((resolve) => setTimeout(resolve, 20).unref());
      extra = left();
    }
    await super.teardown();
    if (extra.length > 0) throw new Error(`${this.testPath} left ${extra.length} handle(s) that keep the process alive ${GRACE_MS} ms after its last test: ${extra.map(label).join('; ')}`);
  }
}
