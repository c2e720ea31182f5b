/**
 * Lua fragments shared by scripts of several primitives. Each reads the names a script declares (see
 * `defineScript`), so a script that uses one declares them.
 */

/** `now`: Redis server time in ms (`TIME`), never the client's clock. Usable at any depth. */
export const NOW = `local now
do
  local t = redis.call('time')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

/**
 * `publish(message)`: publishes `message` on the object's channel. Reads the arguments `channel` and
 * `publishCommand` (`publish`, or `spublish` on a cluster).
 */
export const PUBLISH = `local function publish(message)
  redis.call(publishCommand, channel, message)
end
`;
