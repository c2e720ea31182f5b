import { OBJECT_DESCRIPTORS } from '../client.js';
import type { ObjectType } from './detect.js';
import type { Description, Holder, SideHolder } from './describe.js';

/** How each object type is called in text output, with the library class behind it (its descriptor's `label`). */
export const TYPE_LABEL: Readonly<Record<ObjectType, string>> = Object.fromEntries(OBJECT_DESCRIPTORS.map((d) => [d.kind, d.label])) as Record<ObjectType, string>;

/** A duration for people: `850 ms`, `12.3 s`, `4 m 05 s`, `2 h 03 m`; negative values read `expired`. */
export function duration(ms: number): string {
  if (ms < 0) return 'expired';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor(s / 60) % 60).padStart(2, '0')} m`;
}

/** A TTL as `inspect` and `list` show it. */
export function ttlText(ttlMs: number | null, exists: boolean): string {
  if (!exists) return '-';
  return ttlMs === null ? 'no TTL' : duration(ttlMs);
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The widest a cell of a table is printed (characters): longer text is cut, ending in `…`. */
export const CELL_WIDTH = 72;

/**
 * `text` on one line: control characters (C0, DEL, C1) and the line and paragraph separators escaped as
 * in a JavaScript string (`\n`, `\t`, `\r`, else `\xNN` or `\uNNNN`), and a backslash doubled, so that
 * a name written by anyone cannot break a line of output or send the terminal an escape sequence.
 */
export function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return text.replace(/[\\\x00-\x1f\x7f-\x9f\u2028\u2029]/g, (c) => {
    const named: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
    const code = c.charCodeAt(0);
    return named[c] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
  });
}

/** `text` as a table cell: on one line (`oneLine`), at most `CELL_WIDTH` characters (cut with `…`). */
export function cell(text: string): string {
  const line = oneLine(text);
  if (line.length <= CELL_WIDTH) return line;
  const end = /[\ud800-\udbff]/.test(line[CELL_WIDTH - 2]) ? CELL_WIDTH - 2 : CELL_WIDTH - 1; // not half of a surrogate pair
  return `${line.slice(0, end)}…`;
}

/** Lines of aligned columns (the last column is not padded); every cell goes through `cell`. */
export function table(rows: string[][], indent = ''): string[] {
  const cells = rows.map((row) => row.map(cell));
  const widths = cells.reduce<number[]>((w, row) => row.map((text, i) => Math.max(w[i] ?? 0, text.length)), []);
  return cells.map((row) => indent + row.map((text, i) => (i === row.length - 1 ? text : text.padEnd(widths[i]))).join('   ').trimEnd());
}

/** Holders as `owner ×holds` for one-line summaries (`watch`). */
export function holdersText(holders: readonly Holder[]): string {
  return holders.length === 0 ? 'none' : holders.map((h) => `${h.owner} ×${h.holds}`).join(', ');
}

/** A labelled line of `inspect`'s text output, with indented rows under it. */
interface Section {
  readonly label: string;
  readonly value: string;
  readonly rows?: string[][];
}

/** The text output of `inspect`. */
export function renderDescription(d: Description): string[] {
  const sections = describeSections(d);
  const width = Math.max(...sections.map((s) => s.label.length));
  const lines = [`${TYPE_LABEL[d.type]} "${oneLine(d.name)}"  (key ${oneLine(d.key)}${d.exists ? '' : ', which does not exist'})`];
  for (const { label, value, rows } of sections) lines.push(`  ${label.padEnd(width)}   ${oneLine(value)}`.trimEnd(), ...table(rows ?? [], '    '));
  for (const note of d.truncated ?? []) lines.push(`  (${note}; raise --limit to see more)`);
  return lines;
}

function describeSections(d: Description): Section[] {
  const sections: Section[] = [];
  if (d.exists || d.holders || d.mode !== undefined) sections.push({ label: 'TTL', value: ttlText(d.ttlMs, d.exists) });
  if (d.holders) sections.push({ label: 'holders', value: d.holders.length === 0 ? 'none (not held)' : String(d.holders.length), rows: d.holders.map((h) => [h.owner, plural(h.holds, 'hold')]) });
  if (d.fencingToken !== undefined) sections.push({ label: 'fencing token', value: `${d.fencingToken} (the last one handed out)` });
  if (d.leader !== undefined) sections.push({ label: 'leader', value: d.leader ? `${d.leader.identity}, term ${d.leader.term}, lease ${duration(d.leader.remainingMs)} left` : 'none' });
  if (d.term !== undefined) sections.push({ label: 'last term', value: d.term });
  if (d.queue) {
    const rows = d.queue.map((w) => [`${w.position}.`, w.owner, w.deadlineInMs === null ? 'no deadline' : `deadline in ${duration(w.deadlineInMs)}`, plural(w.subscribers, 'subscriber')]);
    sections.push({ label: 'queue', value: d.queue.length === 0 ? 'empty' : `${d.queue.length} waiting, head first`, rows });
  }
  if (d.mode !== undefined) {
    const side = (label: string, h: SideHolder): string[] => [label, h.owner, plural(h.holds, 'hold'), `lease${h.leasesMs.length === 1 ? '' : 's'} ${h.leasesMs.map(duration).join(', ')}`];
    const rows = [...(d.writer ? [side('writer', d.writer)] : []), ...(d.readers ?? []).map((h) => side('reader', h))];
    sections.push({ label: 'mode', value: d.mode ?? 'free' }, { label: 'holders', value: rows.length === 0 ? 'none' : String(rows.length), rows });
  }
  if (d.freePermits !== undefined) sections.push({ label: 'free permits', value: String(d.freePermits) });
  if (d.permits) {
    const p = d.permits;
    const expired = p.expiredNotReclaimed > 0 ? ` (and ${p.expiredNotReclaimed} expired, reclaimed by the next call)` : '';
    sections.push({ label: 'permits', value: `${p.total} in all, ${p.taken} taken, ${p.free} free${expired}`, rows: p.leases.map((l) => [l.id, `lease ${duration(l.remainingMs)} left`]) });
  }
  if (d.count !== undefined) sections.push({ label: 'count', value: `${d.count}${d.count === 0 ? ' (open)' : ''}` });
  if (d.channels.length > 0) sections.push({ label: 'channels', value: '', rows: d.channels.map((c) => [c.channel, plural(c.subscribers, 'subscriber')]) });
  return sections;
}
