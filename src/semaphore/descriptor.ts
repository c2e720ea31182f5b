import type { KindDescriptor } from '../descriptor.js';

const INTEGER = /^-?\d+$/;

/** `RSemaphore`: the free-permit count in a string `keyPrefix + name`, channel `relock:channel:{name}:permits`. */
export const SEMAPHORE_DESCRIPTOR: KindDescriptor = {
  kind: 'semaphore',
  label: 'semaphore (RSemaphore)',
  redisType: 'string',
  keys: [],
  channels: [['channel', 'permits']],
  recognise: (state) => state.main.value !== undefined && INTEGER.test(state.main.value),
  foreign: 'string that is not a relock counter (an integer)',
  absent: { precedence: 20, keys: [], channels: true },
  details: (state) => ({ freePermits: Number(state.main.value ?? 0) }),
  summary: (d) => `${d.freePermits} free permits`,
};
