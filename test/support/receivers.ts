import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** An e-mail as the test's SMTP server received it. */
export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
}

export interface SmtpReceiver {
  url: string;
  mails: ReceivedMail[];
  /** The connections clients opened to it so far. */
  connections(): number;
  close(): Promise<void>;
}

/** A body's text, undoing the transfer encoding nodemailer chose for it. */
function decodeBody(headers: string, body: string): string {
  const encoding = /^content-transfer-encoding:\s*(\S+)/im.exec(headers)?.[1]?.toLowerCase();
  if (encoding === 'base64') return Buffer.from(body, 'base64').toString('utf8');
  if (encoding === 'quoted-printable') {
    const bytes = body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return body;
}

/** A header's value, its folded lines joined. */
const header = (headers: string, name: string) =>
  new RegExp(`^${name}:\\s*(.*(?:\\r?\\n[ \\t].*)*)`, 'im')
    .exec(headers)?.[1]
    ?.replace(/\r?\n[ \t]+/g, ' ')
    .trim() ?? '';

/**
 * A real SMTP server on a free local port, keeping what it accepts: plain SMTP without
 * STARTTLS or login, as `smtp://127.0.0.1:<port>` reaches it.
 */
export async function startSmtpReceiver(
  options: {
    /** How long it takes to accept each mail, as a real relay does; none unless told. */
    acceptMs?: number;
  } = {},
): Promise<SmtpReceiver> {
  const mails: ReceivedMail[] = [];
  let connections = 0;
  const server = new SMTPServer({
    authOptional: true,
    onConnect(_session, callback) {
      connections += 1;
      callback();
    },
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const split = raw.search(/\r?\n\r?\n/);
        const headers = raw.slice(0, split);
        const body = raw.slice(split).replace(/^\r?\n\r?\n/, '');
        const envelope = session.envelope;
        mails.push({
          from: envelope.mailFrom ? envelope.mailFrom.address : '',
          to: envelope.rcptTo.map((r) => r.address),
          subject: header(headers, 'subject'),
          text: decodeBody(headers, body).trim(),
        });
        if (options.acceptMs) setTimeout(callback, options.acceptMs);
        else callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What the fake provider does with one request: answer with a status, or drop the connection. */
export type SmsAnswer = number | 'drop';

export interface SmsRequest {
  path: string;
  body: Record<string, unknown>;
  /** What the provider answered. */
  answer: SmsAnswer;
}

export interface SmsProvider {
  url: string;
  requests: SmsRequest[];
  /** The messages it accepted (answered 200) for that number, as Termii received it. */
  accepted(to: string): string[];
  /** The answers for that number, in order; once they are used up it answers 200. */
  answerFor(to: string, answers: SmsAnswer[]): void;
  close(): Promise<void>;
}

/** A Termii stand-in on a free local port: `POST /api/sms/send`, answers as told per number. */
export async function startSmsProvider(
  options: {
    /** How long it takes to answer each request, as the real API does; none unless told. */
    answerMs?: number;
  } = {},
): Promise<SmsProvider> {
  const requests: SmsRequest[] = [];
  const scripted = new Map<string, SmsAnswer[]>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        // Recorded as an empty body: the test sees what came.
      }
      const answer = scripted.get(String(body.to))?.shift() ?? 200;
      // Kept once answered: a provider that takes its time has not taken the message before.
      const reply = () => {
        requests.push({ path: req.url ?? '', body, answer });
        const messageId = `m-${requests.length}`;
        if (answer === 'drop') {
          req.socket.destroy();
          return;
        }
        res.writeHead(answer, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(
            answer === 200
              ? { message_id: messageId, message: 'Successfully Sent', balance: 9 }
              : // As some providers do, quoting what it was sent.
                { message: 'Provider trouble, try again', sms: body.sms },
          ),
        );
      };
      if (options.answerMs) setTimeout(reply, options.answerMs);
      else reply();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    accepted: (to) =>
      requests.filter((r) => r.body.to === to && r.answer === 200).map((r) => String(r.body.sms)),
    answerFor: (to, answers) => void scripted.set(to, [...answers]),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * What a live node needs to start in a test: the secrets live requires, a Paystack key for a
 * provider at a closed port (these tests open no checkout), and the test's own SMTP server and
 * SMS provider.
 */
export function liveEnv(smtp: SmtpReceiver, sms: SmsProvider): Record<string, string> {
  return {
    APP_ENV: 'live',
    PUBLIC_BASE_URL: 'https://waybill.example.test',
    PAYSTACK_SECRET_KEY: 'sk_live_unused_by_these_tests',
    PAYSTACK_BASE_URL: 'https://127.0.0.1:9',
    PROOF_CODE_SECRET: 'live-proof-code-secret-for-the-test-0123456789',
    WEBHOOK_SECRET_KEY: 'live-webhook-secret-key-for-the-test-0123456789',
    SMTP_URL: smtp.url,
    MAIL_FROM: 'Waybill <deliveries@waybill.example.test>',
    TERMII_BASE_URL: sms.url,
    TERMII_API_KEY: 'termii-test-key',
    TERMII_SENDER_ID: 'Waybill',
  };
}
