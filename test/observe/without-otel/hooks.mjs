// Module hooks that make `@opentelemetry/api` look uninstalled: resolving it fails as for a missing
// package, and each request is reported on stdout as {"type":"requested"}.
export async function resolve(specifier, context, nextResolve) {
  if (specifier === '@opentelemetry/api' || specifier.startsWith('@opentelemetry/api/')) {
    process.stdout.write(`${JSON.stringify({ type: 'requested', specifier })}\n`);
    throw Object.assign(new Error(`Cannot find package '${specifier}'`), { code: 'ERR_MODULE_NOT_FOUND' });
  }
  return nextResolve(specifier, context);
}
