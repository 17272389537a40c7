import { randomBytes } from 'node:crypto';
import { Serializers } from 'moleculer';
import { WaybillSerializer } from '../../../libs/serializer';

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
