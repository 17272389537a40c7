import { systemResolver, type Resolver } from './outbound-url';

/**
 * Host-name lookups of the names integrators give us (webhook URLs), one at a time per owner.
 * `dns.lookup` holds one of libuv's four threads until the system resolver answers, however long
 * the name's servers take: a timeout of ours answers the caller, not the thread. Names whose
 * servers never answer, given again and again by one integrator, would hold every thread, and
 * every lookup, file read and hash of the process would wait behind them, other integrators'
 * deliveries among them. An owner's lookups take turns, each counted until it really ends, so
 * one owner holds one thread at most. A turn not begun within `waitMs` is given up (ETIMEOUT),
 * so that a line behind a lookup that hangs does not grow.
 */
export class OwnerLookups {
  /** Per owner with a lookup running: the turns waiting behind it, oldest first. */
  private readonly lines = new Map<string, (() => void)[]>();

  constructor(
    private readonly waitMs: number,
    private readonly lookup: Resolver = systemResolver,
  ) {}

  /** A resolver whose lookups wait for `owner`'s turn. */
  of(owner: string): Resolver {
    return (hostname, family) =>
      new Promise((resolve, reject) => {
        const run = () => {
          // The turn passes on before the caller is answered.
          this.lookup(hostname, family)
            .finally(() => this.next(owner))
            .then(resolve, reject);
        };
        const line = this.lines.get(owner);
        if (!line) {
          this.lines.set(owner, []);
          return run();
        }
        const turn = () => {
          clearTimeout(timer);
          run();
        };
        const timer = setTimeout(() => {
          line.splice(line.indexOf(turn), 1);
          reject(lookupWaitedTooLong(hostname, this.waitMs));
        }, this.waitMs);
        timer.unref();
        line.push(turn);
      });
  }

  /** How many of `owner`'s lookups run or wait (tests, metrics). */
  inLine(owner: string): number {
    const line = this.lines.get(owner);
    return line ? line.length + 1 : 0;
  }

  private next(owner: string): void {
    const line = this.lines.get(owner);
    const turn = line?.shift();
    if (turn) turn();
    else this.lines.delete(owner);
  }
}

function lookupWaitedTooLong(hostname: string, waitMs: number): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(
    `lookup of ${hostname} not begun within ${waitMs} ms: another of this owner's host names is still being looked up`,
  );
  err.code = 'ETIMEOUT';
  return err;
}
