import type { Core } from '../core.js';
import { RFencedLock } from '../fenced-lock/fenced-lock.js';
import { auxName } from '../keys.js';
import type { AcquireResult } from '../lock/scripts.js';
import { LEADER_ACQUIRE } from './scripts.js';

/**
 * The lock an election campaigns for: a fenced lock (`RFencedLock`, so acquisition, waiting, the watchdog
 * and ownership are the fenced lock's) of kind `leader-election` whose granting script also publishes the
 * leader's identity and term (`leader.campaign`). Its fencing counter is `relock:term:{name}`.
 * @internal Made by `RLeaderElection`.
 */
export class LeaderLock extends RFencedLock {
  /** The term counter (`relock:term:{name}`). */
  readonly termKey: string;
  /** The leader channel (`relock:channel:{name}:leader`): `<term> <identity>` at each election. */
  readonly leaderChannel: string;
  protected override readonly kind = 'leader-election';
  /** @internal */
  override readonly metricKind = 'leader_election';

  constructor(
    core: Core,
    name: string,
    /** The identity written in Redis when this lock is granted (see `LeaderElectionOptions.identity`). */
    private readonly identity: string,
  ) {
    super(core, name);
    this.termKey = auxName(core.keyPrefix, 'term', this.key);
    this.leaderChannel = auxName(core.keyPrefix, 'channel', this.key, 'leader');
  }

  /** @internal */
  override runAcquire(owner: string, lease: string, guard: string, held: string): Promise<AcquireResult> {
    const { connection } = this.core;
    return LEADER_ACQUIRE.run(connection, {
      lock: this.key,
      fence: this.termKey,
      leaseMs: lease,
      owner,
      guard,
      heldCount: held,
      kind: this.kind,
      identity: this.identity,
      channel: this.leaderChannel,
      publishCommand: connection.publishCommand,
    });
  }
}
