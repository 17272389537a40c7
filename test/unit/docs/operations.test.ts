import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'moleculer';
import { jsonLogLine } from '../../../libs/logging';
import { accessLog } from '../../../services/gateway/edge';
import { FakeResponse, fakeRequest } from '../gateway/fake-http';

const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'operations.md'), 'utf8');

/** The section `## <title>` of docs/operations.md. */
const section = (title: string) =>
  doc.split(/^## /m).find((part) => part.startsWith(`${title}\n`)) ?? '';

/** The field names of each table of a section: its rows' first cells written as `code`. */
function fieldTables(text: string): string[][] {
  return text
    .split(/\n\s*\n/)
    .filter((block) => block.startsWith('| field'))
    .map((table) =>
      table
        .split('\n')
        .map((row) => /^\| `([^`]+)` +\|/.exec(row)?.[1])
        .filter((name): name is string => name !== undefined),
    );
}

const bindings = { nodeID: 'node-1', ns: 'waybill', mod: 'gateway', svc: 'gateway' };
const [lineFields, httpFields] = fieldTables(section('Logs'));

describe('docs/operations.md, "Logs"', () => {
  it('names the fields of a JSON log line as the formatter writes them, in order', () => {
    const line = JSON.parse(jsonLogLine('info', ['started'], bindings)) as object;
    expect(lineFields).toEqual(Object.keys(line));
    const err = Object.assign(new Error('boom'), { type: 'SERVICE_UNAVAILABLE', code: 503 });
    const failed = JSON.parse(jsonLogLine('error', ['failed', err], bindings)) as {
      error: object;
    };
    const [, errorFields = ''] = /an error as `error`: ([^|]*)/.exec(section('Logs')) ?? [];
    const named = [...errorFields.matchAll(/`(\w+)`/g)].map((m) => m[1]);
    expect(named).toEqual(Object.keys(failed.error));
  });

  it("names the fields of the gateway's http line as it writes them, in order", () => {
    let written = '';
    const logger = {
      info: (...args: unknown[]) => (written = jsonLogLine('info', args, bindings)),
    } as unknown as Logger;
    const req = fakeRequest({
      url: '/api/me?x=1',
      meta: { apiKeyId: 'key-1', courier: { id: 'courier-1' } },
    });
    const res = new FakeResponse();
    accessLog(
      () => logger,
      () => undefined,
    )(req, res.asServerResponse(), () => undefined);
    res.end();
    res.emit('finish');
    const line = JSON.parse(written) as Record<string, unknown>;
    expect(line.msg).toBe('http');
    expect(httpFields).toEqual(Object.keys(line).filter((key) => !lineFields.includes(key)));
  });
});
