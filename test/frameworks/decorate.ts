/**
 * Applies legacy decorators (TypeScript's `experimentalDecorators`, which Nest uses) the way TypeScript's
 * emitted `__decorate` does: the repository compiles without that flag, so the Nest test classes are
 * decorated by these calls instead of `@` syntax. Decorators listed top to bottom, as they would be written.
 */
type Class = abstract new (...args: never[]) => unknown;

export function decorateClass(target: Class, ...decorators: ClassDecorator[]): void {
  for (const decorator of decorators.reverse()) decorator(target as never);
}

export function decorateMethod(target: Class, method: string, ...decorators: MethodDecorator[]): void {
  const prototype = target.prototype as object;
  let descriptor = Object.getOwnPropertyDescriptor(prototype, method)!;
  for (const decorator of decorators.reverse()) descriptor = (decorator(prototype, method, descriptor) as PropertyDescriptor | undefined) ?? descriptor;
  Object.defineProperty(prototype, method, descriptor);
}

/** A parameter decorator on the constructor (`method` undefined) or on a method's parameter `index`. */
export function decorateParameter(target: Class, method: string | undefined, index: number, decorator: ParameterDecorator): void {
  decorator(method === undefined ? target : (target.prototype as object), method, index);
}
