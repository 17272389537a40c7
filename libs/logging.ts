import { isFields } from './fields';

/**
 * One JSON object per log line: strings form `msg`, plain objects become fields, errors
 * become `error: {name, message, type, code, stack}`, moleculer's packets `packet` (no data). Moleculer's own `json` formatter
 * would print objects inside `msg` as text.
 */
export function jsonLogLine(
  level: string,
  args: unknown[],
  bindings: Record<string, unknown>,
  now: Date = new Date(),
): string {
  // Built in place, in the order of the line (time, level, msg, fields, where it ran): a
  // field named like one before it takes its place, the bindings win over any field. The
  // gateway writes a line per request, so copies here cost (docs/performance.md).
  let msg: string | undefined;
  for (const arg of args) {
    if (arg instanceof Error || isFields(arg)) {
      continue;
    }
    // JSON has no text for undefined, a function or a symbol: an empty word, as before.
    const word = typeof arg === 'string' ? arg : (JSON.stringify(arg) ?? '');
    msg = msg === undefined ? word : `${msg} ${word}`;
  }
  const line: Record<string, unknown> = { time: isoTime(now), level, msg: msg ?? '' };
  for (const arg of args) {
    if (arg instanceof Error) line.error = describeError(arg);
    else if (isPacket(arg)) line.packet = describePacket(arg);
    else if (isFields(arg)) {
      for (const key in arg) {
        if (!Object.hasOwn(arg, key)) continue;
        const value = (arg as Record<string, unknown>)[key];
        line[key] = value instanceof Error ? describeError(value) : value;
      }
    }
  }
  line.nodeID = bindings.nodeID;
  line.ns = bindings.ns;
  line.mod = bindings.mod;
  line.svc = bindings.svc;
  return JSON.stringify(line);
}

/** The ISO time of the latest line, kept: lines come many to a millisecond under load. */
let lastTime = { ms: NaN, iso: '' };

function isoTime(now: Date): string {
  const ms = now.getTime();
  if (ms !== lastTime.ms) lastTime = { ms, iso: now.toISOString() };
  return lastTime.iso;
}

/**
 * A moleculer packet, which its transit logs whole when it cannot handle one (a node of
 * another protocol version, during a rolling update): its payload carries the call's params
 * and meta (the caller's name, e-mail and phone, a recipient's contacts), no log's business.
 */
function isPacket(arg: unknown): arg is { type: unknown; payload: Record<string, unknown> } {
  return isFields(arg) && arg.constructor?.name === 'Packet' && isFields(arg.payload);
}

/** What a packet's line says of it: its kind, its sender and its version, never its data. */
function describePacket({ type, payload }: { type: unknown; payload: Record<string, unknown> }) {
  return { type, sender: payload.sender, ver: payload.ver, action: payload.action };
}

function describeError(err: Error) {
  const { type, code } = err as Error & { type?: unknown; code?: unknown };
  return { name: err.name, message: err.message, type, code, stack: err.stack };
}

/** A tracking id (`P2P-` and 12 letters): whoever holds it reads the delivery's page. */
const TRACKING_ID = /(P2P-[0-9a-z]{4})[0-9a-z]{8}/gi;
/**
 * A checkout reference (`ck-` and 40 hex digits): under the sandbox provider, whoever holds it
 * pays (or declines) the checkout on its page. A Paystack reference opens nothing, and the
 * operator refunding a payment at Paystack needs it whole.
 */
const CHECKOUT_REFERENCE = /(ck-[0-9a-f]{8})[0-9a-f]{32}/gi;

const cut = (line: string, capability: RegExp) => line.replace(capability, '$1…');

/**
 * What hides the capabilities in a log line, cut to a prefix and `…`: enough to tell two apart
 * and to find one whose whole value is known (`grep P2P-7K3M`), not enough to open its page.
 * Logs are read by more people than may hold one. Tracking ids always; checkout references
 * where they open a page (`references`: the sandbox provider).
 */
export function capabilitiesHidden(options: { references: boolean }): (line: string) => string {
  return options.references
    ? (line) => cut(cut(line, CHECKOUT_REFERENCE), TRACKING_ID)
    : (line) => cut(line, TRACKING_ID);
}
