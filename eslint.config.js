// ESLint (flat config), `npm run lint`: typescript-eslint's type-checked recommendations over src/ and
// scripts/, plus growth limits (complexity, function length) set at the worst of the code when lint was
// introduced plus a margin: they stop a function from growing further, they do not judge the ones already
// there. Tests are type-checked by `npm run typecheck` and not linted.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'docs/**', 'node_modules/**', 'test/**', 'profiles/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // As TypeScript's noUnusedLocals/noUnusedParameters: a leading underscore marks a deliberate unused.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // An aborted call rejects with `signal.reason`, whatever the caller aborted with (as Node's own APIs
      // do), and a retry rethrows the first failure as it came: neither is always an Error.
      '@typescript-eslint/prefer-promise-reject-errors': 'off',
      '@typescript-eslint/only-throw-error': 'off',
      // Growth limits: the worst when lint came in was 28 (scripts/faults/scenarios/sentinel.ts) and 86 lines
      // (scripts/bench/goals.ts).
      complexity: ['error', 30],
      'max-lines-per-function': ['error', { max: 90, skipBlankLines: true, skipComments: true }],
    },
  },
);
