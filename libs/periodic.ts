/**
 * Work run every `intervalMs` (a sweep, a flush), never twice at once: a run that comes due
 * while the last is still going joins it. A run that fails is reported to `onError`, never
 * left as an unhandled rejection (which would end the process). The timer does not keep the
 * process alive.
 */
export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopRequested = false;

  constructor(
    private readonly intervalMs: number,
    private readonly work: () => Promise<void>,
    /** Told of a run that failed; the next run tries again. */
    private readonly onError: (err: unknown) => void,
  ) {}

  /**
   * True from `stop` until the next `start`: a run that loops over batches ends early when it
   * sees it, so that the stop does not wait for the whole backlog.
   */
  get stopping(): boolean {
    return this.stopRequested;
  }

  start(): void {
    this.stopRequested = false;
    this.timer = setInterval(() => void this.runOnce(), this.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and waits for the run under way, if any. */
  async stop(): Promise<void> {
    this.stopRequested = true;
    clearInterval(this.timer);
    await this.running;
  }

  /** One run, or the one under way. */
  runOnce(): Promise<void> {
    this.running ??= this.work()
      .catch((err: unknown) => this.onError(err))
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }
}
