/** Three parts of a process's resident memory, in MB, read from /proc/<pid>/smaps. */
export interface MemoryParts {
  /** glibc's main arena (`[heap]`, grown by brk): the main thread's mallocs. */
  heap: number;
  /**
   * glibc's arenas for other threads (V8's compiler and collector threads, libuv's pool):
   * anonymous mappings that start on a 64 MB boundary, the size glibc reserves for each.
   */
  arenas: number;
  /**
   * The other mappings of no file and no name: V8's heap pages (young and old space),
   * ArrayBuffer stores and glibc's large mallocs.
   */
  anon: number;
}

const MAPPING = /^([0-9a-f]+)-[0-9a-f]+ (\S+) \S+ \S+ \S+ *(.*)$/;
const RSS = /^Rss:\s+(\d+) kB$/;
/** glibc's HEAP_MAX_SIZE on 64-bit: every arena but the main one is mapped on this boundary. */
const ARENA_ALIGNMENT = 64n * 2n ** 20n;

type Part = keyof MemoryParts;

function partOf(start: string, perms: string, name: string): Part | undefined {
  if (name === '[heap]') return 'heap';
  if (name !== '' || !perms.startsWith('rw')) return undefined;
  return BigInt(`0x${start}`) % ARENA_ALIGNMENT === 0n ? 'arenas' : 'anon';
}

/** Sums the RSS of `[heap]`, of glibc's other arenas and of the other anonymous mappings. */
export function memoryParts(smaps: string): MemoryParts {
  const kb: Record<Part, number> = { heap: 0, arenas: 0, anon: 0 };
  let part: Part | undefined;
  for (const line of smaps.split('\n')) {
    const mapping = MAPPING.exec(line);
    if (mapping) {
      part = partOf(mapping[1], mapping[2], mapping[3]);
      continue;
    }
    const rss = RSS.exec(line);
    if (rss && part) kb[part] += Number(rss[1]);
  }
  return { heap: kb.heap / 1024, arenas: kb.arenas / 1024, anon: kb.anon / 1024 };
}
