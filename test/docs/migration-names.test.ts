/**
 * docs/migration.md claims nothing that does not exist: every relock name in the second column of its
 * tables (and every Redisson name of a row whose relock form is "the same") is a method or property of the
 * real objects (made by a real `LockClient` on a real Redis: locks, handles, semaphores, latch, signals),
 * an export of relock or node-redis, or a property of one of relock's exported option types (read with the
 * TypeScript compiler). A name written as `receiver.name` must exist on that receiver's objects.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as nodeRedis from 'redis';
import ts from 'typescript';
import * as relock from '../../src/index.js';
import { root } from '../support/build.js';
import { useRedis } from '../support/harness.js';
import { lockClient, uniqueName } from '../support/helpers.js';

const env = useRedis();

/** Every property name of `value` and its prototype chain (up to `Object.prototype`). */
function namesOf(value: object): Set<string> {
  const names = new Set<string>();
  for (let o: object | null = value; o && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const name of Object.getOwnPropertyNames(o)) names.add(name);
  }
  return names;
}

/** The property names of every interface and type alias exported by src/index.ts, and of their object-typed properties. */
function optionNames(): Set<string> {
  const program = ts.createProgram([join(root, 'src', 'index.ts')], { strict: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022 });
  const checker = program.getTypeChecker();
  const index = checker.getSymbolAtLocation(program.getSourceFile(join(root, 'src', 'index.ts'))!)!;
  const names = new Set<string>();
  const visit = (type: ts.Type, depth: number): void => {
    if (type.isUnion()) {
      for (const member of type.types) visit(member, depth);
      return;
    }
    for (const prop of checker.getPropertiesOfType(type)) {
      names.add(prop.getName());
      const declaration = prop.valueDeclaration ?? prop.declarations?.[0];
      if (depth > 0 && declaration) visit(checker.getNonNullableType(checker.getTypeOfSymbolAtLocation(prop, declaration)), depth - 1);
    }
  };
  for (const exported of checker.getExportsOfModule(index)) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    if (symbol.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) visit(checker.getDeclaredTypeOfSymbol(symbol), 1);
  }
  return names;
}

interface Row {
  readonly line: number;
  readonly peer: string;
  readonly relock: string;
}

/** The rows of every table of `markdown` (header and separator rows left out). */
function tableRows(markdown: string): Row[] {
  const rows: Row[] = [];
  const lines = markdown.split('\n');
  lines.forEach((text, i) => {
    if (!text.startsWith('|') || /^\|[-| ]+\|$/.test(text) || lines[i + 1]?.match(/^\|[-| ]+\|$/)) return;
    const cells = text.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim());
    rows.push({ line: i + 1, peer: cells[0] ?? '', relock: cells[1] ?? '' });
  });
  return rows;
}

/** A name a cell uses: `receiver.name`, a call `name(…)`, an option key `{ name }`, or a bare `name`. */
interface Use {
  readonly name: string;
  readonly receiver?: string | undefined;
}

/** Words of the language and literals, not names of an API. */
const NOT_NAMES = new Set(['async', 'await', 'function', 'new', 'return', 'typeof', 'true', 'false', 'null', 'undefined', 'Infinity']);

/** The names used in the code spans of `cell`: calls, `.properties` (with their receiver), option keys and bare names; each once. */
function usesIn(cell: string): Use[] {
  const uses = usesWithRepeats(cell).filter((use) => !NOT_NAMES.has(use.name));
  return uses.filter((use, i) => uses.findIndex((u) => u.name === use.name && u.receiver === use.receiver) === i);
}

