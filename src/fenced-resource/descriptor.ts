import { FOREIGN_HASH, markedAs, type KindDescriptor } from '../descriptor.js';

/** `RFencedResource`: a hash `keyPrefix + name` with `kind` = `fenced-resource`, `token` and `value`, and the hash `relock:fields:{name}`. */
export const FENCED_RESOURCE_DESCRIPTOR: KindDescriptor = {
  kind: 'fenced-resource',
  label: 'fenced resource (RFencedResource)',
  redisType: 'hash',
  keys: ['fields'],
  channels: [],
  recognise: (state) => markedAs(state.main, 'fenced-resource'),
  foreign: FOREIGN_HASH,
  details: (state) => ({ fencingToken: state.main.hash.get('token') ?? '0' }),
  summary: (d) => `highest token ${d.fencingToken}`,
};
