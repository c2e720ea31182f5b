/**
 * The jest test environment of `npm run mutation-score` (jest's `node` environment, wrapped by Stryker's
 * own for coverage and the active mutant), with two additions:
 * - a bail: once a test has failed under a mutant, every later test of that mutant's run is skipped,
 *   since one failure already kills it (Stryker's jest runner cannot pass jest's `bail`);
 * - in the dry run (no active mutant), it records which test file holds each test (by jest's full test
 *   name) into the JSON file named by `RELOCK_MUTATION_TESTS`, for covering-sequencer.cjs;
 * - it skips the tests of `SKIPPED` (the mutants only they cover count as not covered: the score stays a
 *   lower bound), since Stryker refuses to start when a test fails in its dry run.
 */
const { writeFileSync } = require('node:fs');
const { TestEnvironment } = require('jest-environment-node');

/**
 * Tests that fail under Stryker's instrumented, in-band run on a loaded machine, with the reason. The
 * FencedLock one (4 processes, 150 ms leases) failed the dry run of 2026-12-05: a worker's abandoned hold
 * had not yet expired when the worker re-acquired, and relock refused the contextless re-acquire
 * (ReentryNeedsContextError): timing, not a mutant.
 */
const SKIPPED = ['FencedLock tokens strictly increase over 1000 contended acquisitions across 4 processes'];

/** The active mutant (Stryker sets this variable for each mutant run) that already has a failing test. */
let killed;
/** Full test name → test files holding a test of that name (dry run only). */
const testFiles = {};

/** Jest's full name of a test: its describe blocks' names and its own, space-separated (jest's getTestID). */
function fullName(test) {
  const names = [];
  for (let block = test; block && block.parent; block = block.parent) names.unshift(block.name);
  return names.join(' ');
}

class BailEnvironment extends TestEnvironment {
  #testPath;

  constructor(config, context) {
    super(config, context);
    this.#testPath = context.testPath;
  }

  async handleTestEvent(event) {
    const mutant = process.env.__STRYKER_ACTIVE_MUTANT__;
    if (event.name === 'test_start' && SKIPPED.some((name) => fullName(event.test).startsWith(name))) event.test.mode = 'skip';
    if (mutant === undefined) {
      if (event.name === 'test_start') (testFiles[fullName(event.test)] ??= []).push(this.#testPath);
      return;
    }
    if (event.name === 'test_start' && killed === mutant) event.test.mode = 'skip';
    if (event.name === 'test_done' && event.test.errors.length > 0) killed = mutant;
  }

  async teardown() {
    await super.teardown();
    const file = process.env.RELOCK_MUTATION_TESTS;
    if (process.env.__STRYKER_ACTIVE_MUTANT__ === undefined && file) writeFileSync(file, JSON.stringify(testFiles));
  }
}

module.exports = BailEnvironment;
