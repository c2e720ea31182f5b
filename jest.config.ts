import type { Config } from 'jest';
import { createDefaultEsmPreset } from 'ts-jest';

/**
 * Jest runs the TypeScript sources as ES modules through ts-jest (type-checking is `npm run typecheck`).
 * Every test talks to real Redis through `test/support/redis.ts`. Slow suites (soak, faults, benchmarks)
 * are separate npm scripts, not part of this run.
 */
const config: Config = {
  ...createDefaultEsmPreset({ tsconfig: 'tsconfig.json', diagnostics: false }),
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testTimeout: 30_000,
  maxWorkers: 2,
  detectOpenHandles: false,
};

export default config;
