/** Two parts of a process's resident memory, in MB, read from /proc/<pid>/smaps. */
export interface MemoryParts {
  /** glibc's main arena (`[heap]`, grown by brk): the main thread's mallocs. */
  heap: number;
  /**
   * Mappings of no file and no name: V8's heap pages (young and old space), ArrayBuffer
   * stores, glibc's arenas for other threads and its large mallocs.
   */
  anon: number;
}

const MAPPING = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+ *(.*)$/;
const RSS = /^Rss:\s+(\d+) kB$/;

/** Sums the RSS of `[heap]` and of the anonymous mappings in the text of a smaps file. */
export function memoryParts(smaps: string): MemoryParts {
  let heapKb = 0;
  let anonKb = 0;
  let name: string | undefined;
  for (const line of smaps.split('\n')) {
    const mapping = MAPPING.exec(line);
    if (mapping) {
      name = mapping[1];
      continue;
    }
    const kb = Number(RSS.exec(line)?.[1] ?? NaN);
    if (Number.isNaN(kb)) continue;
    if (name === '[heap]') heapKb += kb;
    else if (name === '') anonKb += kb;
  }
  return { heap: heapKb / 1024, anon: anonKb / 1024 };
}
