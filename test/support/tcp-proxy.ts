import { connect, createServer, type Server, type Socket } from 'node:net';
import { Transform } from 'node:stream';
import { freePort } from './stack';

/**
 * A server of the shared infrastructure (NATS, MongoDB, Redis) as one process under test sees it,
 * through a port of the test's own: the test makes it unreachable for that process alone
 * (`cut`: no longer listening, every connection closed) and reachable again (`open`), while
 * the other processes and test files go on with the server itself.
 */
export interface TcpProxy {
  /** The port the process under test is given, e.g. `nats://127.0.0.1:${port}`. */
  port: number;
  /** Listens on `port`, forwarding each connection to the server. */
  open(): Promise<void>;
  /** Stops listening and closes every connection through it. */
  cut(): Promise<void>;
  /**
   * The server goes silent without closing anything, as a frozen server or a blackholed
   * network does: every connection stays open and nothing more is forwarded either way; new
   * connections are accepted and left unanswered.
   */
  stall(): void;
  /**
   * From the next chunk a connection sends that contains `text` (a key the process under test
   * writes, say), that connection's traffic to the server waits, in order, until `release`; its
   * other connections, and every other process, go on. Resolves once such a chunk came.
   */
  holdFrom(text: string): Promise<void>;
  /** Sends what was held, and everything after it, on to the server. */
  release(): void;
  /** Connections accepted so far. */
  connections(): number;
}

interface Pair {
  client: Socket;
  /** What the client sends, on its way to `upstream`. */
  sent: Transform;
  upstream: Socket;
}

/** A proxy to `target` (a URL such as `redis://127.0.0.1:6379`), closed until `open`. */
export async function tcpProxy(target: string): Promise<TcpProxy> {
  const { hostname, port: targetPort } = new URL(target);
  const port = await freePort();
  const sockets = new Set<Socket>();
  const pairs = new Set<Pair>();
  let server: Server | undefined;
  let stalled = false;
  let accepted = 0;
  let trigger: { text: string; caught: () => void } | undefined;
  let held: (() => void) | undefined;
  // What a connection sends passes through here: a chunk held is not passed on, and those after
  // it wait behind it, until `release`.
  const gate = () =>
    new Transform({
      transform(chunk: Buffer, _encoding, passOn) {
        if (!trigger || !chunk.includes(trigger.text)) return passOn(null, chunk);
        held = () => passOn(null, chunk);
        trigger.caught();
        trigger = undefined;
      },
    });
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    // Either end going away closes the other: an error is only that.
    socket.on('error', () => socket.destroy());
  };
  return {
    port,
    open: () =>
      new Promise((resolve, reject) => {
        server = createServer((client) => {
          const upstream = connect(Number(targetPort), hostname);
          track(client);
          track(upstream);
          client.once('close', () => upstream.destroy());
          upstream.once('close', () => client.destroy());
          accepted++;
          if (stalled) return;
          const pair: Pair = { client, sent: gate(), upstream };
          pairs.add(pair);
          client.once('close', () => pairs.delete(pair));
          client.pipe(pair.sent).pipe(upstream);
          upstream.pipe(client);
        });
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      }),
    cut: async () => {
      const closed = new Promise<void>((resolve) =>
        server ? server.close(() => resolve()) : resolve(),
      );
      server = undefined;
      for (const socket of sockets) socket.destroy();
      await closed;
    },
    stall: () => {
      stalled = true;
      for (const { client, sent, upstream } of pairs) {
        client.unpipe(sent);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    holdFrom: (text) => new Promise<void>((caught) => (trigger = { text, caught })),
    release: () => {
      held?.();
      held = undefined;
    },
    connections: () => accepted,
  };
}
