// @ts-check
/** @type {import('jest').Config['transform']} */
// Transpile only: `npm run typecheck` type-checks the tests once, jest need not do it again.
const transform = {
  '^.+\\.ts$': ['ts-jest', { diagnostics: false }],
  // A few dependencies ship only ES modules; Node 24 loads them natively, jest needs them
  // turned into CommonJS.
  '^.+\\.js$': ['ts-jest', { diagnostics: false, tsconfig: { allowJs: true } }],
};

/** ES-module-only packages, transformed; everything else in node_modules is left alone. */
const transformIgnorePatterns = ['/node_modules/(?!(kdbush|geokdbush|tinyqueue|@scure|@noble)/)'];

/**
 * The build (dist/, with its copy of package.json) and this checkout's state (.local/) are run
 * as child processes, never loaded by jest; its module map would find two `waybill` packages.
 */
const modulePathIgnorePatterns = ['<rootDir>/dist/', '<rootDir>/.local/'];

/** @type {import('jest').Config} */
module.exports = {
  // Integration suites start real server processes; unit tests finish far below this.
  testTimeout: 60000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      transformIgnorePatterns,
      modulePathIgnorePatterns,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform,
      transformIgnorePatterns,
      modulePathIgnorePatterns,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
    },
  ],
};
