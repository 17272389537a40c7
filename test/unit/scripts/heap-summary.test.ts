import {
  compareHeaps,
  summarizeHeap,
  totalBytes,
  type HeapSnapshotJson,
} from '../../../scripts/lib/heap-summary';

/** A snapshot as V8 lays it out: nodes flat, `width` numbers each, names by string index. */
function snapshot(nodes: [type: number, name: string, size: number][]): HeapSnapshotJson {
  const strings: string[] = [];
  const indexOf = (s: string) => (strings.includes(s) ? strings.indexOf(s) : strings.push(s) - 1);
  return {
    snapshot: {
      meta: {
        node_fields: ['type', 'name', 'id', 'self_size', 'edge_count', 'trace_node_id'],
        node_types: [
          ['hidden', 'array', 'string', 'object', 'code', 'closure', 'native'],
          'string',
        ],
      },
    },
    nodes: nodes.flatMap(([type, name, size], id) => [type, indexOf(name), id, size, 0, 0]),
    strings,
  };
}

describe('summarizeHeap', () => {
  it('sums objects by constructor, buffers and closures by name, the rest by type', () => {
    const groups = summarizeHeap(
      snapshot([
        [3, 'Claim', 40],
        [3, 'Claim', 40],
        [2, 'pkg-1', 24],
        [2, 'pkg-2', 32],
        [6, 'system / JSArrayBufferData', 1000],
        [5, 'handler', 32],
        [1, '(object elements)', 16],
      ]),
    );
    expect(groups).toEqual([
      { name: '(native) system / JSArrayBufferData', count: 1, bytes: 1000 },
      { name: 'Claim', count: 2, bytes: 80 },
      { name: '(string)', count: 2, bytes: 56 },
      { name: '(closure) handler', count: 1, bytes: 32 },
      { name: '(array)', count: 1, bytes: 16 },
    ]);
    expect(totalBytes(groups)).toBe(1184);
  });

  it('refuses a snapshot whose nodes lack a field it reads', () => {
    const broken = snapshot([[3, 'Claim', 40]]);
    broken.snapshot.meta.node_fields = ['type', 'name', 'id'];
    expect(() => summarizeHeap(broken)).toThrow(/self_size/);
  });
});

describe('compareHeaps', () => {
  it('lists every kind of either side, the most grown first, gone ones at zero', () => {
    const before = summarizeHeap(
      snapshot([
        [3, 'Claim', 40],
        [3, 'Gone', 100],
      ]),
    );
    const after = summarizeHeap(
      snapshot([
        [3, 'Claim', 40],
        [3, 'Claim', 40],
        [3, 'Claim', 40],
        [2, 'new', 24],
      ]),
    );
    const changes = compareHeaps(before, after);
    expect(changes.map((c) => [c.name, c.before.bytes, c.after.bytes])).toEqual([
      ['Claim', 40, 120],
      ['(string)', 0, 24],
      ['Gone', 100, 0],
    ]);
    expect(changes[0].after.count).toBe(3);
  });
});
