import { jsonLogLine } from '../../../libs/logging';

const bindings = { nodeID: 'node-1', ns: 'waybill', mod: 'gateway', svc: 'gateway' };
const now = new Date('2026-01-02T03:04:05.000Z');

describe('jsonLogLine', () => {
  it('joins strings into msg and lifts object fields to the top level', () => {
    const line = JSON.parse(
      jsonLogLine('info', ['http', { method: 'GET', status: 200 }, 42], bindings, now),
    );
    expect(line).toEqual({
      time: '2026-01-02T03:04:05.000Z',
      level: 'info',
      msg: 'http 42',
      method: 'GET',
      status: 200,
      nodeID: 'node-1',
      ns: 'waybill',
      mod: 'gateway',
      svc: 'gateway',
    });
  });

  it('describes errors, alone or inside an object', () => {
    const err = Object.assign(new Error('boom'), { type: 'X', code: 500 });
    const alone = JSON.parse(jsonLogLine('error', ['failed', err], bindings, now));
    expect(alone.error).toMatchObject({ name: 'Error', message: 'boom', type: 'X', code: 500 });
    expect(alone.error.stack).toMatch(/boom/);
    const nested = JSON.parse(
      jsonLogLine('error', ['failed', { error: err, path: '/x' }], bindings),
    );
    expect(nested).toMatchObject({ path: '/x', error: { message: 'boom' } });
  });

  it('keeps one line whatever the input', () => {
    expect(jsonLogLine('warn', ['a\nb', ['x']], bindings)).not.toContain('\n');
  });

  it('keeps the order of a line: time, level, msg, fields, then where it ran, which wins', () => {
    const line = (fields: object) => JSON.parse(jsonLogLine('info', [fields], bindings, now));
    expect(Object.keys(line({ status: 200, path: '/x' }))).toEqual([
      ...['time', 'level', 'msg', 'status', 'path'],
      ...['nodeID', 'ns', 'mod', 'svc'],
    ]);
    expect(line({ svc: 'spoofed', msg: 'from a field' })).toMatchObject({
      msg: 'from a field',
      svc: 'gateway',
    });
  });

  it('gives each line its own moment, however many share a millisecond', () => {
    const times = [now, now, new Date(now.getTime() + 1), new Date(now.getTime() + 1), now].map(
      (at) => JSON.parse(jsonLogLine('info', ['x'], bindings, at)).time,
    );
    expect(times).toEqual([
      '2026-01-02T03:04:05.000Z',
      '2026-01-02T03:04:05.000Z',
      '2026-01-02T03:04:05.001Z',
      '2026-01-02T03:04:05.001Z',
      '2026-01-02T03:04:05.000Z',
    ]);
  });

  it('gives what JSON cannot write an empty word, as joining words did', () => {
    const msg = (args: unknown[]) => JSON.parse(jsonLogLine('warn', args, bindings, now)).msg;
    expect(msg(['failed', undefined])).toBe('failed ');
    expect(msg([undefined, 'x'])).toBe(' x');
    expect(msg(['a', () => 1, 'b'])).toBe('a  b');
  });
});
