/**
 * Validation benchmark: what joi costs per call on the params of a Mode B quote, as
 * `pricing.price` validates them, and of the `geo.route` call pricing then makes, validated
 * in a loop in this process exactly as the actions' validator does (libs/validation
 * `validate`). No infrastructure: only the schemas run. Prints the CPU µs per validation, the
 * median and the fastest of the passes.
 *
 *   npm run bench:validation                  (or: scripts/tsx scripts/bench-validation.ts)
 *   npm run bench:validation -- --iterations 100000 --passes 5
 *   node --cpu-prof --cpu-prof-dir=DIR --import tsx scripts/bench-validation.ts
 *     (then scripts/tsx scripts/profile-summary.ts DIR/CPU.….cpuprofile)
 */
import { loadavg } from 'node:os';
import { routeParams } from '../libs/contracts/geo';
import { validate } from '../libs/validation';
import { quoteRequestSchema } from '../services/pricing/quote-request';
import { QUOTE } from '../test/support/quote';
import { option, runMain, showHelpIfAsked } from './bench-support';

showHelpIfAsked(`
npm run bench:validation -- [--iterations N] [--passes N]
  --iterations N  validations of each params per pass (default 100000)
  --passes N      timed passes per params, after a warm-up pass (default 3)
Runs in this process, no infrastructure needed.`);

const ITERATIONS = option('iterations', 100_000);
const PASSES = option('passes', 3);

/** The fleet type pricing chose, as it names it to geo. */
const FLEET_TYPE_ID = '5b0c7f8e-4c1d-4a8b-9f3e-2d6a1c9e7b40';

interface Case {
  name: string;
  schema: Parameters<typeof validate>[0];
  params: () => unknown;
}

const CASES: Case[] = [
  {
    // The body of `POST /api/pricing` as the gateway hands it to `pricing.price`.
    name: 'pricing.price, Mode B quote',
    schema: quoteRequestSchema,
    params: () => structuredClone(QUOTE),
  },
  {
    // What `priceLoad` (services/pricing/quote.ts) sends: the addresses as validated above.
    name: 'geo.route, as pricing calls it',
    schema: routeParams,
    params: () => ({
      origin: structuredClone(QUOTE.origin),
      destination: QUOTE.destination,
      fleetTypeId: FLEET_TYPE_ID,
    }),
  },
  {
    // Addresses as objects with text in them: the strings' own conversion (trim, case) runs.
    name: 'geo.route, addresses with contacts',
    schema: routeParams,
    params: () => ({
      origin: {
        address: ' 12 Admiralty Way, Lekki, Lagos ',
        floor: '2',
        contactName: 'Ada Obi',
        contactPhone: '+2348031234567',
        contactEmail: 'Ada@Example.com',
      },
      destination: { lat: 9.0765, lon: 7.3986, label: 'Office', additionalNote: 'Gate B' },
      fleetTypeId: FLEET_TYPE_ID.toUpperCase(),
    }),
  },
];

/**
 * CPU µs (user + system) per validation over `ITERATIONS`: on a machine shared with other
 * benchmarks it moves less than the wall clock. Params are built beforehand, outside the timing.
 */
function pass({ schema, params }: Case): number {
  const inputs = Array.from({ length: Math.min(ITERATIONS, 1000) }, params);
  const started = process.cpuUsage();
  for (let i = 0; i < ITERATIONS; i++) validate(schema, inputs[i % inputs.length]);
  const { user, system } = process.cpuUsage(started);
  return (user + system) / ITERATIONS;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/** A turn of the event loop: passes run off module loading, which profiles count as start-up. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function main(): Promise<number> {
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
  console.log(`${ITERATIONS} validations per pass, ${PASSES} passes after a warm-up; load ${load}`);
  console.log(
    `${'CPU µs per validation'.padEnd(36)} ${'median'.padStart(8)} ${'fastest'.padStart(8)}`,
  );
  for (const c of CASES) {
    await nextTurn();
    pass(c);
    const times: number[] = [];
    for (let i = 0; i < PASSES; i++) {
      await nextTurn();
      times.push(pass(c));
    }
    const [middle, fastest] = [median(times), Math.min(...times)].map((us) => us.toFixed(2));
    console.log(`${c.name.padEnd(36)} ${middle.padStart(8)} ${fastest.padStart(8)}`);
  }
  return 0;
}

runMain(main);
