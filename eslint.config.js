import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '.stack/**',
      '**/dist/**',
      'build/**',
      'bench-results/**',
      'bench/src/e2e/scratch/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
      // Packages are imported through their entry point only.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@sched/*/src/*', '**/libs/*/src/*'],
              message: 'Import a package through its entry point (@sched/name).',
            },
          ],
        },
      ],
    },
  },
);
