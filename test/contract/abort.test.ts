/** Aborted waits of every primitive (test/contract/abort.ts) on a standalone Redis, and the classifier an abort must get past. */
import { describe, expect, it } from '@jest/globals';
import { classify } from '../../src/redis/failures.js';
import { useStandaloneTopology } from '../shared/topology.js';
import { abortTests } from './abort.js';

abortTests(useStandaloneTopology());

describe('failure classification', () => {
  it('reads only string codes: an error whose code is a number (a DOMException: 20) is fatal, not a TypeError', () => {
    expect(classify(new DOMException('This operation was aborted', 'AbortError'))).toBe('fatal');
    expect(classify(Object.assign(new Error('odd'), { code: 7 }))).toBe('fatal');
    expect(classify(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).toBe('ambiguous');
    expect(classify(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe('transient');
  });
});
