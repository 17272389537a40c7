/**
 * One JSON object per log line: strings form `msg`, plain objects become fields, errors
 * become `error: {name, message, type, code, stack}`. Moleculer's own `json` formatter
 * would print objects inside `msg` as text.
 */
export function jsonLogLine(
  level: string,
  args: unknown[],
  bindings: Record<string, unknown>,
  now: Date = new Date(),
): string {
  const fields: Record<string, unknown> = {};
  const words: string[] = [];
  for (const arg of args) {
    if (arg instanceof Error) fields.error = describeError(arg);
    else if (arg !== null && typeof arg === 'object' && !Array.isArray(arg)) {
      for (const [key, value] of Object.entries(arg)) {
        fields[key] = value instanceof Error ? describeError(value) : value;
      }
    } else words.push(typeof arg === 'string' ? arg : JSON.stringify(arg));
  }
  return JSON.stringify({
    time: now.toISOString(),
    level,
    msg: words.join(' '),
    ...fields,
    nodeID: bindings.nodeID,
    ns: bindings.ns,
    mod: bindings.mod,
    svc: bindings.svc,
  });
}

function describeError(err: Error) {
  const { type, code } = err as Error & { type?: unknown; code?: unknown };
  return { name: err.name, message: err.message, type, code, stack: err.stack };
}
