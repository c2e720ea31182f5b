/**
 * `relock list PATTERN` filters object names by a Redis glob (src/cli/glob.ts). What the pattern means is
 * Redis's (`stringmatchlen` in util.c, used by `KEYS` and `SCAN MATCH`), so the oracle is a real server:
 * random names stored as keys of their own database, random patterns over the glob's special characters,
 * and `KEYS pattern` compared with the names the CLI's matcher keeps.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { globMatcher } from '../../src/cli/glob.js';
import { useRedis } from '../support/harness.js';
import { connect } from '../support/helpers.js';

const env = useRedis();

/** Characters that mean something to the glob, a few that do not, and a two-byte one (`?` is one byte to Redis). */
const ALPHABET = ['a', 'b', 'c', 'z', '-', '^', '[', ']', '\\', '*', '?', 'é'];
const text = (maxLength: number): fc.Arbitrary<string> => fc.array(fc.constantFrom(...ALPHABET), { maxLength }).map((chars) => chars.join(''));

describe('relock list: glob patterns', () => {
  it("keeps exactly the names Redis's KEYS matches, for random patterns and names (ranges reversed or open, brackets unclosed, escapes at the end)", async () => {
    const redis = await connect(env.server.url);
    try {
      await redis.select(3);
      await redis.flushDb();
      const names = [...new Set(fc.sample(text(6), { numRuns: 400, seed: 42 }))].filter((name) => name !== '');
      await redis.mSet(names.flatMap((name) => [name, '1']));
      await fc.assert(
        fc.asyncProperty(text(7), async (pattern) => {
          const byRedis = new Set(await redis.keys(pattern));
          const matches = globMatcher(pattern);
          expect({ pattern, kept: names.filter((name) => matches(name)).sort() }).toEqual({ pattern, kept: names.filter((name) => byRedis.has(name)).sort() });
        }),
        { numRuns: 1500, examples: [['[z-a]'], ['[ab'], ['a\\'], ['[]'], ['[^]'], ['[a-]'], ['[\\'], ['*[a-'], ['[^a-c]*'], ['?'], ['é'], ['*\\*'], ['[-a]']] },
      );
    } finally {
      await redis.flushDb();
      redis.destroy();
    }
  });

  it('the edge cases by name: a reversed range, an unclosed bracket, a trailing escape, an empty class', () => {
    expect(['a', 'b', 'z', '['].filter(globMatcher('[z-a]'))).toEqual(['a', 'b', 'z']);
    expect(['a', 'b', '[ab'].filter(globMatcher('[ab'))).toEqual(['a', 'b']);
    expect(['a\\', 'a'].filter(globMatcher('a\\'))).toEqual(['a\\']);
    expect(['a', ']'].filter(globMatcher('[]'))).toEqual([]);
  });
});
