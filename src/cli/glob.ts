/**
 * Redis glob patterns (as `SCAN MATCH` and `KEYS` read them: `*`, `?`, `[abc]`, `[^a]`, `[a-z]`, `\x`)
 * applied to object names in JavaScript, and escaping for a literal prefix.
 */

const STAR = 0x2a;
const QUESTION = 0x3f;
const OPEN = 0x5b;
const CLOSE = 0x5d;
const CARET = 0x5e;
const DASH = 0x2d;
const BACKSLASH = 0x5c;

/**
 * A test that keeps exactly the names the Redis glob `pattern` matches: Redis's `stringmatchlen` (util.c,
 * what `KEYS` and `SCAN MATCH` use; case-sensitive) ported byte for byte over the UTF-8 encodings, quirks
 * included: `?` is one byte, a reversed range matches as if ordered (`[z-a]` is `[a-z]`), an unclosed `[`
 * still opens a class (`[ab` is `[ab]`), a trailing `\` is a literal backslash, `[]` matches nothing and
 * `[^]` any byte. Never throws (a `RegExp` made from the pattern threw on `[z-a]`).
 */
export function globMatcher(pattern: string): (name: string) => boolean {
  const p = Buffer.from(pattern);
  return (name) => matchFrom(p, 0, Buffer.from(name), 0, { skipLonger: false }, 0);
}

/** A byte as C's (signed) `char`, as Redis compares the ends of a range. */
const signed = (byte: number): number => (byte << 24) >> 24;

/** The byte of `p` at `i`, 0 past its end (as C sees the terminator of Redis's string). */
const at = (p: Buffer, i: number): number => p[i] ?? 0;

/**
 * `stringmatchlen_impl` on `p` from `pi` and `s` from `si`. `state.skipLonger` is Redis's
 * `skipLongerMatches` (a `*` whose rest matched no suffix: no longer one will); `nesting` is its guard
 * against abusive patterns (no match past 1,000 nested `*`).
 */
function matchFrom(p: Buffer, pi: number, s: Buffer, si: number, state: { skipLonger: boolean }, nesting: number): boolean {
  if (nesting > 1000) return false;
  while (pi < p.length && si < s.length) {
    switch (p[pi]) {
      case STAR:
        while (pi < p.length && at(p, pi + 1) === STAR) pi++;
        if (p.length - pi === 1) return true;
        for (; si < s.length; si++) {
          if (matchFrom(p, pi + 1, s, si, state, nesting + 1)) return true;
          if (state.skipLonger) return false;
        }
        state.skipLonger = true;
        return false;
      case QUESTION:
        si++;
        break;
      case OPEN:
        pi = bracket(p, pi + 1, s[si]);
        if (pi < 0) return false;
        si++;
        break;
      case BACKSLASH:
        if (p.length - pi >= 2) pi++;
        if (p[pi] !== s[si]) return false;
        si++;
        break;
      default:
        if (p[pi] !== s[si]) return false;
        si++;
    }
    pi++;
    if (si === s.length) {
      while (at(p, pi) === STAR) pi++;
      break;
    }
  }
  return pi === p.length && si === s.length;
}

/** The class opened before `pi`, tried on the byte `c`: the index of its last byte, or -1 when `c` is not in it. */
function bracket(p: Buffer, pi: number, c: number): number {
  const not = at(p, pi) === CARET;
  if (not) pi++;
  let match = false;
  for (;; pi++) {
    if (at(p, pi) === BACKSLASH && p.length - pi >= 2) {
      pi++;
      if (p[pi] === c) match = true;
    } else if (at(p, pi) === CLOSE) break;
    else if (pi === p.length) {
      pi--;
      break;
    } else if (p.length - pi >= 3 && at(p, pi + 1) === DASH) {
      const [start, end] = [signed(p[pi]), signed(p[pi + 2])];
      pi += 2;
      if (signed(c) >= Math.min(start, end) && signed(c) <= Math.max(start, end)) match = true;
    } else if (p[pi] === c) match = true;
  }
  return match !== not ? pi : -1;
}

/** `text` with the glob characters escaped, to match it literally in `SCAN MATCH`. */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
