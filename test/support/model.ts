/**
 * What the model-based tests of test/model/ share (fast-check `asyncModelRun` against a real Redis): a
 * step that checks the primitive's invariant after it ran, and the bounded, seeded run of a model, with the
 * `RELOCK_MODEL_RUNS` (runs), `RELOCK_MODEL_TIME_MS` (time limit) and `RELOCK_MODEL_SEED` knobs that
 * `npm run soak` turns up.
 */
import fc from 'fast-check';

/** The real system of one run: it knows how to check the model's invariant against Redis and the clients. */
export interface Checked<M> {
  check(m: M): Promise<void>;
}

/** A command: its precondition, its effect on the model and the real system; the invariant is checked after it. */
export abstract class ModelStep<M extends object, R extends Checked<M>> implements fc.AsyncCommand<M, R> {
  check(_m: Readonly<M>): boolean {
    return true;
  }
  abstract apply(m: M, r: R): Promise<void>;
  async run(m: M, r: R): Promise<void> {
    await this.apply(m, r);
    await r.check(m);
  }
  abstract toString(): string;
}

export interface ModelRun<M extends object, R extends Checked<M>> {
  /** The commands a run draws from. */
  step: fc.Arbitrary<ModelStep<M, R>>;
  /** Commands per run, at most. */
  maxCommands: number;
  /** The real system of a fresh run, and its model. */
  setup(): Promise<{ model: M; real: R }>;
  /** Undoes `setup` (clients closed, keys deleted). */
  teardown(real: R): Promise<void>;
  /** Default number of runs (`RELOCK_MODEL_RUNS` overrides it). */
  runs: number;
  /** Default time limit in ms (`RELOCK_MODEL_TIME_MS` overrides it): runs stop there, without failing. */
  timeMs: number;
  /** Default seed (`RELOCK_MODEL_SEED` overrides it). */
  seed: number;
  /** Shrunk sequences of past failures, run first. */
  examples?: Array<[Array<ModelStep<M, R>>]>;
}

/** The jest timeout of a model test: its time limit plus room for the run under way and shrinking. */
export function modelTimeout(run: Pick<ModelRun<never, never>, 'timeMs'>): number {
  return Number(process.env.RELOCK_MODEL_TIME_MS ?? run.timeMs) + 60_000;
}

/** Runs random command sequences against the model; the invariant is checked after every step and at the end. */
export async function checkModel<M extends object, R extends Checked<M>>(run: ModelRun<M, R>): Promise<void> {
  const commands = fc.commands<M, R, false>([run.step], { maxCommands: run.maxCommands });
  await assertToTheEnd(
    commands,
    async (cmds) => {
      const { model, real } = await run.setup();
      try {
        await fc.asyncModelRun(() => ({ model, real }), cmds);
        await real.check(model);
      } finally {
        await run.teardown(real);
      }
    },
    {
      examples: run.examples ?? [],
      seed: Number(process.env.RELOCK_MODEL_SEED ?? run.seed),
      numRuns: Number(process.env.RELOCK_MODEL_RUNS ?? run.runs),
      interruptAfterTimeLimit: Number(process.env.RELOCK_MODEL_TIME_MS ?? run.timeMs),
      markInterruptAsFailure: false,
      verbose: 1,
    },
  );
}

/**
 * `fc.assert` of an async property, that returns only once the run under way has ended. At
 * `interruptAfterTimeLimit` fast-check stops waiting for that run (it races it against a timer) and
 * returns, and the run goes on in the background. Without this wait a model run outlived its test: its
 * steps and teardown ran after the file's `afterAll` had stopped the servers, and the lock clients it had
 * not shut down yet reconnected every 2 s for good (a jest run that never exited, seen under load; issue
 * 28, "Flakes explained").
 */
export async function assertToTheEnd<T>(arbitrary: fc.Arbitrary<T>, predicate: (value: T) => Promise<void>, parameters: fc.Parameters<[T]>): Promise<void> {
  let underWay: Promise<unknown> = Promise.resolve();
  try {
    await fc.assert(
      fc.asyncProperty(arbitrary, (value) => {
        const running = predicate(value);
        underWay = running.catch(() => {}); // an interrupted run's outcome is not the test's (fast-check ignores it too)
        return running;
      }),
      parameters,
    );
  } finally {
    await underWay;
  }
}
