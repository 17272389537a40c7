import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  smtpSender,
  termiiNumber,
  termiiSender,
  type ChannelSender,
} from '../../../../libs/messaging/channels';
import {
  declaredTooLarge,
  ENDLESS_BYTES,
  redirectTo,
  streamedTooLarge,
  useFakeServers,
} from '../../../support/fake-server';
import { startSmsProvider, startSmtpReceiver, type SmtpReceiver } from '../../../support/receivers';

/** The channels against local servers: what goes on the wire, and what a refusal throws. */
describe('termiiSender', () => {
  it('posts the message as Termii’s API takes it', async () => {
    const provider = await startSmsProvider();
    try {
      const send = termiiSender({
        baseUrl: provider.url,
        apiKey: 'the-key',
        senderId: 'Waybill',
        channel: 'dnd',
        timeoutMs: 2000,
      });
      await send.send({ to: '+234 803-123-4567', subject: 'ignored', text: 'Hello Ada' });
      expect(provider.requests).toEqual([
        {
          path: '/api/sms/send',
          answer: 200,
          body: {
            to: '2348031234567',
            from: 'Waybill',
            sms: 'Hello Ada',
            type: 'plain',
            channel: 'dnd',
            api_key: 'the-key',
          },
        },
      ]);
    } finally {
      await provider.close();
    }
  });

  it('throws what the provider answered when it refuses, and when it hangs up', async () => {
    const provider = await startSmsProvider();
    try {
      provider.answerFor('2348031234567', [503, 'drop']);
      const send = termiiSender({
        baseUrl: provider.url,
        apiKey: 'k',
        senderId: 'Waybill',
        channel: 'dnd',
        timeoutMs: 2000,
      });
      const message = { to: '+2348031234567', subject: '', text: 'x' };
      await expect(send.send(message)).rejects.toThrow(/^Termii answered HTTP 503: .*try again/);
      await expect(send.send(message)).rejects.toThrow();
    } finally {
      await provider.close();
    }
  });

  it('gives up on a provider that does not answer within the time limit', async () => {
    const silent = createServer(() => {
      /* never answers */
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = silent.address() as AddressInfo;
      const send = termiiSender({
        baseUrl: `http://127.0.0.1:${port}`,
        apiKey: 'k',
        senderId: 'Waybill',
        channel: 'dnd',
        timeoutMs: 200,
      });
      await expect(send.send({ to: '234', subject: '', text: 'x' })).rejects.toThrow(
        'Termii: timed out after 200 ms',
      );
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  describe('against a provider that misbehaves', () => {
    const servers = useFakeServers();
    const send = () =>
      termiiSender({
        baseUrl: servers.server.url,
        apiKey: 'k',
        senderId: 'Waybill',
        channel: 'dnd',
        timeoutMs: 5000,
      }).send({ to: '234', subject: '', text: 'x' });

    it('takes a 2xx without waiting on its body, however large or slow', async () => {
      // Read on, it would time out: the send would fail, and its retry text the number again.
      servers.server.handle(declaredTooLarge);
      await expect(send()).resolves.toBeUndefined();
      const { handler, result } = streamedTooLarge();
      servers.server.handle(handler);
      await expect(send()).resolves.toBeUndefined();
      const { sent, finished } = await result;
      expect(finished).toBe(false);
      expect(sent).toBeLessThan(ENDLESS_BYTES);
    });

    it('reads only an excerpt of a refusal, declaring its length or not', async () => {
      servers.server.handle((_req, res) => {
        // 4 KiB sent of the 64 MB declared: waiting for the rest would time out.
        res.writeHead(503, { 'content-length': ENDLESS_BYTES });
        res.write('x'.repeat(4096));
      });
      await expect(send()).rejects.toThrow(
        new RegExp(`^Termii answered HTTP 503: ${'x'.repeat(200)}$`),
      );
      const { handler, result } = streamedTooLarge(503);
      servers.server.handle(handler);
      await expect(send()).rejects.toThrow(
        new RegExp(`^Termii answered HTTP 503: ${' '.repeat(200)}$`),
      );
      const { sent, finished } = await result;
      expect(finished).toBe(false);
      expect(sent).toBeLessThan(ENDLESS_BYTES);
    });

    it.each([301, 302, 307, 308])(
      'does not follow a %p to another server (the API key rides the body)',
      async (status) => {
        servers.server.handle(redirectTo(status, servers.elsewhere.url));
        await expect(send()).rejects.toThrow(
          `Termii: HTTP ${status}: redirect not followed (to ${servers.elsewhere.url})`,
        );
        expect(servers.elsewhere.paths).toEqual([]);
      },
    );
  });

  it('keeps only the digits of a number', () => {
    expect(termiiNumber('+234 (803) 123-4567')).toBe('2348031234567');
  });
});

/** An SMTP sender from `from` (two connections at most) to a receiver of the test's own, both closed after `use`. */
async function withSmtpSender(
  from: string,
  use: (smtp: SmtpReceiver, send: ChannelSender) => Promise<void>,
): Promise<void> {
  const smtp = await startSmtpReceiver();
  const send = smtpSender({ smtpUrl: smtp.url, from, timeoutMs: 2000, connections: 2 });
  try {
    await use(smtp, send);
  } finally {
    send.close?.();
    await smtp.close();
  }
}

describe('smtpSender', () => {
  it('hands the e-mail to the SMTP server from MAIL_FROM, with its subject and text', async () => {
    await withSmtpSender('Waybill <deliveries@example.com>', async (smtp, send) => {
      const text = `Waybill delivery P2P-ABC: your delivery code is 123456. ${'Long line. '.repeat(12)}`;
      await send.send({ to: 'ada@example.com', subject: 'Your Waybill delivery code', text });
      expect(smtp.mails).toEqual([
        {
          from: 'deliveries@example.com',
          to: ['ada@example.com'],
          subject: 'Your Waybill delivery code',
          text: text.trim(),
        },
      ]);
    });
  });

  it('refuses, live, to send over a connection the server does not upgrade to TLS', async () => {
    const smtp = await startSmtpReceiver();
    const send = smtpSender({
      smtpUrl: smtp.url,
      from: 'a@example.com',
      timeoutMs: 2000,
      connections: 1,
      requireTls: true,
    });
    try {
      await expect(
        send.send({ to: 'ada@example.com', subject: 's', text: 'Your code is 123456' }),
      ).rejects.toThrow(/STARTTLS/);
      expect(smtp.mails).toEqual([]);
    } finally {
      send.close?.();
      await smtp.close();
    }
  });

  it('keeps its connections open between mails, never more than it is allowed', async () => {
    await withSmtpSender('a@example.com', async (smtp, send) => {
      const mail = (n: number) =>
        send.send({ to: `p${n}@example.com`, subject: 's', text: `t${n}` });
      for (let n = 0; n < 4; n++) await mail(n);
      expect(smtp.connections()).toBe(1);
      await Promise.all(Array.from({ length: 8 }, (_, n) => mail(10 + n)));
      expect(smtp.mails).toHaveLength(12);
      expect(smtp.connections()).toBeLessThanOrEqual(2);
    });
  });

  it('never sends a mail given up while it waited for a connection', async () => {
    const smtp = await startSmtpReceiver({ acceptMs: 600 });
    const send = smtpSender({
      smtpUrl: smtp.url,
      from: 'a@example.com',
      timeoutMs: 2000,
      connections: 1,
    });
    try {
      const first = send.send({ to: 'first@example.com', subject: 's', text: 'first' });
      // Queued behind the first on the one connection, and given up meanwhile.
      const given = send.send(
        { to: 'given-up@example.com', subject: 's', text: 'given up' },
        AbortSignal.timeout(100),
      );
      await expect(given).rejects.toMatchObject({ name: 'AbortError' });
      await first;
      await new Promise((done) => setTimeout(done, 900));
      expect(smtp.mails.map((m) => m.text)).toEqual(['first']);
    } finally {
      send.close?.();
      await smtp.close();
    }
  });

  it('throws when no SMTP server answers', async () => {
    const smtp = await startSmtpReceiver();
    await smtp.close();
    const send = smtpSender({
      smtpUrl: smtp.url,
      from: 'a@example.com',
      timeoutMs: 1000,
      connections: 1,
    });
    await expect(send.send({ to: 'ada@example.com', subject: 's', text: 't' })).rejects.toThrow();
  });
});
