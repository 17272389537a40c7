import { ServiceBroker, Serializers } from 'moleculer';
import type { SerializerName } from '../../../libs/config';
import { createSerializer } from '../../../libs/serializer';

const json = new Serializers.JSON();

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
    expect(wire.serialize(request)).toEqual(json.serialize(request));
  });

  it('writes CBOR when SERIALIZER=cbor, smaller than JSON', () => {
    const bytes = make('cbor').serialize(request);
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
      expect(make(reader).deserialize(make(writer).serialize(request))).toEqual(request);
    },
  );
});
