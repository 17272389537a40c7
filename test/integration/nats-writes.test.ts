import { connect, type NatsConnection } from 'nats';
import { coalesceWrites } from '../../libs/nats-transporter';

/** Counts the client's socket writes: its protocol handler's transport `send`. */
function countWrites(client: NatsConnection): () => number {
  const transport = (
    client as unknown as { protocol: { transport: { send(b: Uint8Array): void } } }
  ).protocol.transport;
  const send = transport.send.bind(transport);
  let writes = 0;
  transport.send = (bytes: Uint8Array) => {
    writes++;
    send(bytes);
  };
  return () => writes;
}

/**
 * What a service does under load: many publishes within one turn of the event loop, each
 * after some awaiting (a handler's promise chain), as the answers to one socket read's
 * requests leave.
 */
async function publishAcrossMicrotasks(client: NatsConnection, subject: string, count: number) {
  for (let i = 0; i < count; i++) {
    await Promise.resolve();
    client.publish(subject, new TextEncoder().encode(String(i)));
  }
}

describe('NATS writes between services', () => {
  let publisher: NatsConnection;
  let receiver: NatsConnection;

  beforeAll(async () => {
    const servers = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
    [publisher, receiver] = await Promise.all([connect({ servers }), connect({ servers })]);
  });

  afterAll(async () => {
    await Promise.all([publisher?.close(), receiver?.close()]);
  });

  it('go out in one socket write per turn of the event loop, every message delivered', async () => {
    expect(coalesceWrites(publisher)).toBe(true);
    const subject = `writes.${process.pid}.${Date.now()}`;
    const received: string[] = [];
    const sub = receiver.subscribe(subject, { max: 20 });
    const done = (async () => {
      for await (const msg of sub) received.push(msg.string());
    })();
    await receiver.flush();
    const writes = countWrites(publisher);

    await publishAcrossMicrotasks(publisher, subject, 20);
    await new Promise((resolve) => setImmediate(resolve));

    // Without coalescing, the client writes once per microtask checkpoint: 20 writes here.
    expect(writes()).toBe(1);
    await done;
    expect(received).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
  });

  it('writes at once what fills its buffer', async () => {
    const writes = countWrites(publisher);
    publisher.publish(`writes.big.${process.pid}`, new Uint8Array(64 * 1024));
    // Within the microtask the client flushes in, not a turn of the event loop later.
    await Promise.resolve();
    expect(writes()).toBe(1);
    await publisher.flush();
  });
});
