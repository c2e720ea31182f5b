/** Prints a `.cpuprofile`'s self time by function (top 25) and by file (top 12), in % of samples. */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
const profile = JSON.parse(readFileSync(process.argv[2], 'utf8')) as { nodes: Node[]; samples: number[] };
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
for (const id of profile.samples) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const file = url.replace(/^.*\/(node_modules\/|src\/|scripts\/)/, '$1') || '(native)';
  const fn = `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + 1);
  byFile.set(file, (byFile.get(file) ?? 0) + 1);
}
const total = profile.samples.length;
const top = (map: Map<string, number>, n: number): string =>
  [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`).join('\n');
process.stdout.write(`${total} samples\n\nSelf time by function:\n${top(byFunction, 25)}\n\nSelf time by file:\n${top(byFile, 12)}\n`);
