import { createRequire } from 'node:module';
import { loadConfig } from '../../libs/config';
import { backendDefinitions } from '../../services/catalog';
import { buildOpenApi } from '../../services/gateway/openapi';

/** What the test needs of ajv (v8): its own types are not the top-level ajv's (v6, eslint's). */
interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: unknown;
}
interface ValidateFunction {
  (data: unknown): boolean;
  errors?: AjvError[] | null;
}
interface Ajv {
  compile(schema: object): ValidateFunction;
}
type AjvClass = new (options: object) => Ajv;

/**
 * JSON Schema 2020-12 (OpenAPI 3.1's dialect) with its formats: the ajv and ajv-formats that
 * the OpenAPI validator (a devDependency, test/unit/gateway/openapi-schema.test.ts) depends on,
 * reached through those packages' own dependencies rather than a copy of our own.
 */
function newAjv(): Ajv {
  const fromValidator = createRequire(require.resolve('@seriousme/openapi-schema-validator'));
  const fromFormats = createRequire(fromValidator.resolve('ajv-formats'));
  const Ajv2020 = (fromFormats('ajv/dist/2020') as { default: AjvClass }).default;
  const addFormats = (fromValidator('ajv-formats') as { default: (ajv: Ajv) => void }).default;
  // Not strict: the document's schemas carry OpenAPI's own keywords (`example`, `x-…`).
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  return ajv;
}

type Json = Record<string, unknown>;

/**
 * Checks answers against `/openapi.json` as the gateway serves it: `answerErrors(path, method,
 * status, data)` lists where the success envelope carrying `data` breaks the operation's
 * documented answer (none when it meets it), so a view and the schema that documents it
 * cannot drift apart unnoticed.
 */
export function documentedAnswers(
  doc: Json = buildOpenApi(backendDefinitions(loadConfig({})), '1.0.0'),
) {
  const ajv = newAjv();
  const components = doc.components as Json;
  const paths = doc.paths as Record<string, Record<string, { responses: Record<string, Json> }>>;
  const compiled = new Map<string, ValidateFunction>();
  const validator = (path: string, method: string, status: number) => {
    const key = `${method} ${path} ${status}`;
    let validate = compiled.get(key);
    if (!validate) {
      const response = paths[path]?.[method.toLowerCase()]?.responses[String(status)];
      const content = response?.content as Record<string, { schema: Json }> | undefined;
      const schema = content?.['application/json']?.schema;
      if (!schema) throw new Error(`${key} documents no JSON answer`);
      // The operation's schema as the root, so its `#/components/...` references resolve.
      validate = ajv.compile({ ...schema, components });
      compiled.set(key, validate);
    }
    return validate;
  };
  return function answerErrors(path: string, method: string, status: number, data: unknown) {
    const validate = validator(path, method, status);
    if (validate({ success: true, message: 'Done', data })) return [];
    return (validate.errors ?? []).map(
      (e) => `${e.instancePath || '/'} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`,
    );
  };
}
