import { readFileSync } from 'node:fs';
import { memoryParts } from '../../../scripts/lib/smaps';

/** One mapping of a smaps file: its header line and the fields the parts are read from. */
const mapping = (range: string, name: string, rssKb: number, perms = 'rw-p') =>
  [
    `${range} ${perms} 00000000 00:00 0                          ${name}`.trimEnd(),
    `Size:               ${rssKb * 2} kB`,
    `Rss:                ${rssKb} kB`,
    `Pss:                ${rssKb} kB`,
    `Anonymous:          ${rssKb} kB`,
    'VmFlags: rd wr mr mw me ac',
  ].join('\n');

describe("a process's memory parts from its smaps", () => {
  it("reads glibc's [heap], its arenas on 64 MB boundaries and the other anonymous mappings", () => {
    const smaps = [
      mapping('55d0c0000000-55d0c0100000', '/usr/bin/node', 900),
      mapping('55d0c2000000-55d0c6000000', '[heap]', 43 * 1024),
      // V8's pages: 256 KB anywhere.
      mapping('4745b40000-4745b80000', '', 256),
      mapping('d18d980000-d18d9c0000', '', 256),
      // An arena: its used part on the boundary, the rest of its 64 MB reserved.
      mapping('7f3194000000-7f3194197000', '', 1628),
      mapping('7f3194197000-7f3198000000', '', 0, '---p'),
      mapping('7f319c000000-7f319c142000', '', 352),
      // A thread's stack and a large malloc off the boundary.
      mapping('7f31b07ed000-7f31b0fed000', '', 8),
      mapping('7f31f12ee000-7f31f15f3000', '', 1036),
      mapping('7f31b27f0000-7f31b2800000', '', 64, '---p'),
      mapping('7f0008000000-7f0008100000', '/usr/lib/x86_64-linux-gnu/libc.so.6', 1200),
      mapping('7ffc00000000-7ffc00100000', '[stack]', 130),
    ].join('\n');
    expect(memoryParts(smaps)).toEqual({
      heap: 43,
      arenas: (1628 + 352) / 1024,
      anon: (256 + 256 + 8 + 1036) / 1024,
    });
  });

  it('reads this process, whose parts fit in its RSS', () => {
    const parts = memoryParts(readFileSync('/proc/self/smaps', 'utf8'));
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);
    expect(parts.anon).toBeGreaterThan(0);
    expect(parts.heap + parts.arenas + parts.anon).toBeLessThan(rssKb / 1024 + 1);
  });
});
