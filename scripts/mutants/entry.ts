import type { Mutation } from './scratch.js';

/** One entry of the mutation catalogue (catalogue.ts): a mutation, the mechanism it removes, and the tests that must kill it. */
export interface CatalogueEntry extends Mutation {
  /** Short stable name, used by `--only` and in the table. */
  readonly id: string;
  /** The safety mechanism the mutation removes, in words. */
  readonly mechanism: string;
  /** The jest test files that must kill it (paths from the repository root). */
  readonly tests: readonly string[];
  /** A jest `-t` pattern narrowing the run to the tests that kill it (anchor it with `^`). */
  readonly pattern?: string;
  /** Part of `--quick` (the subset `.ci/run` runs). */
  readonly quick?: boolean;
}
