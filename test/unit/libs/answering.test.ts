import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { once } from 'node:events';
import { Answering } from '../../../libs/answering';

/**
 * The answers a stop waits for: each until it is sent or its connection closes, a pipelined
 * one still queued behind another included (Node never tells it `close`).
 */
describe('Answering', () => {
  it('settles once every answer is sent, or its connection gone, pipelined ones too', async () => {
    const answering = new Answering();
    const held: ServerResponse[] = [];
    const server = createServer((_req, res) => {
      answering.add(res);
      held.push(res);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      await answering.settled(); // none under way: at once
      const { port } = server.address() as AddressInfo;
      const client = connect(port, '127.0.0.1');
      await once(client, 'connect');
      // Two requests on one connection: the second waits behind the first.
      client.write('GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n');
      await new Promise<void>((resolve) => {
        const look = () => (held.length === 2 ? resolve() : setTimeout(look, 5));
        look();
      });
      let settled = false;
      const all = answering.settled().then(() => (settled = true));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(settled).toBe(false);
      client.destroy();
      await all;
      expect(settled).toBe(true);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
