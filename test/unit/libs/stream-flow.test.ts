import { PassThrough, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  CREDIT_RETRY_MS,
  CreditGate,
  FLOW_STEP,
  FLOW_WINDOW,
  StreamFlows,
  creditReturn,
  receiveFlow,
} from '../../../libs/stream-flow';

const KB = 1024;
const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A source of `n` chunks of `size` bytes that counts how much was read from it. */
function countingSource(n: number, size: number) {
  let read = 0;
  let i = 0;
  const source = new Readable({
    read() {
      if (i++ >= n) {
        this.push(null);
        return;
      }
      read += size;
      this.push(Buffer.alloc(size, i));
    },
  });
  return { source, read: () => read };
}

describe('CreditGate', () => {
  it('lets a window through, then holds the source until credit comes', async () => {
    const { source, read } = countingSource(100, 64 * KB);
    const gate = new CreditGate(256 * KB);
    let passed = 0;
    gate.on('data', (chunk: Buffer) => (passed += chunk.length));
    source.pipe(gate);
    for (let i = 0; i < 20; i++) await tick();
    expect(passed).toBe(256 * KB);
    // The source is read a little ahead (stream buffers), never the whole file.
    expect(read()).toBeLessThan(640 * KB);

    gate.grant(128 * KB);
    for (let i = 0; i < 20; i++) await tick();
    expect(passed).toBe(384 * KB);
  });

  it('passes everything once credit keeps coming', async () => {
    const { source } = countingSource(64, 64 * KB);
    const gate = new CreditGate(128 * KB);
    let passed = 0;
    const sink = new Writable({
      write(chunk: Buffer, _enc, callback) {
        passed += chunk.length;
        gate.grant(chunk.length);
        callback();
      },
    });
    await pipeline(source, gate, sink);
    expect(passed).toBe(64 * 64 * KB);
  });

  it('gives up after waiting stallMs for credit', async () => {
    const { source } = countingSource(10, 64 * KB);
    const gate = new CreditGate(64 * KB, 50);
    gate.resume();
    source.pipe(gate);
    const error = await new Promise<Error>((resolve) => gate.once('error', resolve));
    expect(error.message).toMatch(/no credit for 50 ms/);
  });
});

describe('creditReturn', () => {
  it('reports consumption in steps', async () => {
    const reports: number[] = [];
    const { source } = countingSource(40, 32 * KB);
    const counted = creditReturn(source, (bytes) => reports.push(bytes), 256 * KB);
    await pipeline(counted, new Writable({ write: (_c, _e, cb) => cb() }));
    expect(reports.every((r) => r >= 256 * KB)).toBe(true);
    expect(reports.reduce((a, b) => a + b, 0)).toBe(1280 * KB);
  });

  it('reports nothing for bytes nobody reads', async () => {
    const reports: number[] = [];
    const { source } = countingSource(100, 64 * KB);
    creditReturn(source, (bytes) => reports.push(bytes), 64 * KB);
    for (let i = 0; i < 20; i++) await tick();
    // Only what fills the stream buffers is counted; nothing is consumed.
    expect(reports.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(128 * KB);
  });

  it('forwards an error of the source', async () => {
    const source = new PassThrough();
    const counted = creditReturn(source, () => undefined);
    const failed = new Promise<Error>((resolve) => counted.once('error', resolve));
    source.destroy(new Error('client went away'));
    expect((await failed).message).toBe('client went away');
  });
});

describe('StreamFlows end to end (sender and receiver in one process)', () => {
  it('moves a large stream with at most a window in flight', async () => {
    const flows = new StreamFlows('gateway');
    const { source, read } = countingSource(400, 64 * KB); // 25 MB
    const { stream, meta } = flows.open(source, 'node-a');
    expect(meta).toEqual({
      id: expect.any(String),
      nodeID: 'node-a',
      action: 'gateway.streamCredit',
    });

    // The "transporter": no backpressure at all, like moleculer over NATS.
    const wire = new PassThrough({ highWaterMark: 1024 * 1024 * 1024 });
    stream.on('data', (chunk: Buffer) => wire.write(chunk));
    stream.on('end', () => wire.end());

    let maxInFlight = 0;
    let consumed = 0;
    const received = receiveFlow(wire, meta, async (action, params) => {
      expect(action).toBe('gateway.streamCredit');
      const { id, bytes } = params as { id: string; bytes: number };
      flows.grant(id, bytes);
    });
    await pipeline(
      received,
      new Writable({
        highWaterMark: 16 * KB,
        write(chunk: Buffer, _enc, callback) {
          consumed += chunk.length;
          maxInFlight = Math.max(maxInFlight, read() - consumed);
          setImmediate(callback); // a slow consumer
        },
      }),
    );
    expect(consumed).toBe(400 * 64 * KB);
    expect(maxInFlight).toBeLessThan(FLOW_WINDOW + FLOW_STEP + 512 * KB);
    expect(flows.size).toBe(0);
  });

  it('close() releases a gate whose receiver stopped early', async () => {
    const flows = new StreamFlows('file');
    const { source } = countingSource(1000, 64 * KB);
    const { stream, close } = flows.open(source, 'node-b');
    stream.resume();
    await tick();
    close();
    expect(flows.size).toBe(0);
  });
});

describe('receiveFlow', () => {
  it('sends credit again when the sender is not reachable yet, one call at a time', async () => {
    const calls: number[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    let failFirst = 2;
    const { source } = countingSource(64, 64 * KB);
    const received = receiveFlow(
      source,
      { id: '00000000-0000-4000-8000-000000000000', nodeID: 'gw', action: 'gateway.streamCredit' },
      async (_action, params) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((r) => setTimeout(r, 1));
        inFlight--;
        if (failFirst-- > 0) throw new Error("Service 'gateway.streamCredit' is not found");
        calls.push((params as { bytes: number }).bytes);
      },
    );
    // A consumer slow enough for the retries to happen while the stream is open.
    const slow = new Writable({ write: (_c, _e, cb) => setTimeout(cb, 10) });
    await pipeline(received, slow);
    expect(maxInFlight).toBe(1);
    expect(calls.length).toBeGreaterThan(0);
    // The credit of the failed calls was not lost: it went with a later one.
    expect(calls[0]).toBeGreaterThan(FLOW_STEP);
    expect(calls.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(2 * 1024 * KB);
  });

  it('stops sending once the stream is done', async () => {
    let calls = 0;
    const { source } = countingSource(16, 64 * KB);
    const received = receiveFlow(
      source,
      { id: '00000000-0000-4000-8000-000000000000', nodeID: 'gw', action: 'gateway.streamCredit' },
      async () => {
        calls++;
        throw new Error('gone');
      },
    );
    await pipeline(received, new Writable({ write: (_c, _e, cb) => cb() }));
    const after = calls;
    await new Promise((r) => setTimeout(r, 3 * CREDIT_RETRY_MS));
    expect(calls).toBe(after);
  });
});
