import { readFileSync } from 'node:fs';
import { memoryParts } from '../../../scripts/lib/smaps';

/** One mapping of a smaps file: its header line and the fields the parts are read from. */
const mapping = (range: string, name: string, rssKb: number) =>
  [
    `${range} rw-p 00000000 00:00 0                          ${name}`.trimEnd(),
    `Size:               ${rssKb * 2} kB`,
    `Rss:                ${rssKb} kB`,
    `Pss:                ${rssKb} kB`,
    `Anonymous:          ${rssKb} kB`,
    'VmFlags: rd wr mr mw me ac',
  ].join('\n');

describe("a process's memory parts from its smaps", () => {
  it("reads glibc's [heap] and sums the mappings of no file and no name", () => {
    const smaps = [
      mapping('55d0c0000000-55d0c0100000', '/usr/bin/node', 900),
      mapping('55d0c2000000-55d0c6000000', '[heap]', 43 * 1024),
      mapping('7f0000000000-7f0004000000', '', 100 * 1024),
      mapping('7f0004000000-7f0008000000', '', 62 * 1024),
      mapping('7f0008000000-7f0008100000', '/usr/lib/x86_64-linux-gnu/libc.so.6', 1200),
      mapping('7ffc00000000-7ffc00100000', '[stack]', 130),
    ].join('\n');
    expect(memoryParts(smaps)).toEqual({ heap: 43, anon: 162 });
  });

  it('reads this process, whose parts fit in its RSS', () => {
    const parts = memoryParts(readFileSync('/proc/self/smaps', 'utf8'));
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);
    expect(parts.anon).toBeGreaterThan(0);
    expect(parts.heap + parts.anon).toBeLessThan(rssKb / 1024 + 1);
  });
});