function usesWithRepeats(cell: string): Use[] {
  const uses: Use[] = [];
  for (const [, span] of cell.matchAll(/`([^`]+)`/g)) {
    const code = span!.replace(/'[^']*'|"[^"]*"/g, "''").replace(/…/g, '');
    if (/^[A-Z]/.test(code) && !code.includes('.')) continue; // a type or a class of the peer's (`PermitHandle`, `Duration`)
    for (const m of code.matchAll(/(?:\b([A-Za-z_$][\w$]*)\.)?([A-Za-z_$][\w$]*)\s*\(/g)) {
      if (m[2] !== 'new') uses.push({ name: m[2]!, receiver: m[1] });
    }
    for (const m of code.matchAll(/\b([A-Za-z_$][\w$]*)((?:\.[A-Za-z_$][\w$]*)+)/g)) {
      const chain = [m[1]!, ...m[2]!.slice(1).split('.')];
      for (let i = 1; i < chain.length; i++) uses.push({ name: chain[i]!, receiver: i === 1 ? chain[0] : `${chain[i - 1]}` });
    }
    for (const [, inner] of code.matchAll(/\{([^{}]*)\}/g)) {
      for (const m of inner!.matchAll(/(?:^|,)\s*([A-Za-z_$][\w$]*)\s*(?=[:,]|\s*$)/g)) uses.push({ name: m[1]! });
    }
    for (const m of code.matchAll(/^([A-Za-z_$][\w$]*)\s*:/g)) uses.push({ name: m[1]! });
    if (/^[A-Za-z_$][\w$]*$/.test(code)) uses.push({ name: code });
  }
  return uses;
}

/** What the names of a receiver written in the docs may be: the objects it stands for. */
let receivers: Map<string, Array<Set<string>>>;
/** Every name that exists anywhere (objects, exports, option types). */
let known: Set<string>;

beforeAll(async () => {
  // Compiled first: under load it takes seconds, which must not eat the leases of the handles below.
  const options = optionNames();
  const client = lockClient(env.redis);
  const other = lockClient(env.redis);
  const name = uniqueName('names');
  const locks = [client.getLock(name), client.getFairLock(`${name}f`), client.getFencedLock(`${name}c`), client.getSpinLock(`${name}s`), client.getReadWriteLock(`${name}rw`).readLock(), client.getReadWriteLock(`${name}rw`).writeLock()];
  const groups = [client.getMultiLock(client.getLock(`${name}m1`), client.getLock(`${name}m2`)), client.getRedLock(client.getLock(`${name}r`), other.getLock(`${name}r`))];
  const semaphore = client.getSemaphore(`${name}sem`);
  const permits = client.getPermitExpirableSemaphore(`${name}pes`);
  const latch = client.getCountDownLatch(`${name}latch`);
  await permits.trySetPermits(1);
  const lockHandle = await locks[0]!.acquire({ leaseMs: 10_000 });
  const permitHandle = await permits.acquire({ leaseMs: 10_000 });
  const lockNames = [...locks, ...groups].map(namesOf);
  const handleNames = [namesOf(lockHandle), namesOf(permitHandle)];
  const semaphoreNames = [namesOf(semaphore), namesOf(permits)];
  const signalNames = [namesOf(lockHandle.signal)];
  receivers = new Map([
    ['locks', [namesOf(client)]],
    ['lock', lockNames],
    ['handle', handleNames],
    ['held', handleNames],
    ['s', semaphoreNames],
    ['RSemaphore', [namesOf(semaphore)]],
    ['RPermitExpirableSemaphore', [namesOf(permits)]],
    ['RCountDownLatch', [namesOf(latch)]],
    ['signal', signalNames],
  ]);
  known = new Set([
    ...[namesOf(client), ...lockNames, ...handleNames, ...semaphoreNames, namesOf(latch), ...signalNames].flatMap((set) => [...set]),
    ...Object.keys(relock),
    ...Object.keys(nodeRedis),
    ...options,
  ]);
  await Promise.all([lockHandle.release(), permitHandle.release()]);
}, 60_000);

describe('docs/migration.md names only what exists', () => {
  const markdown = readFileSync(join(root, 'docs', 'migration.md'), 'utf8');
  const rows = tableRows(markdown);

  it('finds the tables (a check that reads nothing passes nothing)', () => {
    expect(rows.length).toBeGreaterThan(60);
    expect(usesIn('`handle.extend(duration, \'ms\')`')).toEqual(expect.arrayContaining([{ name: 'extend', receiver: 'handle' }]));
  });

  it('every relock name in the tables, and every Redisson name whose relock form is "the same", exists', () => {
    const missing: string[] = [];
    for (const row of rows) {
      const cells = row.relock.startsWith('the same') ? [row.relock, row.peer] : [row.relock];
      for (const use of cells.flatMap(usesIn)) {
        const scope = use.receiver === undefined ? undefined : receivers.get(use.receiver);
        const exists = scope ? scope.some((names) => names.has(use.name)) : known.has(use.name);
        if (!exists) missing.push(`docs/migration.md:${row.line}: ${use.receiver ? `${use.receiver}.` : ''}${use.name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('the check fails on a name that does not exist', () => {
    const uses = usesIn('`handle.extendLease(5, \'s\')`, `tryLockSoon()`, `acquire({ waitForever: true })`');
    const absent = uses.filter((use) => !(use.receiver ? receivers.get(use.receiver)!.some((n) => n.has(use.name)) : known.has(use.name)));
    expect(absent.map((u) => u.name)).toEqual(['extendLease', 'tryLockSoon', 'waitForever']);
  });
});

describe('exported class names', () => {
  it("every exported primitive class carries Redisson's R prefix, and none of the former names is exported", () => {
    const classes = Object.entries(relock).filter(([name, value]) => typeof value === 'function' && /^[A-Z]/.test(name) && value.name === name);
    const primitives = classes.map(([name]) => name).filter((name) => !name.endsWith('Error') && !name.endsWith('Handle') && name !== 'LockClient' && name !== 'Leadership'); // Leadership: a handle (what campaign() resolves to), not a primitive
    expect(primitives.filter((name) => !/^R[A-Z]/.test(name))).toEqual([]);
    expect(primitives).toEqual(expect.arrayContaining(['RLock', 'RFencedLock', 'RSpinLock', 'RMultiLock', 'RRedLock', 'RFairLock', 'RSemaphore']));
    // FencedLock, SpinLock, MultiLock and RedLock were names of unpublished builds: not kept as aliases.
    expect(['FencedLock', 'SpinLock', 'MultiLock', 'RedLock'].filter((name) => name in relock)).toEqual([]);
  });
});
