import { request as httpRequest, type IncomingMessage } from 'node:http';
import { createUserWithKey } from '../support/http';
import { fileTopologies } from '../support/file-stack';
import { HEADS, fileOf } from '../support/multipart';
import { dropDatabases, isolation, type NodeProcess } from '../support/stack';

/**
 * A stop (SIGTERM) while a download is piped to its client: moleculer's wait for calls in
 * progress does not see bytes sent after the action returned (in one process, or pulled from
 * the file service on another node), and the download was cut as the process exited. The
 * stop now waits for the answers under way, within STOP_GRACE_MS, and exits 0.
 */
const SIZE = 18 * 1024 * 1024;

describe.each(fileTopologies)('a download under way at a stop (%s)', (_name, start) => {
  const iso = isolation();
  let nodes: NodeProcess[] = [];
  let base: string;

  beforeAll(async () => {
    const stack = await start(iso, { common: { STOP_GRACE_MS: '20000' } });
    nodes = stack.nodes;
    base = stack.url;
  });

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop('SIGKILL')));
    await dropDatabases(iso);
  });

  it('is sent whole before the process exits, 0', async () => {
    const { key } = await createUserWithKey(base);
    const bytes = fileOf(HEADS.png, SIZE);
    const form = new FormData();
    form.append('upload-file', new Blob([bytes]), 'big.png');
    const stored = await fetch(`${base}/file/single-upload`, {
      method: 'POST',
      headers: { 'api-key': key },
      body: form,
    });
    expect(stored.status).toBe(200);
    const { url } = ((await stored.json()) as { data: { url: string } }).data;

    const received: Buffer[] = [];
    const download = httpRequest(`${base}/file/download`, {
      method: 'POST',
      headers: { 'api-key': key, 'content-type': 'application/json' },
    });
    const answered = new Promise<IncomingMessage>((resolve, reject) => {
      download.once('response', resolve);
      download.once('error', reject);
    });
    download.end(JSON.stringify({ url }));
    const res = await answered;
    expect(res.statusCode).toBe(200);
    // Read nothing for now: the rest waits in the pipes.
    res.pause();
    const whole = new Promise<boolean>((resolve) => {
      res.on('data', (chunk: Buffer) => received.push(chunk));
      res.once('end', () => resolve(true));
      res.once('aborted', () => resolve(false));
      res.once('error', () => resolve(false));
    });

    const exits = nodes.map(
      (n) => new Promise<number | null>((resolve) => n.child.once('exit', resolve)),
    );
    for (const n of nodes) n.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    res.resume();
    expect(await whole).toBe(true);
    expect(Buffer.concat(received).equals(bytes)).toBe(true);
    expect(await Promise.all(exits)).toEqual(nodes.map(() => 0));
  }, 60_000);
});
