import { memoryCgroupOf, podMemory } from '../../../scripts/lib/pod-memory';
import { PRINT_HEAP_LIMIT_MB, numberPrintedByNode } from '../helpers';

describe('memoryCgroupOf', () => {
  it("finds cgroup v1's memory controller among the others", () => {
    const text = '9:name=systemd:/\n4:memory:/process_api/abc\n2:cpu,cpuacct:/\n0::/\n';
    expect(memoryCgroupOf(text)).toEqual({
      dir: '/sys/fs/cgroup/memory/process_api/abc',
      limitFile: 'memory.limit_in_bytes',
    });
  });

  it('falls back to the unified hierarchy of cgroup v2', () => {
    expect(memoryCgroupOf('0::/kubepods/pod1/c1\n', '/cg')).toEqual({
      dir: '/cg/kubepods/pod1/c1',
      limitFile: 'memory.max',
    });
  });

  it('answers none for a process in no cgroup', () => {
    expect(memoryCgroupOf('')).toBeUndefined();
  });
});

describe('podMemory', () => {
  it('runs a process under the limit where this machine lets it make a cgroup, or says why not', () => {
    const pod = podMemory(`waybill-test-${process.pid}`, 512);
    if (typeof pod === 'string') {
      // Not root, or a cgroup v2 that does not delegate memory: the benchmark prints this.
      expect(pod).toMatch(/cgroup/);
      return;
    }
    try {
      // Node sizes V8's heap from the limit it finds: the proof that the process is inside it.
      const outside = numberPrintedByNode(PRINT_HEAP_LIMIT_MB);
      const inside = numberPrintedByNode(PRINT_HEAP_LIMIT_MB, '', pod.wrap);
      expect(inside).toBeLessThan(512);
      expect(outside).toBeGreaterThan(inside);
    } finally {
      pod.remove();
    }
  });
});
