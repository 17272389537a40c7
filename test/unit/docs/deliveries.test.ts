import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DELIVERY_STATUSES,
  P2P_STATUSES,
  TRANSITIONS,
  canCancel,
  initialLifecycle,
  isTerminal,
  transition,
  type DeliveryStatus,
  type Lifecycle,
  type Rule,
} from '../../../services/order/lifecycle';

const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'deliveries.md'), 'utf8');
const lines = doc.split('\n');

/** The cells of the body rows of the `nth` table whose first column is headed `first`. */
function table(first: string, nth = 0): string[][] {
  const headers = lines.flatMap((line, i) =>
    new RegExp(`^\\| ${first} +\\|`).test(line) ? [i] : [],
  );
  const header = headers[nth];
  if (header === undefined)
    throw new Error(`docs/deliveries.md has no table ${nth} headed "${first}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

const code = (text: string) => `\`${text}\``;
const orDash = (text: string | undefined) => (text === undefined ? '—' : code(text));
const flag = (on: boolean) => (on ? 'yes' : '—');

/** Every rule of the code's table, in the order the doc lists them. */
const RULES: [DeliveryStatus, string, Rule][] = DELIVERY_STATUSES.flatMap((status) =>
  Object.entries(TRANSITIONS[status]).map(
    ([event, rule]) => [status, event, rule] as [DeliveryStatus, string, Rule],
  ),
);

describe('docs/deliveries.md', () => {
  it('lists every transition of the code, and no other', () => {
    const expected = RULES.map(([from, event, rule]) => [
      code(from),
      code(event),
      code(rule.to),
      `${code(rule.step)}${rule.hidden ? ' (hidden)' : ''}`,
      orDash(rule.requires),
      orDash(rule.settles),
      rule.releases ? 'released' : '—',
    ]);
    expect(table('From')).toEqual(expected);
  });

  it('draws the same transitions in its diagram', () => {
    const diagram = doc.match(/```mermaid\n(stateDiagram-v2\n[\s\S]*?)```/)?.[1] ?? '';
    const edges = diagram
      .split('\n')
      .slice(1)
      .map((line) => line.trim())
      .filter(Boolean);
    const expected = [
      '[*] --> REQUEST_CREATED',
      ...RULES.map(([from, event, rule]) => `${from} --> ${rule.to}: ${event}`),
      ...DELIVERY_STATUSES.filter(isTerminal).map((status) => `${status} --> [*]`),
    ];
    expect([...edges].sort()).toEqual([...expected].sort());
  });

  it('lists every delivery status, with the cancels and ends the code allows', () => {
    expect(
      table('Status').map(([status, , cancel, terminal]) => [status, cancel, terminal]),
    ).toEqual(
      DELIVERY_STATUSES.map((status) => [
        code(status),
        flag(canCancel(status)),
        flag(isTerminal(status)),
      ]),
    );
  });

  it('lists every P2P status', () => {
    expect(table('Status', 1).map(([status]) => status)).toEqual(P2P_STATUSES.map(code));
  });

  it('quotes the cancel refusal exactly as the code words it', () => {
    let state: Lifecycle = initialLifecycle(
      { creator: true, recipient: false },
      { creator: true, recipient: false },
    );
    for (const event of [
      { kind: 'COURIER_ASSIGNED', courierId: '7b0f3c1e-2a4d-4c6b-9e8f-0a1b2c3d4e5f' },
      { kind: 'ARRIVED_AT_PICKUP' },
      { kind: 'COLLECTED' },
      { kind: 'IN_TRANSIT' },
    ] as const) {
      const result = transition(state, event);
      if (!result.ok) throw new Error(result.message);
      state = result.next;
    }
    const refused = transition(state, { kind: 'CANCEL' });
    expect(refused.ok).toBe(false);
    expect(doc).toContain(code(refused.ok ? '' : refused.message));
  });
});
