import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

/**
 * Services know each other only through `libs/contracts` and moleculer calls and events:
 * a file under `services/<a>/` never imports from `services/<b>/` (nor the catalog, which
 * knows every service). The regex refuses a relative path that climbs exactly to `services/`
 * from a file `depth` folders below it; `libs/` never imports a service at all.
 */
const SERVICE_BOUNDARY =
  'Import another service through libs/contracts (its action names, types, events and shared helpers) and call it with call(); only services/catalog.ts and services/index.ts know every service';

// Flat config: for one file the last matching `no-restricted-imports` wins whole, so every
// one of them says it again.
const ONE_JOI = {
  name: 'joi',
  message:
    'Import Joi from libs/joi: its strings count characters as the OpenAPI document does (decision 36)',
};

const restrictedImports = (patterns, paths = [ONE_JOI]) => ({
  'no-restricted-imports': ['error', { paths, patterns }],
});

const serviceBoundary = (depth) => ({
  files: [`services/*/${'*/'.repeat(depth - 1)}*.ts`],
  rules: restrictedImports([
    { regex: `^${'\\.\\./'.repeat(depth)}(?!\\.\\./)`, message: SERVICE_BOUNDARY },
  ]),
});

const LIBS_NEVER_IMPORT_SERVICES = {
  regex: '(^|/)services(/|$)',
  message: 'libs/ is shared by every service; it never imports one',
};

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.local/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { module: 'writable', require: 'readonly' },
    },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      eqeqeq: ['error', 'smart'],
      ...restrictedImports([]),
    },
  },
  serviceBoundary(1),
  serviceBoundary(2),
  serviceBoundary(3),
  { files: ['libs/**/*.ts'], rules: restrictedImports([LIBS_NEVER_IMPORT_SERVICES]) },
  { files: ['libs/joi.ts'], rules: restrictedImports([LIBS_NEVER_IMPORT_SERVICES], []) },
);
