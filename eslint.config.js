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
);
