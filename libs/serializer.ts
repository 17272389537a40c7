import { Serializers, type ServiceBroker } from 'moleculer';
import type { SerializerName } from './config';

/** The packet field that carries a stream chunk, by packet type (request, response). */
const CHUNK_FIELDS: Record<string, string> = { REQ: 'params', RES: 'data' };

/** First byte of a binary frame; JSON text never starts with a NUL. */
const BINARY_FRAME = 0x00;
const FRAME_HEADER = 5;

const asBuffer = (buf: Buffer | string | Uint8Array): Buffer =>
  typeof buf === 'string'
    ? Buffer.from(buf)
    : Buffer.isBuffer(buf)
      ? buf
      : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);

/**
 * Moleculer's JSON serializer, except for packets whose payload is raw bytes — the chunks
 * of a streamed upload or download. Plain JSON spells a Buffer as an array of decimal
 * numbers, up to four bytes per byte and slow to parse; such a packet travels instead as
 * a binary frame: `0x00`, the length of the packet's other fields as JSON (uint32 BE),
 * that JSON, then the bytes as they are. Every other packet is the same JSON as before.
 */
export class WaybillSerializer extends Serializers.JSON {
  override serialize(obj: Record<string, unknown>, type?: string): Buffer {
    const field = type ? CHUNK_FIELDS[type] : undefined;
    const bytes = field ? obj[field] : undefined;
    if (!field || !Buffer.isBuffer(bytes)) return super.serialize(obj);
    const fields = Buffer.from(JSON.stringify({ ...obj, [field]: undefined, $binary: field }));
    const header = Buffer.allocUnsafe(FRAME_HEADER);
    header[0] = BINARY_FRAME;
    header.writeUInt32BE(fields.length, 1);
    return Buffer.concat([header, fields, bytes]);
  }

  override deserialize(input: Buffer | string): unknown {
    const buf = asBuffer(input);
    if (buf.length < FRAME_HEADER || buf[0] !== BINARY_FRAME) return super.deserialize(buf);
    const end = FRAME_HEADER + buf.readUInt32BE(1);
    const obj = JSON.parse(buf.toString('utf8', FRAME_HEADER, end)) as Record<string, unknown>;
    const field = obj.$binary;
    delete obj.$binary;
    if (typeof field !== 'string') throw new Error('binary frame without its field name');
    obj[field] = buf.subarray(end);
    return obj;
  }
}

/**
 * First byte of a CBOR packet: moleculer's CBOR serializer writes every packet as a map
 * (major type 5), 0xa0-0xbf. JSON packets start with `{` and chunk frames with 0x00, so
 * a packet's first byte tells its encoding.
 */
const isCbor = (buf: Buffer): boolean => buf.length > 0 && buf[0] >= 0xa0 && buf[0] <= 0xbf;

/**
 * Writes packets in the encoding `SERIALIZER` names and reads both, whichever the sender
 * wrote: a deployment changes encoding one node at a time (docs/operations.md, "Packets
 * between nodes"), never by stopping every node at once.
 */
export class WireSerializer extends Serializers.Base {
  private readonly json = new WaybillSerializer();
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

  override serialize(obj: Record<string, unknown>, type?: string): Buffer {
    return this.writes === 'cbor' ? this.cbor().serialize(obj) : this.json.serialize(obj, type);
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
