/**
 * Prints a `.cpuprofile`'s self time, or a `.heapprofile`'s (sampled) allocated bytes, by function (top 25)
 * and by file (top 12), in % of the total.
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface CpuNode {
  id: number;
  callFrame: CallFrame;
}
interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

const file = process.argv[2];
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
let total = 0;

function add(frame: CallFrame, amount: number): void {
  const where = frame.url.replace(/^.*\/(node_modules\/|src\/|scripts\/)/, '$1') || '(native)';
  const fn = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + amount);
  byFile.set(where, (byFile.get(where) ?? 0) + amount);
  total += amount;
}

if (file.endsWith('.heapprofile')) {
  const walk = (node: HeapNode): void => {
    add(node.callFrame, node.selfSize);
    for (const child of node.children) walk(child);
  };
  walk((JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode }).head);
} else {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: CpuNode[]; samples: number[] };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  for (const id of profile.samples) add(byId.get(id)!.callFrame, 1);
}
const top = (map: Map<string, number>, n: number): string =>
  [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`).join('\n');
const what = file.endsWith('.heapprofile') ? ['bytes allocated (sampled)', 'Allocated'] : ['samples', 'Self time'];
process.stdout.write(`${total} ${what[0]}\n\n${what[1]} by function:\n${top(byFunction, 25)}\n\n${what[1]} by file:\n${top(byFile, 12)}\n`);
