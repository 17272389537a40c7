import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorEnvelope } from '../../libs/envelope';
import { answeredElsewhere, requestPath } from './http';

/** What Node's HTTP parser refuses before there is a request, and how we answer it. */
const ANSWERS: Record<string, { status: number; reason: string; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    message: 'The request headers are too large; send at most 16 KB of headers',
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: {
    status: 413,
    reason: 'Payload Too Large',
    message: 'The chunk extensions are too large; send the body without them',
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    reason: 'Request Timeout',
    message: 'The request did not arrive in time; send it again, without pauses',
  },
};
const MALFORMED = {
  status: 400,
  reason: 'Bad Request',
  message: 'The HTTP request is malformed; check its request line and headers',
};

/** The request line's method and target, when what arrived starts with one. */
function requestLine(raw: unknown): { method: string; url: string } {
  if (!Buffer.isBuffer(raw)) return { method: '', url: '' };
  const line = /^([A-Z]{1,16}) (\S{1,2048}) HTTP\/1\.[01]\r?\n/.exec(
    raw.toString('latin1', 0, 2100),
  );
  return line ? { method: line[1], url: line[2] } : { method: '', url: '' };
}

/**
 * The HTTP server's `clientError`: a request Node refuses before it reaches us (headers over
 * 16 KB, a malformed request line, a request too slow to arrive) is answered in the error
 * envelope like every other error, where Node would answer a bare status with no body.
 */
export function answerClientError(environment: string) {
  return (err: Error & { code?: string; rawPacket?: unknown }, socket: Duplex): void => {
    // As Node's own answer does: nothing is said once the response in flight on this
    // connection (a keep-alive one may have had many before) has sent its headers.
    // `_httpMessage` is Node's, undocumented: the response the socket is serving.
    const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const answer = (err.code && ANSWERS[err.code]) || MALFORMED;
    // The request in progress (its body too slow, say) is logged with this answer.
    if (inFlight) answeredElsewhere(inFlight, answer.status);
    const { method, url } = requestLine(err.rawPacket);
    const body = JSON.stringify(
      errorEnvelope({
        statusCode: answer.status,
        method,
        path: requestPath(url),
        url,
        message: answer.message,
        environment,
      }),
    );
    // Destroyed once written: the request in progress (a body that never came, cut by the
    // request timeout) must end, not stay open on a half-closed connection.
    socket.end(
      `HTTP/1.1 ${answer.status} ${answer.reason}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        'Cache-Control: no-store\r\n' +
        'X-Content-Type-Options: nosniff\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
      () => socket.destroy(),
    );
    // A peer that does not take even these few bytes does not hold the connection either.
    setTimeout(() => socket.destroy(), 1_000).unref();
  };
}
