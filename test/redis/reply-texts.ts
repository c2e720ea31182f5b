/**
 * The error replies each server answered, copied from redis-cli: every error of test/redis/replies.test.ts
 * provoked on a build of the server from its public sources (the 7.0.15 one is Debian 12's package), as
 * listed in docs/topologies.md ("Servers tested"). Ports in MOVED/ASK replies are those of that run.
 */

/** The errors provoked: ACL refusals (direct, inside EVAL, inside FCALL), script and function errors, and the server-state replies. */
export type Provoked =
  | 'noperm-command'
  | 'noperm-key'
  | 'noperm-channel'
  | 'eval-noperm-command'
  | 'eval-noperm-key-declared'
  | 'eval-noperm-key'
  | 'eval-noperm-channel'
  | 'fcall-noperm-command'
  | 'fcall-noperm-key-declared'
  | 'fcall-noperm-key'
  | 'fcall-noperm-channel'
  | 'noperm-evalsha'
  | 'noscript'
  | 'function-missing'
  | 'function-exists'
  | 'wrongtype'
  | 'eval-wrongtype'
  | 'eval-error'
  | 'busy'
  | 'busy-kill-none'
  | 'loading'
  | 'readonly'
  | 'eval-readonly'
  | 'moved'
  | 'crossslot'
  | 'ask'
  | 'tryagain'
  | 'eval-moved';

