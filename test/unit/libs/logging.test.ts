import { dirname, join } from 'node:path';

// moleculer's own packet class, as its transit hands it to the logger (not among its exports).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Packet, ...P } = require(join(dirname(require.resolve('moleculer')), 'src/packets')) as {
  Packet: new (type: string, target: string, payload: Record<string, unknown>) => object;
  PACKET_REQUEST: string;
};
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

  it('says of a moleculer packet its kind, sender and version, never its params or meta', () => {
    // As moleculer's transit logs a packet it could not handle (another protocol version).
    const packet = new Packet(P.PACKET_REQUEST, 'node-1', {
      ver: '5',
      sender: 'node-2',
      action: 'order.createDelivery',
      params: { recipient: { phone: '+2348031234567' } },
      meta: { user: { email: 'ada@example.com', name: 'Adaeze Okafor' } },
    });
    const text = jsonLogLine(
      'error',
      [new Error('Protocol version mismatch'), 'REQ', packet],
      bindings,
      now,
    );
    expect(JSON.parse(text)).toMatchObject({
      msg: 'REQ',
      error: { message: 'Protocol version mismatch' },
      packet: { type: 'REQ', sender: 'node-2', ver: '5', action: 'order.createDelivery' },
    });
    expect(text).not.toMatch(/2348031234567|ada@example\.com|Adaeze/);
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
