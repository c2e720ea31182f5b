import { FOREIGN_HASH, markedAs, type KindDescriptor } from '../descriptor.js';

/** `RCountDownLatch`: a hash `keyPrefix + name` with `kind` = `count-down-latch` and its `count`, channel `relock:channel:{name}:latch`. */
export const COUNT_DOWN_LATCH_DESCRIPTOR: KindDescriptor = {
  kind: 'count-down-latch',
  aliases: ['latch'],
  label: 'count-down latch (RCountDownLatch)',
  redisType: 'hash',
  keys: [],
  channels: [['channel', 'latch']],
  recognise: (state) => markedAs(state.main, 'count-down-latch'),
  foreign: FOREIGN_HASH,
  absent: { precedence: 10, keys: [], channels: true },
  details: (state) => ({ count: Math.max(0, Number(state.main.hash.get('count') ?? 0)) }),
  summary: (d) => `count ${d.count}`,
};
