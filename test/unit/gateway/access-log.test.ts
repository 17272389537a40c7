import type { Logger } from 'moleculer';
import { CLIENT_CLOSED_REQUEST, accessLog } from '../../../services/gateway/edge';
import { cutAnswer } from '../../../services/gateway/http';
import { FakeResponse, fakeRequest } from './fake-http';

/** A request through the access log: the statuses logged and measured for it. */
function logged() {
  const lines: number[] = [];
  const measured: number[] = [];
  const logger = {
    info: (_msg: string, line: { status: number }) => lines.push(line.status),
    debug: () => undefined,
  } as unknown as Logger;
  const res = new FakeResponse();
  accessLog(
    () => logger,
    (_req, status) => measured.push(status),
  )(fakeRequest({ url: '/api/things' }), res.asServerResponse(), () => undefined);
  return { res, lines, measured };
}

const closed = (res: FakeResponse) => new Promise((resolve) => res.once('close', resolve));

describe('the access log', () => {
  it('records each request once: an answer sent with its status, one its client left as 499', async () => {
    const sent = logged();
    sent.res.statusCode = 201;
    sent.res.end('{}');
    await closed(sent.res);
    expect(sent.lines).toEqual([201]);
    expect(sent.measured).toEqual([201]);

    const left = logged();
    left.res.write('part of it');
    left.res.destroy();
    await closed(left.res);
    expect(CLIENT_CLOSED_REQUEST).toBe(499);
    expect(left.lines).toEqual([499]);
    expect(left.measured).toEqual([499]);
  });

  it('records an answer the gateway cut with the status it cut it with', async () => {
    const { res, lines, measured } = logged();
    res.write('part of it');
    cutAnswer(res.asServerResponse(), 502);
    await closed(res);
    expect(lines).toEqual([502]);
    expect(measured).toEqual([502]);
  });
});
