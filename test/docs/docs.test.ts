/**
 * The documentation runs as written: every ```ts block of README.md and docs/*.md type-checks against
 * relock's types (fragments with their `<!-- prelude: … -->`), gives no time as `waitTime`/`leaseTime`
 * without `unit`, and every ```ts runnable block runs against a real Redis and exits by itself with 0.
 * A problem is reported at `file:line`. The convention is in test/support/doc-blocks.ts and
 * docs/architecture.md.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { root } from '../support/build.js';
import { checkBlocks, extractBlocks, runBlock, type DocBlock, type DocProblem } from '../support/doc-blocks.js';
import { useRedis } from '../support/harness.js';

const env = useRedis();
const dir = join(root, '.tmp', `docs-test-${process.pid}-${Date.now()}`);
const docs = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** A doc that uses an API that does not exist and a unit-less lease: the check must find both, at their lines. */
const BROKEN = [
  '# A broken doc',
  '',
  "<!-- prelude: import type { LockClient } from 'relock'; declare const locks: LockClient; -->",
  '```ts',
  "await locks.getLock('a').tryLockSoon(1, 'seconds');",
  "await locks.getLock('b').acquire({ leaseTime: 5 });",
  "const held = await locks.getLock('c').acquire({ waitMs: 10 });",
  'await held.release();',
  '```',
].join('\n');

/** The text of every file under `dir`. */
function sourceTexts(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? sourceTexts(join(dir, entry.name)) : [readFileSync(join(dir, entry.name), 'utf8')]));
}

let blocks: DocBlock[];
let problems: DocProblem[];

beforeAll(() => {
  blocks = docs.flatMap((file) => extractBlocks(file, readFileSync(join(root, file), 'utf8')));
  problems = checkBlocks([...blocks, ...extractBlocks('broken.md', BROKEN)], dir);
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the documentation', () => {
  it('finds the TypeScript blocks of the README and every guide, runnable ones without a prelude', () => {
    expect(blocks.length).toBeGreaterThan(30);
    for (const file of ['README.md', 'docs/getting-started.md', 'docs/locks.md', 'docs/semaphores.md', 'docs/cookbook.md']) {
      expect(blocks.some((b) => b.file === file)).toBe(true);
    }
    const runnable = blocks.filter((b) => b.runnable);
    expect(runnable.map((b) => b.file)).toEqual(expect.arrayContaining(['README.md', 'docs/locks.md', 'docs/locks-more.md', 'docs/semaphores.md']));
    expect(runnable.filter((b) => b.prelude !== '').map((b) => `${b.file}:${b.line}`)).toEqual([]);
  });

  it('reports a doc that uses an API that does not exist, or a lease without unit, at its file and line', () => {
    expect(problems.filter((p) => p.at.startsWith('broken.md'))).toEqual([
      { at: 'broken.md:5', message: expect.stringContaining("Property 'tryLockSoon' does not exist on type 'RLock'") },
      { at: 'broken.md:6', message: expect.stringContaining('leaseTime without unit') },
    ]);
  });

  it('type-checks every TypeScript block of README.md and docs/*.md against relock', () => {
    expect(problems.filter((p) => !p.at.startsWith('broken.md'))).toEqual([]);
  });

  it('cites in docs/architecture.md only functions and methods that exist in src/ or test/support/', () => {
    const sources = [...sourceTexts(join(root, 'src')), ...sourceTexts(join(root, 'test', 'support'))].join('\n');
    const cited = [...readFileSync(join(root, 'docs', 'architecture.md'), 'utf8').matchAll(/`(?:[\w$]+\.)*([\w$]+)\(\)`/g)].map((m) => m[1]!);
    expect(cited.length).toBeGreaterThan(5);
    expect(cited.filter((name) => !new RegExp(`\\b${name}\\s*(<[^>]*>)?\\(`).test(sources))).toEqual([]);
  });

  it('runs every runnable block against Redis: each exits by itself with code 0', async () => {
    const results = [];
    for (const [i, block] of blocks.entries()) {
      if (block.runnable) results.push(await runBlock(dir, i, block, env.server.url, 30_000));
    }
    expect(results.filter((r) => r.code !== 0)).toEqual([]);
  }, 200_000);
});
