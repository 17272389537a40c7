import type { Logger } from 'moleculer';
import { createTransport } from 'nodemailer';
import type { Config, TermiiChannel } from '../config';
import { fetchOutbound } from '../outbound-fetch';

/**
 * The ways the platform reaches people, whichever service writes to them (order's
 * notifications, webhook's notices to endpoint owners): the channel of each is chosen by
 * `config.notifications`, so every service sends through the same providers.
 */

export const CHANNELS = ['SMS', 'EMAIL'] as const;
export type Channel = (typeof CHANNELS)[number];

/** One message as a channel sends it. */
export interface OutgoingMessage {
  /** A phone number (SMS) or an e-mail address. */
  to: string;
  /** The e-mail's subject; SMS have none. */
  subject: string;
  text: string;
}

/**
 * A way to reach people: resolves once the provider (SMTP server, SMS API) took the message,
 * throws with what went wrong otherwise. The sender retries; a channel never does. Once
 * `signal` aborts (the sender gave the attempt up), the message is not handed over any more.
 */
export interface ChannelSender {
  send(message: OutgoingMessage, signal?: AbortSignal): Promise<void>;
  /** Lets go of what it keeps open (an SMTP server's connections), when it keeps anything. */
  close?(): void;
}

/** What a provider answered, cut short: enough to diagnose, never a whole page. */
const EXCERPT = 200;
/** Bytes of a refusal read for its excerpt: 200 characters are at most 800 bytes of UTF-8. */
const EXCERPT_BYTES = 4 * EXCERPT;

/**
 * E-mail through an SMTP server, as `SMTP_URL` names it (nodemailer), over at most
 * `connections` connections kept open between messages (each sender its own): each new one
 * costs the server's greeting, STARTTLS and login again.
 */
export function smtpSender(options: {
  smtpUrl: string;
  from: string;
  timeoutMs: number;
  connections: number;
  /** An `smtp://` server must upgrade to TLS (STARTTLS) before the login: live. */
  requireTls?: boolean;
}): ChannelSender {
  const transport = createTransport({
    url: options.smtpUrl,
    // Without it nodemailer upgrades only when the server offers to, and a connection whose
    // offer was stripped on the way carries the login and the codes in clear.
    requireTLS: options.requireTls ?? false,
    pool: true,
    maxConnections: options.connections,
    // A mail whose connection closed is not tried again on another: the outbox's own retry
    // does that, counted and within its claim's lease.
    maxRequeues: 0,
    connectionTimeout: options.timeoutMs,
    greetingTimeout: options.timeoutMs,
    socketTimeout: options.timeoutMs,
  });
  return {
    close: () => transport.close(),
    async send(message, signal) {
      await transport.sendMail({
        from: options.from,
        to: message.to,
        subject: message.subject,
        text: message.text,
        // Aborted, a mail waiting for a pooled connection leaves the queue, and the connection
        // sending one is closed: a mail given up is never sent later, on the retry's heels.
        signal,
      });
    },
  };
}

/** A phone number as Termii takes it: international digits, no `+`, spaces or dashes. */
export const termiiNumber = (phone: string) => phone.replace(/[^\d]/g, '');

/**
 * SMS through Termii's Messaging API (`POST <base>/api/sms/send`), the common provider in
 * Nigeria: a plain message on the route configured (`TERMII_CHANNEL`: the transactional `dnd`
 * by default, as codes and links are; the promotional `generic` never reaches a number on
 * Do-Not-Disturb), from the registered sender ID.
 */
export function termiiSender(options: {
  baseUrl: string;
  apiKey: string;
  senderId: string;
  channel: TermiiChannel;
  timeoutMs: number;
}): ChannelSender {
  return {
    async send(message) {
      const res = await fetchOutbound(`${options.baseUrl}/api/sms/send`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({
          to: termiiNumber(message.to),
          from: options.senderId,
          sms: message.text,
          type: 'plain',
          channel: options.channel,
          api_key: options.apiKey,
        }),
        timeoutMs: options.timeoutMs,
        // A 2xx took the message: waiting on its body could only turn it into a failure, and
        // the retry into a second SMS. A refusal is read for the excerpt quoted, and no more.
        readsBody: (status) => status < 200 || status > 299,
        maxAnswerBytes: EXCERPT_BYTES,
        overLimit: 'cut',
      });
      if (!res.ok) throw new Error(`Termii: ${res.reason}`);
      if (res.status < 200 || res.status > 299) {
        throw new Error(`Termii answered HTTP ${res.status}: ${res.text.slice(0, EXCERPT)}`);
      }
    },
  };
}

/**
 * Staging's stand-in for a provider: the message goes to the log, text included (staging
 * shows codes to support anyway). Never used live (libs/config.ts refuses it there).
 */
export function logSink(channel: Channel, logger: () => Logger): ChannelSender {
  return {
    async send(message) {
      logger().info('message sent (log sink)', {
        channel,
        recipient: message.to,
        subject: message.subject,
        text: message.text,
      });
    },
  };
}

/** The sender of each channel, as the configuration chooses them. */
export function channelSenders(
  config: Config['notifications'],
  logger: () => Logger,
): Record<Channel, ChannelSender> {
  const { termii } = config.sms;
  return {
    EMAIL: config.smtpUrl
      ? smtpSender({
          smtpUrl: config.smtpUrl,
          from: config.mailFrom,
          timeoutMs: config.timeoutMs,
          connections: config.concurrency,
          requireTls: config.smtpRequireTls,
        })
      : logSink('EMAIL', logger),
    SMS:
      config.sms.provider === 'termii'
        ? termiiSender({
            baseUrl: termii.baseUrl,
            // libs/config.ts refuses `termii` without both.
            apiKey: termii.apiKey as string,
            senderId: termii.senderId as string,
            channel: termii.channel,
            timeoutMs: config.timeoutMs,
          })
        : logSink('SMS', logger),
  };
}
