/**
 * A benchmark's process run inside a memory cgroup of its pod's limit, where this machine lets
 * us make one: Node sizes V8's heap from that limit (decision 87), so the process is then the
 * pod's in memory as well as in NODE_OPTIONS.
 */
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandWrap } from '../../test/support/stack';

/** Where a process's memory cgroup is, from its `/proc/<pid>/cgroup`: v1's controller, or v2's. */
export function memoryCgroupOf(
  procCgroup: string,
  root = '/sys/fs/cgroup',
): { dir: string; limitFile: string } | undefined {
  for (const line of procCgroup.split('\n')) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line.trim()) ?? [];
    if (controllers?.split(',').includes('memory')) {
      return { dir: join(root, 'memory', path), limitFile: 'memory.limit_in_bytes' };
    }
  }
  const unified = /^0::(.*)$/m.exec(procCgroup);
  return unified ? { dir: join(root, unified[1]), limitFile: 'memory.max' } : undefined;
}

export interface PodMemory {
  /** The command and arguments that run `command` inside the cgroup. */
  wrap: CommandWrap;
  /** Removes the cgroup once nothing runs in it. */
  remove(): void;
}

/**
 * A memory cgroup named `name` under this process's own, limited to `limitMb`, or why none
 * can be made here (not root, no memory controller, a cgroup v2 that does not delegate it).
 */
export function podMemory(name: string, limitMb: number): PodMemory | string {
  const own = memoryCgroupOf(readFileSync('/proc/self/cgroup', 'utf8'));
  if (!own) return 'this process is in no memory cgroup';
  const dir = join(own.dir, name);
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, own.limitFile), String(limitMb * 2 ** 20));
  } catch (error) {
    return `cannot make a memory cgroup in ${own.dir}: ${(error as Error).message}`;
  }
  return {
    // The shell moves itself into the cgroup, then becomes the command: same pid, same limit.
    wrap: (command, args) => [
      '/bin/sh',
      ['-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', dir, command, ...args],
    ],
    remove: () => rmdirSync(dir),
  };
}
