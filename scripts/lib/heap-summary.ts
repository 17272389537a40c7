/**
 * What a V8 heap snapshot (`.heapsnapshot`, as `--heapsnapshot-signal` writes it) holds, summed
 * by kind: objects by constructor, the rest (strings, code, arrays, buffers) by V8's node
 * type. Two summaries side by side tell what grew between an early and a late snapshot.
 */

/** The parts of a snapshot's JSON this reads. */
export interface HeapSnapshotJson {
  snapshot: { meta: { node_fields: string[]; node_types: unknown[] } };
  nodes: number[];
  strings: string[];
}

export interface HeapGroup {
  /** `Constructor` for objects, `(type)` or `(type) name` for the rest. */
  name: string;
  count: number;
  bytes: number;
}

/** Node types summed by their V8 name (buffers, closures) rather than lumped by type. */
const NAMED_TYPES = new Set(['native', 'closure', 'object']);

/** The snapshot's nodes summed by kind, largest first. */
export function summarizeHeap(snapshot: HeapSnapshotJson): HeapGroup[] {
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0] as string[];
  const width = fields.length;
  const at = (field: string) => {
    const i = fields.indexOf(field);
    if (i < 0) throw new Error(`a heap snapshot without the node field ${field}`);
    return i;
  };
  const [typeAt, nameAt, sizeAt] = [at('type'), at('name'), at('self_size')];
  const groups = new Map<string, HeapGroup>();
  for (let i = 0; i < snapshot.nodes.length; i += width) {
    const type = types[snapshot.nodes[i + typeAt]] ?? 'unknown';
    const name =
      type === 'object'
        ? snapshot.strings[snapshot.nodes[i + nameAt]]
        : NAMED_TYPES.has(type)
          ? `(${type}) ${snapshot.strings[snapshot.nodes[i + nameAt]]}`
          : `(${type})`;
    const group = groups.get(name) ?? { name, count: 0, bytes: 0 };
    group.count += 1;
    group.bytes += snapshot.nodes[i + sizeAt];
    groups.set(name, group);
  }
  return [...groups.values()].sort((a, b) => b.bytes - a.bytes);
}

export interface HeapChange {
  name: string;
  before: HeapGroup;
  after: HeapGroup;
}

/** Each kind in either summary, with what it held in both, the most grown first. */
export function compareHeaps(before: HeapGroup[], after: HeapGroup[]): HeapChange[] {
  const none = (name: string): HeapGroup => ({ name, count: 0, bytes: 0 });
  const earlier = new Map(before.map((g) => [g.name, g]));
  const later = new Map(after.map((g) => [g.name, g]));
  const names = new Set([...earlier.keys(), ...later.keys()]);
  return [...names]
    .map((name) => ({
      name,
      before: earlier.get(name) ?? none(name),
      after: later.get(name) ?? none(name),
    }))
    .sort((a, b) => b.after.bytes - b.before.bytes - (a.after.bytes - a.before.bytes));
}

export const totalBytes = (groups: readonly HeapGroup[]) =>
  groups.reduce((sum, g) => sum + g.bytes, 0);
