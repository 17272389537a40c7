import { execFileSync } from 'node:child_process';
import { loadConfig } from '../../../libs/config';
import { backendDefinitions } from '../../../services/catalog';
import { buildOpenApi } from '../../../services/gateway/openapi';

/**
 * The served document against the official OpenAPI 3.1 schema. The validator is an ES module
 * that reads its schemas relative to itself, so it runs in a Node process of its own.
 */
const VALIDATE = `
import { Validator } from '@seriousme/openapi-schema-validator';
let text = '';
for await (const chunk of process.stdin) text += chunk;
const result = await new Validator().validate(JSON.parse(text));
process.stdout.write(JSON.stringify(result));
`;

it('the OpenAPI document of every service is valid OpenAPI 3.1', () => {
  const doc = buildOpenApi(backendDefinitions(loadConfig({})), '1.0.0');
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', VALIDATE], {
    input: JSON.stringify(doc),
    encoding: 'utf8',
  });
  expect(JSON.parse(output)).toEqual({ valid: true });
});
