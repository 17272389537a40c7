/**
 * Serializer benchmark: the packets one Mode B quote really sends between gateway, account,
 * geo and pricing (each its own broker over NATS, in this process), recorded, then encoded and
 * decoded by moleculer's JSON and by each binary serializer moleculer has. Prints the time and
 * bytes per quote and whether each answers the same objects as JSON on the receiving side.
 *
 *   scripts/infra up && eval "$(scripts/infra env)"
 *   npm run bench:packets -- --rounds 2000
 *
 * A serializer whose package is not installed (`npm install --no-save cbor-x notepack.io
 * msgpack5`) is reported as such, not measured. decision 59 says why JSON stays.
 */
import { performance } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import { Serializers, ServiceBroker } from 'moleculer';
import { loadConfig } from '../libs/config';
import { createBrokerOptions } from '../moleculer.config';
import { createServices } from '../services';
import { createUserWithKey, request } from '../test/support/http';
import { QUOTE, waitForQuote } from '../test/support/quote';
import { ADMIN_TOKEN, dropDatabases, freePort, isolation } from '../test/support/stack';
import { option, requireInfrastructure, runMain, showHelpIfAsked } from './bench-support';

showHelpIfAsked(`
npm run bench:packets -- [--quotes N] [--rounds N]
  --quotes N   quotes whose packets are recorded (default 20)
  --rounds N   times each serializer encodes and decodes all of them per pass (default 500;
               a warm-up pass, then the fastest of 5)
Needs the local infrastructure: scripts/infra up && eval "$(scripts/infra env)"`);
requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL']);

const QUOTES = option('quotes', 20);
const ROUNDS = option('rounds', 500);

interface Recorded {
  type: string;
  payload: Record<string, unknown>;
}

/** JSON on the wire, and a copy of every packet it sends while `recording` is on. */
class RecordingSerializer extends Serializers.JSON {
  recording = false;
  readonly packets: Recorded[] = [];

  override serialize(obj: Record<string, unknown>, type?: string): Buffer {
    if (this.recording && type) this.packets.push({ type, payload: structuredClone(obj) });
    return super.serialize(obj);
  }
}

async function recordQuotes(): Promise<Recorded[]> {
  const iso = isolation();
  const recorder = new RecordingSerializer();
  const port = await freePort();
  const brokers = ['gateway', 'account', 'geo', 'pricing'].map((services) => {
    const config = loadConfig({
      ...process.env,
      SERVICES: services,
      PORT: String(port),
      HOST: '127.0.0.1',
      OPS_PORT: '0',
      NAMESPACE: iso.namespace,
      MONGO_DB_PREFIX: iso.dbPrefix,
      ADMIN_TOKEN,
      QUOTA_LIMIT: '100000000',
      LOG_LEVEL: 'warn',
      NODE_ID: `bench-${services}-${process.pid}`,
    });
    const broker = new ServiceBroker({
      ...createBrokerOptions(config),
      serializer: recorder,
    });
    for (const schema of createServices(config)) broker.createService(schema);
    return broker;
  });
  try {
    await Promise.all(brokers.map((b) => b.start()));
    await brokers[0].waitForServices(['account', 'geo', 'pricing']);
    const url = `http://127.0.0.1:${port}`;
    const { key } = await createUserWithKey(url);
    await waitForQuote(url, key);
    recorder.recording = true;
    for (let i = 0; i < QUOTES; i++) {
      const reply = await request(url, 'POST', '/api/pricing', {
        headers: { 'api-key': key },
        json: QUOTE,
      });
      if (reply.status !== 200) throw new Error(`quote answered ${reply.status}: ${reply.text}`);
    }
    recorder.recording = false;
    return recorder.packets;
  } finally {
    await Promise.all(brokers.map((b) => b.stop()));
    await dropDatabases(iso);
  }
}

interface Measured {
  name: string;
  usPerQuote: number;
  bytesPerQuote: number;
  /** Packets that a receiver would not read as it reads them from JSON. */
  differing: number;
}

/**
 * The candidates: moleculer's JSON and its binary serializers, each with the package
 * moleculer loads for it.
 */
const CANDIDATES: Record<string, { pkg?: string; make(): Serializers.Base }> = {
  json: { make: () => new Serializers.JSON() },
  cbor: { pkg: 'cbor-x', make: () => new Serializers.CBOR() },
  notepack: { pkg: 'notepack.io', make: () => new Serializers.Notepack() },
  msgpack: { pkg: 'msgpack5', make: () => new Serializers.MsgPack() },
};

function missingPackage(name: string): string | undefined {
  const pkg = CANDIDATES[name].pkg;
  if (!pkg) return undefined;
  try {
    require.resolve(pkg, { paths: [require.resolve('moleculer')] });
    return undefined;
  } catch {
    return pkg;
  }
}

/** Passes over all the rounds; the fastest counts, the others being slowed by other work. */
const PASSES = 5;

/** µs per quote to encode and decode its packets, JIT warmed up by a first pass. */
function timePerQuote(serializer: Serializers.Base, packets: Recorded[]): number {
  let best = Infinity;
  for (let pass = 0; pass <= PASSES; pass++) {
    const start = performance.now();
    for (let round = 0; round < ROUNDS; round++) {
      for (const { type, payload } of packets) {
        serializer.deserialize(serializer.serialize(payload, type), type);
      }
    }
    // Pass 0 warms up.
    if (pass > 0) best = Math.min(best, performance.now() - start);
  }
  return (best * 1000) / (ROUNDS * QUOTES);
}

function measure(name: string, broker: ServiceBroker, packets: Recorded[]): Measured {
  const serializer = CANDIDATES[name].make();
  serializer.init(broker);
  const json = new Serializers.JSON();
  let bytes = 0;
  let differing = 0;
  for (const { type, payload } of packets) {
    const wire = serializer.serialize(payload, type);
    bytes += wire.length;
    const read = serializer.deserialize(wire, type);
    if (!isDeepStrictEqual(read, json.deserialize(json.serialize(payload)))) {
      differing++;
    }
  }
  return {
    name,
    usPerQuote: timePerQuote(serializer, packets),
    bytesPerQuote: bytes / QUOTES,
    differing,
  };
}

async function main(): Promise<number> {
  const packets = await recordQuotes();
  const types = [...new Set(packets.map((p) => p.type))].join(', ');
  console.log(
    `bench:packets — Node ${process.version}, ${packets.length} packets over ${QUOTES} quotes (${types}), ${ROUNDS} rounds`,
  );
  console.log(
    `\n${'serializer'.padEnd(10)} ${'µs/quote'.padStart(9)} ${'bytes/quote'.padStart(12)} ${'vs json'.padStart(8)}  differs from JSON`,
  );
  // A broker only to hand each serializer; it never starts.
  const broker = new ServiceBroker({ logger: false });
  let reference: number | undefined;
  for (const name of Object.keys(CANDIDATES)) {
    const missing = missingPackage(name);
    if (missing) {
      console.log(`${name.padEnd(10)} not measured: its package ${missing} is not installed`);
      continue;
    }
    const m = measure(name, broker, packets);
    reference ??= m.usPerQuote;
    console.log(
      `${name.padEnd(10)} ${m.usPerQuote.toFixed(1).padStart(9)} ${m.bytesPerQuote.toFixed(0).padStart(12)} ${(m.usPerQuote / reference).toFixed(2).padStart(8)}  ${m.differing ? `${m.differing} of ${packets.length} packets` : 'no'}`,
    );
  }
  return 0;
}

runMain(main);
