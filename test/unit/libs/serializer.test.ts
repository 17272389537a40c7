import { randomBytes } from 'node:crypto';
import { ServiceBroker, Serializers } from 'moleculer';
import type { SerializerName } from '../../../libs/config';
import { WaybillSerializer, createSerializer } from '../../../libs/serializer';

const serializer = new WaybillSerializer();
const json = new Serializers.JSON();

const chunkPacket = (bytes: Buffer) => ({
  ver: '5',
  sender: 'node-1',
  id: 'ctx-1',
  action: 'file.singleUpload',
  params: bytes,
  meta: {},
  headers: {},
  stream: true,
  seq: 3,
});

describe('WaybillSerializer', () => {
  it('sends a stream chunk as a binary frame of its raw bytes', () => {
    const bytes = randomBytes(64 * 1024);
    const frame = serializer.serialize(chunkPacket(bytes), 'REQ');
    expect(frame[0]).toBe(0);
    expect(frame.length).toBeLessThan(bytes.length + 300);
    expect(frame.subarray(frame.length - bytes.length)).toEqual(bytes);
    // Plain JSON would spell each byte as a number: several times the size.
    expect(json.serialize(chunkPacket(bytes)).length).toBeGreaterThan(3 * bytes.length);
  });

  it.each(['REQ', 'RES'])('round-trips a %s chunk, bytes as a Buffer', (type) => {
    const bytes = Buffer.from([0, 255, 10, 13, 0x7b, 0x22]);
    const field = type === 'REQ' ? 'params' : 'data';
    const packet = { ...chunkPacket(bytes), params: undefined, [field]: bytes };
    const back = serializer.deserialize(serializer.serialize(packet, type)) as Record<
      string,
      unknown
    >;
    expect(Buffer.isBuffer(back[field])).toBe(true);
    expect(back[field]).toEqual(bytes);
    expect(back).toMatchObject({ id: 'ctx-1', seq: 3, stream: true, meta: {} });
    expect(back).not.toHaveProperty('$binary');
  });

  it('keeps every other packet plain JSON, byte for byte', () => {
    const packets: [Record<string, unknown>, string][] = [
      [{ id: '1', params: { url: 'https://x' }, meta: { user: { id: 'u' } } }, 'REQ'],
      [{ id: '1', data: { ok: true }, success: true }, 'RES'],
      [{ event: 'x', data: Buffer.from('abc') }, 'EVENT'],
      [{ services: [] }, 'INFO'],
    ];
    for (const [packet, type] of packets) {
      const bytes = serializer.serialize(packet, type);
      expect(bytes).toEqual(json.serialize(packet));
      expect(serializer.deserialize(bytes)).toEqual(json.deserialize(bytes));
    }
  });

  it('reads frames from a Uint8Array, as NATS delivers them', () => {
    const bytes = randomBytes(100);
    const frame = serializer.serialize(chunkPacket(bytes), 'REQ');
    const view = new Uint8Array(frame.buffer, frame.byteOffset, frame.byteLength);
    expect((serializer.deserialize(view as Buffer) as { params: Buffer }).params).toEqual(bytes);
  });

  it('sends an empty chunk too', () => {
    const back = serializer.deserialize(serializer.serialize(chunkPacket(Buffer.alloc(0)), 'REQ'));
    expect((back as { params: Buffer }).params).toEqual(Buffer.alloc(0));
  });
});

describe('WireSerializer (SERIALIZER)', () => {
  const broker = new ServiceBroker({ logger: false });
  const make = (name: SerializerName) => {
    const wire = createSerializer(name);
    wire.init(broker);
    return wire;
  };
  const request = {
    ver: '5',
    sender: 'gateway-1',
    id: 'ctx-1',
    action: 'pricing.price',
    params: { origin: { lat: 6.6, lon: 3.35 }, destination: 'Lekki, Lagos', totalWeight: 3 },
    meta: { user: { id: 'u-1' } },
    headers: {},
    timeout: 15000,
    level: 1,
    tracing: null,
    caller: 'gateway',
    stream: false,
  };

  it('writes JSON by default, byte for byte as before', () => {
    const wire = make('json');
    expect(wire.serialize(request, 'REQ')).toEqual(json.serialize(request));
  });

  it('writes CBOR when SERIALIZER=cbor, smaller than JSON', () => {
    const bytes = make('cbor').serialize(request, 'REQ');
    expect(bytes[0]).toBeGreaterThanOrEqual(0xa0);
    expect(bytes.length).toBeLessThan(json.serialize(request).length);
  });

  it.each([
    ['json', 'cbor'],
    ['cbor', 'json'],
    ['cbor', 'cbor'],
  ] as const)(
    'a %s node reads what a %s node writes (a change rolls one node at a time)',
    (reader, writer) => {
      expect(make(reader).deserialize(make(writer).serialize(request, 'REQ'))).toEqual(request);
    },
  );

  it.each(['json', 'cbor'] as const)('keeps stream chunks raw bytes with %s', (name) => {
    const bytes = randomBytes(64 * 1024);
    const wire = make(name);
    const frame = wire.serialize(chunkPacket(bytes), 'REQ');
    expect(frame.length).toBeLessThan(bytes.length + 300);
    for (const reader of [make('json'), make('cbor')]) {
      const back = reader.deserialize(frame) as { params: Buffer; seq: number };
      expect(Buffer.isBuffer(back.params)).toBe(true);
      expect(back.params).toEqual(bytes);
      expect(back.seq).toBe(3);
    }
  });
});
