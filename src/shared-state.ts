/**
 * State that must be one per process even when relock is loaded twice: an application importing the ES
 * module build and a dependency requiring the CommonJS build (dist/esm and dist/cjs) get two instances
 * of every module. What must not be doubled lives on `globalThis` under a `Symbol.for` key, which both
 * instances (and any copy of relock whose state has the same layout) find: the lock context store, the
 * task notes of contextless acquisitions and the counter that numbers contexts and requests. Each
 * client's watchdog, connections and subscriptions belong to the client object, so a client made by
 * either build keeps one of each. Error classes recognise each other's instances (see `RelockError`).
 */

/** Version of the layout of the shared state: bumped when a shared value changes shape, so copies that disagree keep apart. */
const LAYOUT = 1;

/**
 * The process-wide value named `name`, made by `make` the first time any copy of relock asks for it
 * (key: `Symbol.for('relock.state.<LAYOUT>.<name>')` on `globalThis`).
 */
export function processWide<T>(name: string, make: () => T): T {
  const key = Symbol.for(`relock.state.${LAYOUT}.${name}`);
  const global = globalThis as unknown as Record<symbol, T | undefined>;
  let value = global[key];
  if (value === undefined) {
    value = make();
    Object.defineProperty(globalThis, key, { value, enumerable: false, configurable: false, writable: false });
  }
  return value;
}
