import type { Config } from 'jest';
import { createDefaultEsmPreset } from 'ts-jest';

/**
 * Jest runs the TypeScript sources as ES modules through ts-jest (type-checking is `npm run typecheck`).
 * Every test talks to real Redis through `test/support/redis.ts`. Slow suites (soak, faults, benchmarks)
 * are separate npm scripts, not part of this run. `npm run test:node -- <major>` (scripts/test-node.ts)
 * runs it on another Node and sets `RELOCK_NATIVE_ADDONS` (package name → directory) to copies of the
 * native addons compiled for that Node.
 */
const addons = JSON.parse(process.env.RELOCK_NATIVE_ADDONS ?? '{}') as Record<string, string>;

const config: Config = {
  ...createDefaultEsmPreset({ tsconfig: 'tsconfig.json', diagnostics: false }),
  testEnvironment: '<rootDir>/test/support/environment.ts',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    ...Object.fromEntries(Object.entries(addons).map(([name, dir]) => [`^${name}$`, dir])),
  },
  testTimeout: 30_000,
  maxWorkers: 2,
  detectOpenHandles: false,
};

export default config;
