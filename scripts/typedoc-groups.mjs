// @ts-check
/**
 * TypeDoc plugin (scripts/typedoc.json): puts every top-level export of the API reference in a sidebar
 * group by what it is, in the order `groupOrder` gives: Client (`createLockClient`, `LockClient`,
 * `runInContext`), Objects (the locks, semaphores, latch and handles), Errors (the `RelockError` classes),
 * Types (options, events and other types), Guides (the docs/*.md pages attached to `src/index.ts` with
 * `@document`). An export whose docstring has a `@group` tag keeps it. Guides are named by their first
 * `# heading`, which is taken off the page (TypeDoc shows the name as the page title).
 */
import { Comment, CommentTag, Converter, ReflectionKind } from 'typedoc';

/** @param {import('typedoc').DeclarationReflection} reflection */
function groupOf(reflection) {
  if (reflection.kindOf(ReflectionKind.Function) || reflection.name === 'LockClient') return 'Client';
  if (reflection.kindOf(ReflectionKind.Class)) return reflection.name.endsWith('Error') ? 'Errors' : 'Objects';
  // A type that classes extend or implement is the base of objects (GroupLock of MultiLock and RedLock).
  if (reflection.extendedBy?.length || reflection.implementedBy?.length) return 'Objects';
  return 'Types';
}

/**
 * Names a guide by its `# heading` (TypeDoc would name it by its file) and takes the heading off its content.
 * @param {import('typedoc').DocumentReflection} document
 */
function titleGuide(document) {
  const parts = document.content;
  if (parts[0]?.kind !== 'text' || !parts[0].text.startsWith('# ')) return;
  let title = '';
  for (const [i, part] of parts.entries()) {
    const end = part.kind === 'text' ? part.text.indexOf('\n') : -1;
    title += end === -1 ? part.text : part.text.slice(0, end);
    if (end !== -1) {
      document.name = title.slice(2).replace(/`/g, '').trim();
      document.content = [{ ...part, text: part.text.slice(end).replace(/^\n+/, '') }, ...parts.slice(i + 1)];
      return;
    }
  }
}

/** @param {import('typedoc').Application} app */
export function load(app) {
  // After the types are resolved (extendedBy), before GroupPlugin groups them (also at resolveEnd, priority 0).
  app.converter.on(Converter.EVENT_RESOLVE_END, (context) => {
    const project = context.project;
    for (const document of project.documents ?? []) {
      titleGuide(document);
      document.frontmatter.group ??= 'Guides';
    }
    for (const child of project.children ?? []) {
      const tagged = [child.comment, ...child.getNonIndexSignatures().map((s) => s.comment)].some((c) => c?.getTag('@group'));
      if (tagged) continue;
      child.comment ??= new Comment();
      child.comment.blockTags.push(new CommentTag('@group', [{ kind: 'text', text: groupOf(child) }]));
    }
  }, 100);
}
