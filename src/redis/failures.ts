import { replyKind, type ReplyKind } from './replies.js';

/**
 * How a failed Redis call failed, which decides whether it may be retried:
 * - `transient`: the command did not run (Redis said LOADING, BUSY, TRYAGAIN, CLUSTERDOWN, MASTERDOWN,
 *   READONLY, NOREPLICAS, MOVED or ASK; the client was offline; the command queue was full, or a GLIDE
 *   client had its `inflightRequestsLimit` of requests in flight and refused one unsent): safe to retry.
 * - `ambiguous`: the command may or may not have run (the socket closed while it was in flight, GLIDE's
 *   `ConnectionError`, or no reply came within the response timeout): retry only operations that are idempotent.
 * - `closed`: the node-redis client was closed by its owner (a GLIDE client: `ClosingError`).
 * - `wrongtype`: Redis WRONGTYPE, the key holds another data type.
 * - `crossslot`: Redis CROSSSLOT, the keys are in different cluster slots.
 * - `fatal`: anything else (a script error, an unknown reply).
 */
export type Failure = 'transient' | 'ambiguous' | 'closed' | 'wrongtype' | 'crossslot' | 'fatal';

/** Replies of a command that did not run and may run if sent again (see replies.ts). */
const TRANSIENT_REPLIES = new Set<ReplyKind>(['loading', 'busy', 'tryagain', 'clusterdown', 'masterdown', 'readonly', 'noreplicas', 'moved', 'ask']);
const NOT_SENT = new Set(['ClientOfflineError', 'ConnectionTimeoutError', 'RootNodesUnavailableError', 'TimeoutError', 'CommandTimeoutDuringMaintenanceError', 'MaxCommandRedirectionsError', 'ReconnectStrategyError']);
const IN_FLIGHT = new Set(['SocketClosedUnexpectedlyError', 'SocketTimeoutError', 'SocketTimeoutDuringMaintenanceError', 'DisconnectsClientError', 'ResponseTimeoutError']);
/** ioredis / iovalkey: offline with the offline queue off, the cluster's nodes all unreachable or its slot table not loaded. */
const IOREDIS_NOT_SENT = /^(Stream isn't writeable and enableOfflineQueue options is false|None of startup nodes is available|Failed to refresh slots cache|CLUSTERDOWN)/;
/**
 * ioredis / iovalkey: the connection closed with the command queued or in flight, `commandTimeout`, the
 * queue flushed after `maxRetriesPerRequest` reconnects (`autoResendUnfulfilledCommands` may have sent
 * it), a Cluster's redirections ran out (the last try may have been on a connection that closed), or
 * (ioredis 6, `autoResendUnfulfilledCommands: false`) a command in flight when the connection closed,
 * rejected at the reconnect instead of being sent again.
 */
const IOREDIS_IN_FLIGHT = /^(Connection is closed\.|Command timed out|Reached the max retries per request limit|Too many Cluster redirections|Command aborted due to connection close)/;
/** GLIDE: the client already has its `inflightRequestsLimit` (1,000 by default) of requests in flight and did not send this one. */
const GLIDE_INFLIGHT_LIMIT = 'Reached maximum inflight requests';
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export function classify(failure: unknown): Failure {
  // Not `instanceof Error`: socket errors are made in Node's own realm, which differs from the caller's
  // under a VM sandbox (jest), and must still be recognised.
  if (typeof (failure as Error | null)?.message !== 'string') return 'fatal';
  const error = failure as Error;
  const kind = error.constructor?.name;
  if (kind === 'ClientClosedError' || kind === 'ClosingError') return 'closed';
  if (NOT_SENT.has(kind) || error.message === 'The queue is full' || error.message.startsWith(GLIDE_INFLIGHT_LIMIT)) return 'transient';
  if (IN_FLIGHT.has(kind) || kind === 'ConnectionError' || kind === 'MaxRetriesPerRequestError' || IOREDIS_IN_FLIGHT.test(error.message)) return 'ambiguous';
  if (kind === 'ClusterAllFailedError' || IOREDIS_NOT_SENT.test(error.message)) return 'transient';
  // A socket error's code is a string such as 'ECONNRESET'; other errors may carry a number (a DOMException's is 20).
  const code: unknown = (error as { code?: unknown }).code;
  if (typeof code === 'string' && NOT_SENT_CODES.has(code)) return 'transient';
  if (typeof code === 'string' && code.startsWith('E')) return 'ambiguous';
  const reply = replyKind(error.message);
  if (reply === 'wrongtype' || reply === 'crossslot') return reply;
  if (kind === 'NoSyncedReplicasError' || error.message.startsWith('ERR WAIT cannot be used with replica')) return 'transient';
  if (TRANSIENT_REPLIES.has(reply)) return 'transient';
  return 'fatal';
}

/** No reply within the response timeout; the command may still run. */
export class ResponseTimeoutError extends Error {
  constructor(
    timeoutMs: number,
    /** The attempt was given up at the end of its caller's wait time, before the response timeout. */
    readonly atDeadline = false,
  ) {
    super(atDeadline ? `no reply from Redis before the wait time ran out (${timeoutMs} ms)` : `no reply from Redis within ${timeoutMs} ms`);
    this.name = 'ResponseTimeoutError';
  }
}

/**
 * Whether `error` (a relock error or its cause) is an attempt given up at the end of its caller's wait
 * time (see `RunOptions.deadline`): its outcome is unknown, as after any lost reply.
 */
export function cutAtDeadline(error: unknown): boolean {
  const cause = (error as { cause?: unknown } | undefined)?.cause ?? error;
  return cause instanceof ResponseTimeoutError && cause.atDeadline;
}
