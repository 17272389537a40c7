import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Memory of byte streams given back as they flow. Every socket read of a file body allocates
 * a new buffer; it is garbage a moment later, but its bytes live outside the V8 heap, and V8
 * collects on their account only once about 64 MB more of them have piled up since its last
 * collection. A process moving a large file therefore grew by that much whatever its streams'
 * backpressure (measured: a bare `node:http` server reading 200 MB grew 52–60 MB; with a minor
 * collection every 16 MB, 30 MB, for 5 ms of collection in all). The buffers die young, so a
 * minor collection (a scavenge, well under a millisecond with nothing alive to copy) frees
 * them: `bytesMoved` asks for one each RECLAIM_STEP bytes that a transfer or an upload moved
 * through this process.
 *
 * 4 MB, not 16: with 16 MB, the garbage between scavenges (about 1.6 bytes of buffers per byte
 * moved) still pushed V8 into full collections, 55 of them in the file service over two 200 MB
 * uploads and two downloads, against 2 with 4 MB; the scavenges cost less than those did, so
 * each upload took less CPU and the file service's peak growth fell from +57 to about +30 MB
 * (docs/performance.md "File bytes").
 */
const RECLAIM_STEP = 4 * 1024 * 1024;

type Collect = (options: { type: 'minor'; execution: 'sync' }) => void;

/** V8's collector, exposed at run time (the flag only reaches contexts created after it). */
function collector(): Collect | undefined {
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as Collect;
  } catch {
    return undefined; // the process runs without it: memory then follows V8's own pace
  }
}

const collect = collector();
let since = 0;

/** Counts bytes a file stream moved here; each RECLAIM_STEP, a minor collection. */
export function bytesMoved(bytes: number): void {
  since += bytes;
  if (since < RECLAIM_STEP) return;
  since = 0;
  collect?.({ type: 'minor', execution: 'sync' });
}
