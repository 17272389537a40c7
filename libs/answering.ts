import type { ServerResponse } from 'node:http';

/**
 * The answers a server is still writing, for a stop to wait for: a download piped after its
 * action returned, an upload's body pushed after its ticket was handed out, which moleculer's
 * wait for calls in progress does not see.
 */
export class Answering {
  private readonly open = new Set<ServerResponse>();
  private waiters: (() => void)[] = [];

  /**
   * Counts `res` until it closes (sent whole, or its connection gone: a pipelined answer queued
   * behind another is told so too, `answering.test.ts`).
   */
  add(res: ServerResponse): void {
    this.open.add(res);
    res.once('close', () => {
      this.open.delete(res);
      if (this.open.size > 0) return;
      const waiting = this.waiters;
      this.waiters = [];
      for (const settle of waiting) settle();
    });
  }

  /** The answers still being written. */
  [Symbol.iterator](): IterableIterator<ServerResponse> {
    return this.open.values();
  }

  /** Settles once none is left (at once when none is); the stop's own bound cuts the wait. */
  settled(): Promise<void> {
    if (this.open.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
