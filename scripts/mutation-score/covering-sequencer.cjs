/**
 * The jest test sequencer of `npm run mutation-score`: in a mutant's run, Stryker names the tests that
 * cover the mutant (jest's `testNamePattern`) but not their files, so jest would load every test file of
 * the suite to find them. This sequencer keeps only the files that hold a matching test, from the map
 * bail-environment.cjs recorded in the dry run (`RELOCK_MUTATION_TESTS`); without a pattern or a map it
 * keeps every file. The order is jest's (failed first, then slowest first).
 */
const { existsSync, readFileSync } = require('node:fs');
const Sequencer = require('@jest/test-sequencer').default;

class CoveringSequencer extends Sequencer {
  #pattern;

  constructor(options) {
    super(options);
    this.#pattern = options.globalConfig.testNamePattern;
  }

  sort(tests) {
    const sorted = super.sort(tests);
    const file = process.env.RELOCK_MUTATION_TESTS;
    if (!this.#pattern || !file || !existsSync(file)) return sorted;
    const pattern = new RegExp(this.#pattern, 'i');
    const keep = new Set();
    for (const [name, paths] of Object.entries(JSON.parse(readFileSync(file, 'utf8')))) {
      if (pattern.test(name)) for (const path of paths) keep.add(path);
    }
    const covering = sorted.filter((test) => keep.has(test.path));
    return covering.length > 0 ? covering : sorted;
  }
}

module.exports = CoveringSequencer;