export const REPLY_TEXTS: Readonly<Record<string, Partial<Record<Provoked, string>>>> = {
  "Redis 7.0.15": {
    "noperm-command": "NOPERM this user has no permissions to run the 'get' command",
    "noperm-key": "NOPERM this user has no permissions to access one of the keys used as arguments",
    "noperm-channel": "NOPERM this user has no permissions to access one of the channels used as arguments",
    "eval-noperm-command": "ERR The user executing the script can't run this command or subcommand script: 4e6d8fc8bb01276962cce5371fa795a7763657ae, on @user_script:1.",
    "eval-noperm-key-declared": "NOPERM this user has no permissions to access one of the keys used as arguments",
    "eval-noperm-key": "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: b58106168e54d4f26f44a68accc2f7ed6c002166, on @user_script:1.",
    "eval-noperm-channel": "ERR The user executing the script can't publish to the channel mentioned in the command script: e769f3351c3c5f1eb1aff21ddcdd0b9e5740ae55, on @user_script:1.",
    "fcall-noperm-command": "ERR The user executing the script can't run this command or subcommand script: fget, on @user_function:2.",
    "fcall-noperm-key-declared": "NOPERM this user has no permissions to access one of the keys used as arguments",
    "fcall-noperm-key": "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: fsetarg, on @user_function:4.",
    "fcall-noperm-channel": "ERR The user executing the script can't publish to the channel mentioned in the command script: fpub, on @user_function:5.",
    "noperm-evalsha": "NOPERM this user has no permissions to run the 'evalsha' command",
    noscript: "NOSCRIPT No matching script. Please use EVAL.",
    "function-missing": "ERR Function not found",
    "function-exists": "ERR Library 't' already exists",
    wrongtype: "WRONGTYPE Operation against a key holding the wrong kind of value",
    "eval-wrongtype": "WRONGTYPE Operation against a key holding the wrong kind of value script: aa19fef467ed0bf8fa388b62e00e9e066f564c0a, on @user_script:1.",
    "eval-error": "ERR boom",
    busy: "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    "busy-kill-none": "NOTBUSY No scripts in execution right now.",
    loading: "LOADING Redis is loading the dataset in memory",
    readonly: "READONLY You can't write against a read only replica.",
    "eval-readonly": "READONLY You can't write against a read only replica. script: b0e7bbc2efc136be74cdebcb73a106ad46ea881b, on @user_script:1.",
    moved: "MOVED 15495 127.0.0.1:34452",
    crossslot: "CROSSSLOT Keys in request don't hash to the same slot",
    ask: "ASK 3300 127.0.0.1:34452",
    tryagain: "TRYAGAIN Multiple keys request during rehashing of slot",
    "eval-moved": "MOVED 15495 127.0.0.1:34452",
  },
  "Redis 7.2.6": {
    "noperm-command": "NOPERM User u has no permissions to run the 'get' command",
    "noperm-key": "NOPERM No permissions to access a key",
    "noperm-channel": "NOPERM No permissions to access a channel",
    "eval-noperm-command": "ERR ACL failure in script: User u has no permissions to run the 'get' command script: 4e6d8fc8bb01276962cce5371fa795a7763657ae, on @user_script:1.",
    "eval-noperm-key-declared": "NOPERM No permissions to access a key",
    "eval-noperm-key": "ERR ACL failure in script: No permissions to access a key script: b58106168e54d4f26f44a68accc2f7ed6c002166, on @user_script:1.",
    "eval-noperm-channel": "ERR ACL failure in script: No permissions to access a channel script: e769f3351c3c5f1eb1aff21ddcdd0b9e5740ae55, on @user_script:1.",
    "fcall-noperm-command": "ERR ACL failure in script: User u has no permissions to run the 'get' command script: fget, on @user_function:2.",
    "fcall-noperm-key-declared": "NOPERM No permissions to access a key",
    "fcall-noperm-key": "ERR ACL failure in script: No permissions to access a key script: fsetarg, on @user_function:4.",
    "fcall-noperm-channel": "ERR ACL failure in script: No permissions to access a channel script: fpub, on @user_function:5.",
    "noperm-evalsha": "NOPERM User v has no permissions to run the 'evalsha' command",
    noscript: "NOSCRIPT No matching script. Please use EVAL.",
    "function-missing": "ERR Function not found",
    "function-exists": "ERR Library 't' already exists",
    wrongtype: "WRONGTYPE Operation against a key holding the wrong kind of value",
    "eval-wrongtype": "WRONGTYPE Operation against a key holding the wrong kind of value script: aa19fef467ed0bf8fa388b62e00e9e066f564c0a, on @user_script:1.",
    "eval-error": "ERR boom",
    busy: "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    "busy-kill-none": "NOTBUSY No scripts in execution right now.",
    loading: "LOADING Redis is loading the dataset in memory",
    readonly: "READONLY You can't write against a read only replica.",
    "eval-readonly": "READONLY You can't write against a read only replica. script: b0e7bbc2efc136be74cdebcb73a106ad46ea881b, on @user_script:1.",
    moved: "MOVED 15495 127.0.0.1:32450",
    crossslot: "CROSSSLOT Keys in request don't hash to the same slot",
    ask: "ASK 3300 127.0.0.1:32450",
    tryagain: "TRYAGAIN Multiple keys request during rehashing of slot",
    "eval-moved": "MOVED 15495 127.0.0.1:32450",
  },
  "Valkey 8.0.1": {
    "noperm-command": "NOPERM User u has no permissions to run the 'get' command",
    "noperm-key": "NOPERM No permissions to access a key",
    "noperm-channel": "NOPERM No permissions to access a channel",
    "eval-noperm-command": "ERR ACL failure in script: User u has no permissions to run the 'get' command script: 4e6d8fc8bb01276962cce5371fa795a7763657ae, on @user_script:1.",
    "eval-noperm-key-declared": "NOPERM No permissions to access a key",
    "eval-noperm-key": "ERR ACL failure in script: No permissions to access a key script: b58106168e54d4f26f44a68accc2f7ed6c002166, on @user_script:1.",
    "eval-noperm-channel": "ERR ACL failure in script: No permissions to access a channel script: e769f3351c3c5f1eb1aff21ddcdd0b9e5740ae55, on @user_script:1.",
    "fcall-noperm-command": "ERR ACL failure in script: User u has no permissions to run the 'get' command script: fget, on @user_function:2.",
    "fcall-noperm-key-declared": "NOPERM No permissions to access a key",
    "fcall-noperm-key": "ERR ACL failure in script: No permissions to access a key script: fsetarg, on @user_function:4.",
    "fcall-noperm-channel": "ERR ACL failure in script: No permissions to access a channel script: fpub, on @user_function:5.",
    "noperm-evalsha": "NOPERM User v has no permissions to run the 'evalsha' command",
    noscript: "NOSCRIPT No matching script.",
    "function-missing": "ERR Function not found",
    "function-exists": "ERR Library 't' already exists",
    wrongtype: "WRONGTYPE Operation against a key holding the wrong kind of value",
    "eval-wrongtype": "WRONGTYPE Operation against a key holding the wrong kind of value script: aa19fef467ed0bf8fa388b62e00e9e066f564c0a, on @user_script:1.",
    "eval-error": "ERR boom",
    busy: "BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    "busy-kill-none": "NOTBUSY No scripts in execution right now.",
    loading: "LOADING Valkey is loading the dataset in memory",
    readonly: "READONLY You can't write against a read only replica.",
    "eval-readonly": "READONLY You can't write against a read only replica. script: b0e7bbc2efc136be74cdebcb73a106ad46ea881b, on @user_script:1.",
    moved: "MOVED 15495 127.0.0.1:32384",
    crossslot: "CROSSSLOT Keys in request don't hash to the same slot",
    ask: "ASK 3300 127.0.0.1:32384",
    tryagain: "TRYAGAIN Multiple keys request during rehashing of slot",
    "eval-moved": "MOVED 15495 127.0.0.1:32384",
  },
};
