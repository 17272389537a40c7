import { once } from 'node:events';
import { createInterface } from 'node:readline';

/**
 * schemathesis closes its report with pytest's ruler (`==== 2 warnings in 75.03s ====`); CI reads
 * such a line as a pytest run that executed no test, so its rulers become plain headings.
 */
export function withoutPytestRuler(line: string): string {
  const ruler = /^=+ (.+?) =+$/.exec(line);
  return ruler ? `-- ${ruler[1]} --` : line;
}

/** Copies `from` to `to` line by line through withoutPytestRuler; resolves at its end. */
export async function relayWithoutPytestRulers(
  from: NodeJS.ReadableStream,
  to: NodeJS.WritableStream,
): Promise<void> {
  const lines = createInterface({ input: from, crlfDelay: Infinity });
  lines.on('line', (line) => to.write(`${withoutPytestRuler(line)}\n`));
  await once(lines, 'close');
}
