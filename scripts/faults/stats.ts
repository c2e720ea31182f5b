/** Small numeric helpers for the checkers and the report. */

/** The q-quantile (0..1) of `values` by nearest rank, rounded to 0.1 ms; `null` when there are none. */
export function quantile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return round(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]);
}

export function max(values: readonly number[]): number | null {
  return values.length === 0 ? null : round(Math.max(...values));
}

export function round(value: number): number {
  return Math.round(value * 10) / 10;
}
