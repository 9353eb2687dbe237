// One lint setup for the whole repository: typescript-eslint's type-checked recommended rules, zero
// warnings allowed. Type information comes from tsconfig.json through the project service; the few
// JavaScript files (this one, bin/, scripts/, test helpers run as plain modules) are outside that
// project and are linted with the same rules minus the type-aware ones.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'native/build/**', 'bench/results/**', 'data/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  { languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } } },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  { files: ['**/*.js', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
  // Above the wire, no state is handed between functions through module variables: a module keeps
  // only memos owned by one function and id counters, each one named const object.
  // src/delivery/wire/README.md lists the rules that hold below the line.
  {
    files: ['src/delivery/**/*.ts'],
    ignores: ['src/delivery/wire/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...['Program > VariableDeclaration[kind="let"]', 'Program > ExportNamedDeclaration > VariableDeclaration[kind="let"]'].map((selector) => ({
          selector,
          message:
            'No module-level let in src/delivery outside src/delivery/wire/: keep a memo or counter as one named const object owned by one function, or move the code below the wire (src/delivery/wire/README.md).',
        })),
      ],
    },
  },
);
