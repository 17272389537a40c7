import { systemResolver, type Resolver } from './outbound-url';

/** An owner's lookups: how many run, and the turns waiting behind them, oldest first. */
interface Line {
  running: number;
  waiting: (() => void)[];
}

/**
 * Host-name lookups of the names integrators give us (webhook URLs), at most `perOwner` at a
 * time per owner. `dns.lookup` holds one of libuv's four threads until the system resolver
 * answers, however long the name's servers take: a timeout of ours answers the caller, not the
 * thread. Names whose servers never answer, given again and again by one integrator, would hold
 * every thread, and every lookup, file read and hash of the process would wait behind them,
 * other integrators' deliveries among them. An owner's lookups take turns, each counted until
 * it really ends, so one owner holds `perOwner` threads at most; two, so that one name of theirs
 * that hangs does not hold up their other endpoints. A turn not begun within `waitMs` is given
 * up (ETIMEOUT), so that a line behind lookups that hang does not grow.
 */
export class OwnerLookups {
  private readonly lines = new Map<string, Line>();

  constructor(
    private readonly waitMs: number,
    private readonly lookup: Resolver = systemResolver,
    private readonly perOwner = 2,
  ) {}

  /** A resolver whose lookups wait for `owner`'s turn. */
  of(owner: string): Resolver {
    return (hostname, family) =>
      new Promise((resolve, reject) => {
        const line = this.lines.get(owner) ?? { running: 0, waiting: [] };
        this.lines.set(owner, line);
        const run = () => {
          line.running++;
          // The turn passes on before the caller is answered.
          this.lookup(hostname, family)
            .finally(() => this.next(owner, line))
            .then(resolve, reject);
        };
        if (line.running < this.perOwner) return run();
        const turn = () => {
          clearTimeout(timer);
          run();
        };
        const timer = setTimeout(() => {
          line.waiting.splice(line.waiting.indexOf(turn), 1);
          reject(lookupWaitedTooLong(hostname, this.waitMs));
        }, this.waitMs);
        timer.unref();
        line.waiting.push(turn);
      });
  }

  /** How many of `owner`'s lookups run or wait (tests, metrics). */
  inLine(owner: string): number {
    const line = this.lines.get(owner);
    return line ? line.running + line.waiting.length : 0;
  }

  private next(owner: string, line: Line): void {
    line.running--;
    const turn = line.waiting.shift();
    if (turn) turn();
    else if (line.running === 0) this.lines.delete(owner);
  }
}

function lookupWaitedTooLong(hostname: string, waitMs: number): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(
    `lookup of ${hostname} not begun within ${waitMs} ms: other host names of this owner are still being looked up`,
  );
  err.code = 'ETIMEOUT';
  return err;
}
