/**
 * What a Redis error reply says, read the way the servers define it: by its error code (the reply's
 * first word, which every server tested keeps: Redis 7.0 and 7.2, Valkey 8.0), and, where one code covers several cases
 * (`ERR`), by a pattern tolerant of each server family's wording. A reply relayed from inside a script
 * keeps the code of the command that failed (`WRONGTYPE … script: <sha>, on @user_script:1.`).
 *
 * The texts each server answered (Redis 7.0.15 and 7.2.6, Valkey 8.0.1) are the table of
 * test/redis/replies.test.ts; docs/topologies.md lists the servers the suite ran on.
 */

/**
 * The meaning of an error reply:
 * - `noperm`: an ACL refusal (see `deniedBy` for what was refused).
 * - `noscript`: EVALSHA of a script the server does not have (`NOSCRIPT`).
 * - `function-missing`: FCALL of a function the server does not have (`ERR Function not found`).
 * - `library-exists`: FUNCTION LOAD of a library the server already has (`ERR Library '…' already exists`).
 * - `busy`: a script or function is running past the busy threshold (`BUSY`).
 * - `loading`: the server is loading its data set (`LOADING`).
 * - `readonly`: a write sent to a replica (`READONLY`).
 * - `moved`, `ask`: the slot is served elsewhere (Cluster redirections).
 * - `tryagain`: a multi-key command on a slot being migrated (`TRYAGAIN`).
 * - `clusterdown`, `masterdown`, `noreplicas`: the Cluster, the replica's primary or the replicas the
 *   server's `min-replicas-to-write` wants are not there.
 * - `crossslot`: the keys hash to different slots (`CROSSSLOT`).
 * - `wrongtype`: the key holds another data type (`WRONGTYPE`).
 * - `other`: anything else (a script's own error, a syntax error, …).
 */
export type ReplyKind =
  | 'noperm' | 'noscript' | 'function-missing' | 'library-exists' | 'busy' | 'loading' | 'readonly' | 'moved' | 'ask'
  | 'tryagain' | 'clusterdown' | 'masterdown' | 'noreplicas' | 'crossslot' | 'wrongtype' | 'other';

/** Error codes that alone say what happened. */
const BY_CODE: Readonly<Record<string, ReplyKind>> = {
  NOPERM: 'noperm',
  NOSCRIPT: 'noscript',
  BUSY: 'busy',
  LOADING: 'loading',
  READONLY: 'readonly',
  MOVED: 'moved',
  ASK: 'ask',
  TRYAGAIN: 'tryagain',
  CLUSTERDOWN: 'clusterdown',
  MASTERDOWN: 'masterdown',
  NOREPLICAS: 'noreplicas',
  CROSSSLOT: 'crossslot',
  WRONGTYPE: 'wrongtype',
};

/**
 * `ERR` replies told apart by their text. An ACL refusal inside a script: Redis 7.0 "ERR The user
 * executing the script can't …"; Redis 7.2+ and Valkey "ERR ACL failure in script: …".
 */
const BY_TEXT: ReadonlyArray<readonly [RegExp, ReplyKind]> = [
  [/^ERR (?:The user executing the script can't|ACL failure in script\b)/i, 'noperm'],
  [/^ERR Function not found/i, 'function-missing'],
  [/^ERR Library '[^']*' already exists/i, 'library-exists'],
];

/** The error code of a reply: its first word when that word is upper-case letters (`ERR`, `NOPERM`, …). */
export function errorCode(message: string): string | undefined {
  return /^([A-Z][A-Z_-]*)(?:\s|$)/.exec(message)?.[1];
}

/** What the error reply `message` says (see `ReplyKind`). */
export function replyKind(message: string): ReplyKind {
  const code = errorCode(message);
  if (code === undefined) return 'other';
  const kind = BY_CODE[code];
  if (kind !== undefined) return kind;
  for (const [pattern, meaning] of BY_TEXT) if (pattern.test(message)) return meaning;
  return 'other';
}

/** The kind of `failure` when it is an error reply, else undefined (not an Error, or no message). */
export function replyKindOf(failure: unknown): ReplyKind | undefined {
  const message = (failure as Error | null)?.message;
  return typeof message === 'string' ? replyKind(message) : undefined;
}

/** The class of ACL rule an ACL refusal says is missing. */
export type Permission = 'command' | 'key' | 'channel';

/**
 * The refused command and the missing permission class when `failure` is an ACL refusal, else undefined.
 * The permission class comes from the words the servers use ("… one of the keys …", "… a key …",
 * "… the channel …", "… a channel …"); a refusal that names neither is of a command. The command is
 * the one the reply names ("… to run the 'get' command") for a direct refusal; for a refusal inside a
 * script, and when the reply names none, it is `sent`, the command that was sent (`evalsha`, `fcall`).
 */
export function deniedBy(failure: unknown, sent: string): { command: string; permission: Permission } | undefined {
  const message = (failure as Error | null)?.message;
  if (typeof message !== 'string' || replyKind(message) !== 'noperm') return undefined;
  // The part before a script's " script: <sha or function>, on @user_…" suffix, which names no permission.
  const refusal = message.replace(/ script: \S+, on @\S+$/, '');
  const inScript = refusal !== message || errorCode(message) !== 'NOPERM';
  const named = inScript ? undefined : /'([^']+)' command/.exec(refusal)?.[1];
  const permission: Permission = named !== undefined ? 'command'
    : /\bchannels?\b/i.test(refusal) ? 'channel' : /\bkeys?\b/i.test(refusal) ? 'key' : 'command';
  return { command: (named ?? sent).toLowerCase(), permission };
}
