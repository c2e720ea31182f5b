/**
 * The TypeScript blocks of the documentation (README.md, docs/*.md), for the docs test: extracted with
 * their prelude, written as modules, type-checked in one TypeScript program against relock's sources,
 * and run when marked runnable. The convention, for doc writers (also in docs/architecture.md):
 *
 * - Every ```ts block is compiled as a module of its own against relock's types.
 * - A fragment gets the lines it needs but does not show (imports, `declare`d names) from an HTML comment
 *   right above its fence: `<!-- prelude: import type { LockClient } from 'relock'; declare const locks: LockClient; -->`.
 * - A block fenced as ```ts runnable is a complete script: it is also run against a real Redis (its URL in
 *   `REDIS_URL`) and must exit by itself with code 0. It takes no prelude.
 * - A block fenced as ```ts file=locks.ts is written under that name, so that other blocks can import it
 *   (`import { locks } from './locks.js'`).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { root } from './build.js';

/** One ```ts block of a Markdown file. */
export interface DocBlock {
  /** The Markdown file, relative to the repository (`docs/locks.md`). */
  readonly file: string;
  /** Line (1-based) of the block's first line of code in `file`. */
  readonly line: number;
  readonly code: string;
  /** The lines of its `<!-- prelude: … -->` comment ('' without one). */
  readonly prelude: string;
  /** Line of the prelude comment in `file`. */
  readonly preludeLine: number;
  readonly runnable: boolean;
  /** The module name given with `file=` (`locks.ts`), if any. */
  readonly name?: string;
}

/** A problem found in a block, at `file:line`. */
export interface DocProblem {
  readonly at: string;
  readonly message: string;
}

/** The ```ts blocks of a Markdown text (fences may be indented, as in list items). */
export function extractBlocks(file: string, text: string): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, lang, info] = open as unknown as [string, string, string, string];
    const close = lines.findIndex((line, j) => j > i && line.trimEnd() === `${indent}\`\`\``);
    if (close === -1) throw new Error(`${file}:${i + 1}: a code fence that is never closed`);
    if (lang === 'ts' || lang === 'typescript') {
      const code = lines.slice(i + 1, close).map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line));
      const words = info.trim().split(/\s+/);
      const name = words.find((w) => w.startsWith('file='))?.slice('file='.length);
      blocks.push({ file, line: i + 2, code: code.join('\n'), ...preludeAbove(lines, i), runnable: words.includes('runnable'), ...(name ? { name } : {}) });
    }
    i = close;
  }
  return blocks;
}

/** The `<!-- prelude: … -->` comment ending on the last non-blank line above line `fence`. */
function preludeAbove(lines: readonly string[], fence: number): { prelude: string; preludeLine: number } {
  let end = fence - 1;
  while (end >= 0 && lines[end]!.trim() === '') end--;
  if (end < 0 || !lines[end]!.trimEnd().endsWith('-->')) return { prelude: '', preludeLine: 0 };
  let start = end;
  while (start > 0 && !lines[start]!.includes('<!--')) start--;
  const comment = lines.slice(start, end + 1).join('\n');
  const match = /<!--\s*prelude:([\s\S]*)-->/.exec(comment);
  return match ? { prelude: match[1]!.trim(), preludeLine: start + 1 } : { prelude: '', preludeLine: 0 };
}

/** The subpath exports of the package (`relock/<name>`), each built from `src/<name>/index.ts`. */
const SUBPATHS = ['fencing', 'express', 'fastify', 'nestjs'];

/** Compiler options of the blocks: a strict ESM consumer on Node, with `relock` mapped to the sources. */
function compilerOptions(): ts.CompilerOptions {
  return {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts', 'lib.esnext.disposable.d.ts'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
    // The NestJS guide's blocks use Nest's decorators, which are TypeScript's legacy ones.
    experimentalDecorators: true,
    paths: { relock: [join(root, 'src', 'index.ts')], ...Object.fromEntries(SUBPATHS.map((sub) => [`relock/${sub}`, [join(root, 'src', sub, 'index.ts')]])) },
  };
}

/** What a written block is: its module file and how its lines map back to the Markdown. */
interface Written {
  readonly block: DocBlock;
  readonly path: string;
  readonly preludeLines: number;
}

/**
 * Writes each block as a module under `dir` (which must lie inside the repository, so that `redis`
 * resolves from its node_modules) with a tsconfig for running them, and type-checks them all in one
 * program. Returns the problems at `file:line`: compiler errors, and times given in options objects as
 * `waitTime`/`leaseTime` without `unit` (which relock refuses at run time).
 */
export function checkBlocks(blocks: readonly DocBlock[], dir: string): DocProblem[] {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', paths: compilerOptions().paths } }));
  const written = blocks.map((block, i): Written => {
    const path = join(dir, block.name ?? `block-${i}.ts`);
    writeFileSync(path, block.prelude === '' ? block.code : `${block.prelude}\n${block.code}`);
    return { block, path, preludeLines: block.prelude === '' ? 0 : block.prelude.split('\n').length };
  });
  const program = ts.createProgram({ rootNames: written.map((w) => w.path), options: compilerOptions() });
  const byPath = new Map(written.map((w) => [w.path, w]));
  const problems: DocProblem[] = [];
  const where = (w: Written, source: ts.SourceFile, pos: number): string => {
    const line = source.getLineAndCharacterOfPosition(pos).line;
    return line < w.preludeLines ? `${w.block.file}:${w.block.preludeLine} (prelude)` : `${w.block.file}:${w.block.line + line - w.preludeLines}`;
  };
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const w = diagnostic.file && byPath.get(diagnostic.file.fileName);
    if (!w || diagnostic.start === undefined) problems.push({ at: diagnostic.file?.fileName ?? '(compiler)', message });
    else problems.push({ at: where(w, diagnostic.file!, diagnostic.start), message: `TS${diagnostic.code}: ${message}` });
  }
  for (const w of written) {
    const source = program.getSourceFile(w.path)!;
    const visit = (node: ts.Node): void => {
      if (ts.isObjectLiteralExpression(node)) {
        const names = node.properties.map((p) => (p.name && ts.isIdentifier(p.name) ? p.name.text : ''));
        for (const name of ['waitTime', 'leaseTime'].filter((n) => names.includes(n) && !names.includes('unit'))) {
          problems.push({ at: where(w, source, node.getStart(source)), message: `${name} without unit (relock refuses it): write ${name === 'waitTime' ? 'waitMs' : 'leaseMs'}, or add unit` });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return problems;
}

/** The outcome of running one runnable block. */
export interface RunResult {
  readonly at: string;
  readonly code: number | null;
  readonly output: string;
}

/**
 * Runs a block written by `checkBlocks` (index `i` in its list) with tsx, `relock` mapped to the sources,
 * `REDIS_URL` set; kills it after `timeoutMs` (then `code` is null: it did not exit by itself).
 */
export function runBlock(dir: string, i: number, block: DocBlock, redisUrl: string, timeoutMs: number): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, NODE_OPTIONS: '--unhandled-rejections=strict', REDIS_URL: redisUrl, TSX_TSCONFIG_PATH: join(dir, 'tsconfig.json') };
    const child = spawn(process.execPath, ['--import', 'tsx', join(dir, block.name ?? `block-${i}.ts`)], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ at: `${block.file}:${block.line}`, code: timedOut ? null : code, output });
    });
  });
}
