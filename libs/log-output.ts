import { format } from 'node:util';
import { Loggers } from 'moleculer';

type FormattedOptions = ConstructorParameters<typeof Loggers.Formatted>[0];

/**
 * Log lines of one event-loop turn, written at its end with one write. Node writes to a pipe
 * or a file synchronously, one system call per `console.log`: with a line per request (the
 * gateway's access log) that call cost as much CPU as answering the request
 * (docs/performance.md "The gateway hot path"). Lines are never reordered, and a turn that
 * piles up `maxChars` writes at once.
 */
export class LineBuffer {
  private pending: string[] = [];
  private chars = 0;
  private scheduled = false;

  constructor(
    private readonly write: (text: string) => void,
    private readonly maxChars = 64 * 1024,
  ) {}

  push(line: string): void {
    this.pending.push(line);
    this.chars += line.length + 1;
    if (this.chars >= this.maxChars) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Writes what is pending now; safe to call at any time, e.g. as the process exits. */
  flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const text = `${this.pending.join('\n')}\n`;
    this.pending = [];
    this.chars = 0;
    this.write(text);
  }
}

const stdout = new LineBuffer((text) => process.stdout.write(text));
const stderr = new LineBuffer((text) => process.stderr.write(text));
// A process that exits (process.exit, an uncaught error) writes its last turn's lines first;
// only a kill -9 loses them, as it loses whatever else the process had not done.
process.once('exit', () => {
  stdout.flush();
  stderr.flush();
});

const LEVELS = Loggers.Base.LEVELS;

/**
 * A formatter as moleculer calls it: with the logger's bindings too, which its option type
 * leaves out.
 */
export type LineFormatter = (
  level: string,
  args: unknown[],
  bindings: Record<string, unknown>,
) => string[];

/** The options of `BufferedConsoleLogger`, with a formatter that may read the bindings. */
export type BufferedConsoleOptions = Omit<NonNullable<FormattedOptions>, 'formatter'> & {
  formatter: LineFormatter | 'short';
  /** Every line on stderr: a command whose stdout is its answer (the CLI). */
  everyLineTo?: 'stderr';
  /** A line under the level kept all the same when this says so (the CLI's audit lines). */
  keepBelowLevel?: (type: string, args: unknown[]) => boolean;
  /** Each line as written: what must not reach the logs cut out (`capabilitiesHidden`). */
  conceal?: (line: string) => string;
};

/**
 * Moleculer's console logger, same lines on the same streams (errors and warnings on stderr,
 * the rest on stdout), written a turn at a time through `LineBuffer`.
 */
export class BufferedConsoleLogger extends Loggers.Formatted<NonNullable<FormattedOptions>> {
  private readonly allOnStderr: boolean;
  private readonly keepBelowLevel: (type: string, args: unknown[]) => boolean;
  private readonly conceal: (line: string) => string;

  constructor(options: BufferedConsoleOptions) {
    // moleculer passes the bindings as a third argument its type does not declare.
    super(options as NonNullable<FormattedOptions>);
    this.allOnStderr = options.everyLineTo === 'stderr';
    this.keepBelowLevel = options.keepBelowLevel ?? (() => false);
    this.conceal = options.conceal ?? ((line) => line);
  }

  override getLogHandler(bindings: Parameters<Loggers.Console['getLogHandler']>[0]) {
    const level = bindings ? this.getLogLevel(bindings.mod) : null;
    if (!level) return null;
    const levelIdx = LEVELS.indexOf(level);
    const formatter = this.getFormatter(bindings);
    return (type: string, args: unknown[]) => {
      if (LEVELS.indexOf(type) > levelIdx && !this.keepBelowLevel(type, args)) return;
      const line = this.conceal(format(...formatter(type, args)));
      const onStderr = this.allOnStderr || type === 'fatal' || type === 'error' || type === 'warn';
      (onStderr ? stderr : stdout).push(line);
    };
  }
}
