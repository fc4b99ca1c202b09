import { defineConfig } from 'vitest/config';

// Two projects: `unit` (pure, beside the code, no services) and `integration`
// (test/, against the real local stack started by `npm run stack -- up`).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['{apps,libs,schemas,deploy,bench}/**/src/**/*.test.ts'],
          exclude: ['**/node_modules/**'],
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/src/**/*.test.ts'],
          testTimeout: 240_000,
          hookTimeout: 240_000,
        },
      },
    ],
  },
});
