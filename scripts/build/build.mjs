// Builds dist/esm (ES modules) and dist/cjs (CommonJS) from src/ with tsc, and marks
// dist/cjs as CommonJS so Node and TypeScript read its .js and .d.ts files as such.
// The `relock` command (src/cli) is built as ESM only, and its entry made executable.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync(join(root, 'dist'), { recursive: true, force: true });
for (const flavour of ['esm', 'cjs']) {
  execFileSync(process.execPath, [tsc, '-p', join(root, 'scripts', 'build', `tsconfig.${flavour}.json`)], { stdio: 'inherit' });
}
mkdirSync(join(root, 'dist', 'cjs'), { recursive: true });
writeFileSync(join(root, 'dist', 'cjs', 'package.json'), '{ "type": "commonjs" }\n');
chmodSync(join(root, 'dist', 'esm', 'cli', 'main.js'), 0o755);
