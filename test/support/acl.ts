/**
 * The least-privilege ACL rule of a relock user, per scripting mode, as docs/security.md gives it (a test
 * checks the page shows these rules, and that every command relock's Lua scripts call is in them).
 */

/** The commands relock's Lua scripts call (checked against `redis.call('…')` in src/ by test/scripting/acl.test.ts). */
export const SCRIPT_COMMANDS = [
  'decrby', 'del', 'exists', 'get', 'hdel', 'hexists', 'hget', 'hgetall', 'hincrby', 'hlen', 'hmget', 'hrandfield', 'hset',
  'incr', 'incrby', 'lindex', 'llen', 'lpop', 'lrange', 'lrem', 'pexpire', 'pttl', 'rpush', 'set', 'setnx', 'strlen', 'time',
  'type', 'zadd', 'zcard', 'zrange', 'zrangebyscore', 'zrem', 'zremrangebyscore', 'zscore',
] as const;

/** Commands relock sends itself, outside scripts (reads, latch cleanup, `syncReplicas`, pub/sub). */
export const DIRECT_COMMANDS = ['exists', 'get', 'hget', 'hmget', 'pttl', 'unlink', 'wait', 'info', 'publish', 'subscribe', 'unsubscribe'] as const;

/** The commands that run scripts, per scripting mode. */
export const SCRIPTING_COMMANDS = { eval: ['evalsha', 'eval'], functions: ['fcall', 'fcall_ro', 'function|load'] } as const;

/** On a Cluster: sharded pub/sub instead, and the cluster client's topology discovery. */
const CLUSTER_COMMANDS: Record<string, string[]> = { publish: ['spublish'], subscribe: ['ssubscribe'], unsubscribe: ['sunsubscribe', 'cluster|slots'] };

/**
 * The `ACL SETUSER <user>` arguments after the user name: `reset`, `on`, password, keys, channels,
 * commands. `cluster`: the rule of a Cluster node.
 */
export function aclRule(mode: 'eval' | 'functions', keyPrefix: string, password: string, cluster = false): string[] {
  const direct = cluster ? DIRECT_COMMANDS.flatMap((c) => CLUSTER_COMMANDS[c] ?? [c]) : DIRECT_COMMANDS;
  const commands = [...new Set([...SCRIPTING_COMMANDS[mode], ...SCRIPT_COMMANDS, ...direct])];
  return ['reset', 'on', `>${password}`, `~${keyPrefix}*`, `&${keyPrefix}*`, '-@all', ...commands.map((c) => `+${c}`)];
}
