import { Serializers, type ServiceBroker } from 'moleculer';
import type { SerializerName } from './config';

const asBuffer = (buf: Buffer | string | Uint8Array): Buffer =>
  typeof buf === 'string'
    ? Buffer.from(buf)
    : Buffer.isBuffer(buf)
      ? buf
      : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);

/**
 * First byte of a CBOR packet: moleculer's CBOR serializer writes every packet as a map
 * (major type 5), 0xa0-0xbf. JSON packets start with `{`, so a packet's first byte tells
 * its encoding.
 */
const isCbor = (buf: Buffer): boolean => buf.length > 0 && buf[0] >= 0xa0 && buf[0] <= 0xbf;

/**
 * Writes packets in the encoding `SERIALIZER` names and reads both, whichever the sender
 * wrote: a deployment changes encoding one node at a time (docs/operations.md, "Packets
 * between nodes"), never by stopping every node at once.
 */
export class WireSerializer extends Serializers.Base {
  private readonly json = new Serializers.JSON();
  /** Made when first needed: a JSON deployment never loads cbor-x. */
  private cborSerializer: Serializers.Base | undefined;

  constructor(private readonly writes: SerializerName) {
    super();
  }

  override init(broker: ServiceBroker): void {
    super.init(broker);
    this.json.init(broker);
    if (this.writes === 'cbor') this.cbor();
  }

  private cbor(): Serializers.Base {
    if (!this.cborSerializer) {
      this.cborSerializer = new Serializers.CBOR();
      this.cborSerializer.init(this.broker);
    }
    return this.cborSerializer;
  }

  override serialize(obj: Record<string, unknown>): Buffer {
    return this.writes === 'cbor' ? this.cbor().serialize(obj) : this.json.serialize(obj);
  }

  override deserialize(input: Buffer | string): unknown {
    const buf = asBuffer(input);
    return isCbor(buf) ? this.cbor().deserialize(buf) : this.json.deserialize(buf);
  }
}

/** The serializer of every node: writes what `SERIALIZER` names, reads what any node writes. */
export function createSerializer(name: SerializerName): WireSerializer {
  return new WireSerializer(name);
}
