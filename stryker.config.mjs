// @ts-check
/**
 * StrykerJS configuration for `npm run mutation-score` (scripts/mutation-score/run.ts), which passes the
 * sampled mutants' ranges as `mutate` and its own temp and report paths on the command line. Stryker
 * copies the project into `.stryker-tmp/` (ignored) and never writes elsewhere in the repo.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
const config = {
  testRunner: 'jest',
  // The jest suite runs as native ES modules (see package.json "test").
  testRunnerNodeArgs: ['--experimental-vm-modules', '--disable-warning=ExperimentalWarning'],
  coverageAnalysis: 'perTest',
  // Not `findRelatedTests`: jest's dependency graph does not follow the suite's `.js` import specifiers
  // (mapped to .ts by moduleNameMapper), so it finds no test for src/index.ts and too few for the rest.
  jest: { configFile: 'jest.config.ts', enableFindRelatedTests: false },
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
  reporters: ['json', 'progress-append-only'],
  jsonReporter: { fileName: '.stryker-tmp/report.json' },
  // The dry run is every in-process test (run.ts: IGNORED_TESTS) in one process (jest in band, for
  // per-test coverage): 19.5 min on 2 cores at load 9-11 (2026-12-06).
  dryRunTimeoutMinutes: 35,
  timeoutMS: 30_000,
  // A jest runner keeps the module graphs of the ES-module test files it ran: its memory grew to 4 GB over
  // some 60 mutants of src/lock/ (2026-12-06). A fresh runner every 8 mutants keeps it flat, for a jest
  // start of a few seconds each time.
  maxTestRunnerReuse: 8,
  ignorePatterns: ['dist', 'coverage', 'docs/api', 'profiles', '.stryker-tmp'],
};
export default config;
