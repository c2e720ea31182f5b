// Run in a scratch project that installed relock and pg (no database needed): imports relock/fencing as an
// ES module and requires it as CommonJS; prints a JSON line with what each resolved to and exported.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const esm = await import('relock/fencing');
const cjs = require('relock/fencing');
const stale = new esm.StaleTokenError('r', 1n, 2n);
console.log(JSON.stringify({
  esm: { resolved: import.meta.resolve('relock/fencing'), exports: Object.keys(esm).sort() },
  cjs: { resolved: require.resolve('relock/fencing'), exports: Object.keys(cjs).sort() },
  stale: { name: stale.name, code: stale.code },
}));
