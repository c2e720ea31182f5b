/**
 * The key layout the CLI reads for each kind of object (`inspect`, `list`, `watch`, `top`, `force-unlock`):
 * the auxiliary keys (`relock:<part>:{name}`) and the channels (`relock:<part>:{name}[:<suffix>]`) each
 * descriptor names, as each primitive's docs state them. A part the primitive does not write would be read
 * by every `inspect` and matched by every `list` scan (a key of that name, from anywhere, listed as the
 * object); a part missing would hide the object's state.
 */
import { describe, expect, it } from '@jest/globals';
import { OBJECT_DESCRIPTORS } from '../../src/client.js';

describe('object descriptors', () => {
  it('name the auxiliary keys and channels each kind uses, and no other', () => {
    const layout = Object.fromEntries(OBJECT_DESCRIPTORS.map((d) => [d.kind, { keys: d.keys, channels: d.channels.map((c) => c.join(':')) }]));
    expect(layout).toEqual({
      lock: { keys: [], channels: ['channel'] },
      'spin-lock': { keys: [], channels: [] },
      'non-reentrant-lock': { keys: [], channels: ['channel'] },
      'fenced-lock': { keys: ['fence'], channels: ['channel'] },
      'fair-lock': { keys: ['queue', 'timeout'], channels: [] },
      'read-write-lock': { keys: ['leases'], channels: ['rwlock'] },
      semaphore: { keys: [], channels: ['channel:permits'] },
      'expirable-semaphore': { keys: ['permits'], channels: ['channel:permits'] },
      'count-down-latch': { keys: [], channels: ['channel:latch'] },
      'leader-election': { keys: ['term'], channels: ['channel', 'channel:leader'] },
      'job-lock': { keys: [], channels: ['channel'] },
      'fenced-resource': { keys: ['fields'], channels: [] },
    });
  });
});
