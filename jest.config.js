// @ts-check
/** @type {import('jest').Config['transform']} */
// Transpile only: `npm run typecheck` type-checks the tests once, jest need not do it again.
const transform = {
  '^.+\\.ts$': ['ts-jest', { diagnostics: false }],
};

/** @type {import('jest').Config} */
module.exports = {
  // Integration suites start real server processes; unit tests finish far below this.
  testTimeout: 60000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
    },
  ],
};
