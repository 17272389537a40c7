import { PassThrough } from 'node:stream';
import { relayWithoutPytestRulers, withoutPytestRuler } from '../../../scripts/lib/report-lines';

describe('schemathesis output relayed to CI', () => {
  it("turns pytest's closing ruler into a heading CI does not read as a test count", () => {
    const closing =
      '============================= 2 warnings in 75.03s =============================';
    expect(withoutPytestRuler(closing)).toBe('-- 2 warnings in 75.03s --');
    expect(withoutPytestRuler('===== SUMMARY =====')).toBe('-- SUMMARY --');
  });

  it('leaves every other line as it is', () => {
    for (const line of ['  5272 generated, 5272 passed', '', '==', 'a = b', '=== no closing'])
      expect(withoutPytestRuler(line)).toBe(line);
  });

  it('relays every line, the last one without a newline included, before resolving', async () => {
    const from = new PassThrough();
    const to = new PassThrough();
    let written = '';
    to.on('data', (chunk: Buffer) => (written += chunk.toString()));
    const done = relayWithoutPytestRulers(from, to);
    from.end('one\n=== 1 passed in 2s ===\nlast');
    await done;
    expect(written).toBe('one\n-- 1 passed in 2s --\nlast\n');
  });
});
