// Loads relock's two builds in one process, as an ES module app with a CommonJS dependency that also
// uses relock does: dist/esm through import, dist/cjs through require. Prints one JSON line of findings
// (test/package/dual-load.test.ts checks them). REDIS_URL: the Redis to use.
import { createRequire } from 'node:module';
import { createClient } from 'redis';

const require = createRequire(import.meta.url);
const esm = await import('../../../dist/esm/index.js');
const cjs = require('../../../dist/cjs/index.js');

const redis = createClient({ url: process.env.REDIS_URL });
await redis.connect();
const fromEsm = esm.createLockClient({ redis });
const fromCjs = cjs.createLockClient({ redis });
const name = `dual-${process.pid}`;

/** In a context opened by `opener`, the lock `lockName` of `locker` taken twice: the second is a reentry when the context is seen. */
async function reentry(opener, locker, lockName) {
  return opener.runInContext(async () => {
    const lock = locker.getLock(lockName);
    await lock.lock(10, 'seconds');
    const again = await lock.tryLock(0, 10, 'seconds');
    const holds = await lock.getHoldCount();
    const held = await lock.isHeldByCurrentContext();
    for (let i = 0; i < holds; i++) await lock.unlock();
    if (!again) await lock.forceUnlock();
    return { again, holds, held };
  });
}

const unheld = (client) => client.getLock(`${name}:never`).unlock().then(() => undefined, (error) => error);
const esmError = await unheld(fromEsm);
const cjsError = await unheld(fromCjs);

const findings = {
  twoBuilds: esm.RelockError !== cjs.RelockError && esm.createLockClient !== cjs.createLockClient,
  cjsLockInEsmContext: await reentry(fromEsm, fromCjs, `${name}:a`),
  esmLockInCjsContext: await reentry(fromCjs, fromEsm, `${name}:b`),
  errors: {
    esmName: esmError?.name,
    cjsName: cjsError?.name,
    cjsErrorIsEsmClass: cjsError instanceof esm.IllegalMonitorStateError,
    cjsErrorIsEsmBase: cjsError instanceof esm.RelockError,
    esmErrorIsCjsClass: esmError instanceof cjs.IllegalMonitorStateError,
    esmErrorIsCjsBase: esmError instanceof cjs.RelockError,
    cjsErrorIsEsmOtherClass: cjsError instanceof esm.LockLostError,
    esmErrorIsCjsOtherClass: esmError instanceof cjs.PermissionError,
    plainErrorIsRelockError: new Error('x') instanceof cjs.RelockError,
    stillErrors: esmError instanceof Error && cjsError instanceof Error,
  },
};
await Promise.all([fromEsm.shutdown(), fromCjs.shutdown()]);
await redis.close();
console.log(JSON.stringify(findings));
