/**
 * Redis glob patterns (as `SCAN MATCH` and `KEYS` read them: `*`, `?`, `[abc]`, `[^a]`, `[a-z]`, `\x`)
 * applied to object names in JavaScript, and escaping for a literal prefix.
 */

const REGEXP_SPECIAL = /[\\^$.*+?()[\]{}|/-]/g;
const escapeRegExp = (text: string): string => text.replace(REGEXP_SPECIAL, '\\$&');

/** A `RegExp` that matches exactly the strings the Redis glob `pattern` matches. */
export function globRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\' && i + 1 < pattern.length) source += escapeRegExp(pattern[++i]);
    else if (c === '*') source += '.*';
    else if (c === '?') source += '.';
    else if (c === '[') i = bracket(pattern, i, (part) => (source += part));
    else source += escapeRegExp(c);
  }
  return new RegExp(`^${source}$`, 's');
}

/** Translates the `[...]` class starting at `start`; returns the index of its `]` (a lone `[` is literal). */
function bracket(pattern: string, start: number, emit: (part: string) => void): number {
  let i = start + 1;
  let body = '';
  if (pattern[i] === '^') {
    body = '^';
    i++;
  }
  for (; i < pattern.length && pattern[i] !== ']'; i++) {
    if (pattern[i] === '\\' && i + 1 < pattern.length) body += escapeRegExp(pattern[++i]);
    else if (pattern[i] === '-' && body !== '' && body !== '^' && i + 1 < pattern.length && pattern[i + 1] !== ']') body += '-';
    else body += escapeRegExp(pattern[i]);
  }
  if (i >= pattern.length) {
    emit('\\[');
    return start;
  }
  emit(body === '' || body === '^' ? (body === '' ? '(?!)' : '[\\s\\S]') : `[${body}]`);
  return i;
}

/** `text` with the glob characters escaped, to match it literally in `SCAN MATCH`. */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
