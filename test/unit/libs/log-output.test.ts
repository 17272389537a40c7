import { setImmediate as nextTurn } from 'node:timers/promises';
import { ServiceBroker } from 'moleculer';
import { BufferedConsoleLogger, LineBuffer } from '../../../libs/log-output';
import { capabilitiesHidden, jsonLogLine } from '../../../libs/logging';

describe('LineBuffer', () => {
  it('writes the lines of one turn with one write, in order', async () => {
    const writes: string[] = [];
    const buffer = new LineBuffer((text) => writes.push(text));
    for (let i = 0; i < 100; i++) buffer.push(`line ${i}`);
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toHaveLength(1);
    expect(writes[0].split('\n').slice(0, -1)).toEqual(
      Array.from({ length: 100 }, (_, i) => `line ${i}`),
    );
    buffer.push('next turn');
    await nextTurn();
    expect(writes).toEqual([writes[0], 'next turn\n']);
  });

  it('writes at once when a turn piles up its limit, and flush leaves nothing behind', async () => {
    const writes: string[] = [];
    const buffer = new LineBuffer((text) => writes.push(text), 20);
    buffer.push('0123456789');
    buffer.push('0123456789');
    expect(writes).toEqual(['0123456789\n0123456789\n']);
    buffer.push('last');
    buffer.flush();
    expect(writes).toHaveLength(2);
    await nextTurn();
    expect(writes).toEqual(['0123456789\n0123456789\n', 'last\n']);
  });
});

describe('BufferedConsoleLogger', () => {
  /**
   * What a broker's logger (`BufferedConsoleLogger`, JSON lines, hiding as `conceal` says)
   * wrote for the lines `log` logs in one turn: each write to stdout and to stderr, and how
   * many were made to stdout before the turn ended.
   */
  async function writtenBy(
    log: (logger: ReturnType<ServiceBroker['getLogger']>) => void,
    conceal?: (line: string) => string,
  ) {
    const out = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const err = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const broker = new ServiceBroker({
        nodeID: 'log-test',
        logger: new BufferedConsoleLogger({
          level: 'info',
          formatter: (level, args, bindings) => [jsonLogLine(level, args, bindings)],
          conceal,
        }),
      });
      const logger = broker.getLogger('edge');
      await nextTurn();
      out.mockClear();
      err.mockClear();
      log(logger);
      const outBeforeTurn = out.mock.calls.length;
      await nextTurn();
      const writes = (spy: typeof out) => spy.mock.calls.map(([text]) => String(text));
      return { out: writes(out), err: writes(err), outBeforeTurn };
    } finally {
      out.mockRestore();
      err.mockRestore();
    }
  }

  it('writes the lines a broker logs in one turn to stdout with one write, warnings to stderr', async () => {
    const written = await writtenBy((logger) => {
      logger.info('http', { status: 200 });
      logger.info('http', { status: 201 });
      logger.debug('not at this level');
      logger.warn('slow');
    });
    expect(written.outBeforeTurn).toBe(0);
    expect(written.out).toHaveLength(1);
    const lines = written.out[0]
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l: { status: number }) => l.status)).toEqual([200, 201]);
    expect(lines[0]).toMatchObject({ level: 'info', msg: 'http', nodeID: 'log-test' });
    expect(written.err).toHaveLength(1);
    expect(JSON.parse(written.err[0])).toMatchObject({ level: 'warn', msg: 'slow' });
  });

  /** What one line of each kind reads once written, by a logger hiding as `references` says. */
  async function written(references: boolean) {
    const { out, err } = await writtenBy((logger) => {
      logger.info('checkout decided', { reference: REFERENCE, ledger: `checkout:${REFERENCE}.2` });
      logger.warn(`line\n${TRACKING_ID} failed`, new Error(`checkout ${REFERENCE} is not stored`));
    }, capabilitiesHidden({ references }));
    return `${out[0]}${err[0]}`;
  }
  const REFERENCE = `ck-${'0123456789abcdef0123'.repeat(2)}`;
  const TRACKING_ID = 'P2P-7K3M9QZX2B4R';

  it('cuts a tracking id, and a sandbox checkout reference, to a prefix wherever a line holds one', async () => {
    const text = await written(true);
    expect(text).not.toContain(REFERENCE);
    expect(text).not.toContain(TRACKING_ID);
    const [decided, failed] = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(decided).toMatchObject({
      reference: 'ck-01234567…',
      ledger: 'checkout:ck-01234567….2',
    });
    expect(failed.msg).toBe('line\nP2P-7K3M… failed');
    expect(failed.error.message).toBe('checkout ck-01234567… is not stored');
  });

  it('keeps a Paystack reference whole (it opens nothing; a refund at Paystack needs it)', async () => {
    const text = await written(false);
    expect(text).toContain(`checkout ${REFERENCE} is not stored`);
    expect(text).not.toContain(TRACKING_ID);
  });
});
