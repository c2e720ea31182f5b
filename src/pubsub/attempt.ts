/** The outcome of one acquisition attempt. */
export type Attempt<T> =
  | { readonly acquired: true; readonly value: T }
  /** `retryAfterMs`: when a retry can succeed without a message (the holder's PTTL, a permit's expiry), or -1 when unknown. */
  | { readonly acquired: false; readonly retryAfterMs: number };
