import { PassThrough, Readable } from 'node:stream';
import { serviceUnavailable } from '../../../libs/errors';
import {
  BULK_MAX_FILES,
  MULTIPART_OVERHEAD,
  bodyBytesLimit,
  SINGLE_FIELD,
  acceptHead,
  busboyLimits,
  cleanFilename,
  errorSlot,
  fileTooLarge,
  isFailed,
  noFilesError,
  receiveFiles,
  refusePart,
  refuseRequest,
  type FileSink,
  type FileSlot,
  type ReceiveOptions,
  type StoredFile,
} from '../../../services/file/multipart';
import {
  HEADS,
  boundary,
  fileOf,
  multipartChunks,
  multipartStream,
  multipartType,
  type BodyOptions,
  type Part,
} from '../../support/multipart';
import { watchBody } from '../../../services/file/body-watch';
import { rejectionOf, thrownBy } from '../helpers';

/** An in-memory bucket that behaves like FileStorage: reads the body, fails when it fails. */
class FakeSink implements FileSink {
  readonly objects = new Map<string, { data: Buffer; contentType: string }>();
  readonly started: string[] = [];
  readonly removed: string[] = [];
  failPut: ((key: string) => Error | undefined) | undefined;

  async put(key: string, body: Readable, contentType: string): Promise<void> {
    this.started.push(key);
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    const failure = this.failPut?.(key);
    if (failure) throw failure;
    this.objects.set(key, { data: Buffer.concat(chunks), contentType });
  }

  async remove(keys: string[]): Promise<void> {
    for (const key of keys) {
      this.removed.push(key);
      this.objects.delete(key);
    }
  }
}

let sink: FakeSink;
let counter: number;
beforeEach(() => {
  sink = new FakeSink();
  counter = 0;
});

function options(overrides: Partial<ReceiveOptions> = {}): ReceiveOptions {
  return {
    mode: 'single',
    contentType: undefined,
    maxFileBytes: 10_000,
    allowedTypes: ['image/jpeg', 'image/png', 'image/gif', 'image/webp', 'application/pdf'],
    newKey: (ext) => `uploads/u/${++counter}.${ext}`,
    sink,
    ...overrides,
  };
}

async function receive(
  parts: Part[],
  overrides: Partial<ReceiveOptions> = {},
  body: BodyOptions = {},
) {
  const b = boundary();
  return receiveFiles(multipartStream(parts, b, body), {
    ...options(overrides),
    contentType: multipartType(b),
  });
}

const stored = (slot: FileSlot) => {
  if (isFailed(slot)) throw new Error(`expected a stored file, got ${slot.error.message}`);
  return slot as StoredFile;
};

const statusOf = (err: unknown) => (err as { code?: number }).code;

describe('single upload', () => {
  it('stores the file under a new key with the sniffed type and the same bytes', async () => {
    const png = fileOf(HEADS.png, 5000);
    const [slot] = await receive([
      { name: 'upload-file', filename: 'photo.png', contentType: 'image/png', data: png },
    ]);
    const file = stored(slot);
    expect(file).toEqual({
      key: 'uploads/u/1.png',
      mime: 'image/png',
      size: png.length,
      filename: 'photo.png',
    });
    expect(sink.objects.get(file.key)).toEqual({ data: png, contentType: 'image/png' });
  });

  it('fails the request, keeping nothing, when a key cannot be made for a file (no hang)', async () => {
    const png = fileOf(HEADS.png, 5000);
    let made = 0;
    const err = await rejectionOf(() =>
      receive(
        [
          { name: 'upload-file', filename: 'a.png', contentType: 'image/png', data: png },
          { name: 'upload-file', filename: 'b.png', contentType: 'image/png', data: png },
        ],
        {
          mode: 'bulk',
          newKey: (ext) => {
            if (++made === 2) throw new Error('no key for this user');
            return `uploads/u/${made}.${ext}`;
          },
        },
      ),
    );
    expect((err as Error).message).toBe('no key for this user');
    expect(sink.objects.size).toBe(0);
    expect(sink.removed).toEqual(['uploads/u/1.png']);
  });

  it('trusts the bytes, not the declared type or name', async () => {
    const pdf = fileOf(HEADS.pdf);
    const [slot] = await receive([
      { name: 'upload-file', filename: 'innocent.png', contentType: 'image/png', data: pdf },
    ]);
    expect(stored(slot)).toMatchObject({ mime: 'application/pdf', key: 'uploads/u/1.pdf' });
  });

  it('refuses a file whose bytes are of no accepted type (415), storing nothing', async () => {
    const html = Buffer.from('<html><script>alert(1)</script></html>'.repeat(10));
    const err = await rejectionOf(() =>
      receive([{ name: 'upload-file', filename: 'x.png', contentType: 'image/png', data: html }]),
    );
    expect(statusOf(err)).toBe(415);
    expect((err as Error).message).toMatch(/File type not accepted; send one of image\/jpeg/);
    expect(sink.started).toEqual([]);
  });

  it('refuses a known type that is not allowed', async () => {
    const err = await rejectionOf(() =>
      receive([{ name: 'upload-file', filename: 'a.gif', data: fileOf(HEADS.gif) }], {
        allowedTypes: ['image/png'],
      }),
    );
    expect(statusOf(err)).toBe(415);
    expect((err as Error).message).toMatch(/\(image\/gif\)/);
  });

  it('accepts a file of exactly FILE_MAX_BYTES', async () => {
    const png = fileOf(HEADS.png, 10_000 - HEADS.png.length);
    const [slot] = await receive([{ name: 'upload-file', filename: 'a.png', data: png }]);
    expect(stored(slot).size).toBe(10_000);
  });

  it('refuses one byte more with 413, storing nothing', async () => {
    const png = fileOf(HEADS.png, 10_001 - HEADS.png.length);
    const err = await rejectionOf(() =>
      receive([{ name: 'upload-file', filename: 'a.png', data: png }]),
    );
    expect(statusOf(err)).toBe(413);
    expect((err as Error).message).toBe('The file is larger than 10000 bytes');
    expect(sink.objects.size).toBe(0);
  });

  it('aborts an upload under way when the file grows too large, and removes it', async () => {
    async function* slowly() {
      yield HEADS.png;
      for (let i = 0; i < 300; i++) {
        yield Buffer.alloc(1000, i);
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    const err = await rejectionOf(() =>
      receive([{ name: 'upload-file', filename: 'a.png', data: slowly }], {
        maxFileBytes: 200_000,
      }),
    );
    expect(statusOf(err)).toBe(413);
    expect((err as Error).message).toBe('The file is larger than 200000 bytes');
    expect(sink.started).toHaveLength(1);
    expect(sink.removed).toEqual(sink.started);
    expect(sink.objects.size).toBe(0);
  });

  it('answers 413 from Content-Length alone, before reading', async () => {
    const stream = new PassThrough();
    const err = await rejectionOf(() =>
      receiveFiles(stream, {
        ...options(),
        contentType: multipartType('x'),
        contentLength: 10_000 + MULTIPART_OVERHEAD + 1,
      }),
    );
    expect(statusOf(err)).toBe(413);
    expect(stream.readableFlowing).toBe(true); // drained, so the client can finish sending
  });

  it.each<[string, Part[], RegExp]>([
    [
      'a file under another name',
      [{ name: 'file', filename: 'a.png', data: fileOf(HEADS.png) }],
      /Unexpected file field "file"; send the file as "upload-file"/,
    ],
    ['no part at all', [], /Missing the file part "upload-file"/],
    [
      'a text field',
      [{ name: 'note', data: 'hello' }],
      /^Unexpected text field "note": an upload takes one file part named "upload-file", nothing else; nothing was stored$/,
    ],
    [
      'upload-file as a text field',
      [{ name: 'upload-file', data: 'not a file' }],
      /"upload-file" must be a file part, sent with a filename/,
    ],
    [
      'two files',
      [
        { name: 'upload-file', filename: 'a.png', data: fileOf(HEADS.png) },
        { name: 'upload-file', filename: 'b.png', data: fileOf(HEADS.png) },
      ],
      /use \/file\/bulk-upload for several/,
    ],
    [
      'an empty file',
      [{ name: 'upload-file', filename: 'a.png', data: Buffer.alloc(0) }],
      /The file is empty/,
    ],
  ])('refuses %s with 400, keeping nothing', async (_name, parts, message) => {
    const err = await rejectionOf(() => receive(parts));
    expect(statusOf(err)).toBe(400);
    expect((err as Error).message).toMatch(message);
    expect(sink.objects.size).toBe(0);
  });

  it('refuses a text field sent after the file, and removes the file stored before it', async () => {
    const err = await rejectionOf(() =>
      receive(
        [
          { name: 'upload-file', filename: 'a.png', data: fileOf(HEADS.png) },
          { name: 'caption', data: 'after the file' },
        ],
        {},
        { paced: true },
      ),
    );
    expect(statusOf(err)).toBe(400);
    expect((err as Error).message).toMatch(/^Unexpected text field "caption"/);
    expect([...sink.removed].sort()).toEqual([...sink.started].sort());
  });

  it.each<[string, string | undefined]>([
    ['no content type', undefined],
    ['JSON', 'application/json'],
    ['urlencoded', 'application/x-www-form-urlencoded'],
    ['multipart/mixed', 'multipart/mixed; boundary=x'],
    ['multipart without a boundary', 'multipart/form-data'],
    ['multipart with an empty boundary', 'multipart/form-data; boundary='],
  ])('refuses %s with 400', async (_name, contentType) => {
    const err = await rejectionOf(() =>
      receiveFiles(Readable.from([Buffer.from('{}')]), { ...options(), contentType }),
    );
    expect(statusOf(err)).toBe(400);
  });

  it('refuses a body that ends before its closing boundary, keeping nothing', async () => {
    const b = boundary();
    const stream = multipartStream(
      [{ name: 'upload-file', filename: 'a.png', data: fileOf(HEADS.png) }],
      b,
      { end: false },
    );
    const err = await rejectionOf(() =>
      receiveFiles(stream, { ...options(), contentType: multipartType(b) }),
    );
    expect(statusOf(err)).toBe(400);
    expect((err as Error).message).toMatch(/Malformed multipart body/);
    expect(sink.objects.size).toBe(0);
  });

  it('cleans up when the client goes away mid-file', async () => {
    const b = boundary();
    const source = new PassThrough();
    const done = receiveFiles(source, { ...options(), contentType: multipartType(b) });
    const chunks = multipartChunks(
      [{ name: 'upload-file', filename: 'a.png', data: fileOf(HEADS.png, 5000) }],
      b,
    );
    source.write((await chunks.next()).value);
    source.write((await chunks.next()).value.subarray(0, 2000));
    await new Promise((r) => setImmediate(r));
    source.destroy(new Error('aborted'));
    const err = await rejectionOf(() => done);
    expect(statusOf(err)).toBe(400);
    expect((err as Error).message).toMatch(/interrupted/);
    expect(sink.removed).toEqual(sink.started);
    expect(sink.objects.size).toBe(0);
  });

  it('answers 503 when storage fails, keeping nothing', async () => {
    sink.failPut = () => serviceUnavailable('File storage is unavailable; retry in a few seconds');
    const err = await rejectionOf(() =>
      receive([{ name: 'upload-file', filename: 'a.png', data: fileOf(HEADS.png) }]),
    );
    expect(statusOf(err)).toBe(503);
    expect(sink.removed).toEqual(sink.started);
  });
});

describe('bulk upload', () => {
  const files = (n: number, name = 'files') =>
    Array.from({ length: n }, (_, i) => ({
      name,
      filename: `f${i}.png`,
      data: fileOf(HEADS.png, 100 + i),
    }));

  it(`stores up to ${BULK_MAX_FILES} files, in the order sent`, async () => {
    const parts = files(BULK_MAX_FILES);
    const slots = await receive(parts, { mode: 'bulk' });
    expect(slots.map((s) => stored(s).filename)).toEqual(parts.map((p) => p.filename));
    slots.forEach((slot, i) => {
      expect(sink.objects.get(stored(slot).key)?.data).toEqual(parts[i].data);
    });
  });

  it('refuses a text field among the files, as the document’s one field of files says, keeping nothing', async () => {
    const parts = [...files(2), { name: 'note', data: 'x' }, ...files(2)];
    const err = await rejectionOf(() => receive(parts, { mode: 'bulk' }, { paced: true }));
    expect(statusOf(err)).toBe(400);
    expect((err as Error).message).toBe(
      `Unexpected text field "note": an upload takes 1 to ${BULK_MAX_FILES} file parts sharing one name, each sent with a filename, nothing else; nothing was stored`,
    );
    expect([...sink.removed].sort()).toEqual([...sink.started].sort());
  });

  it('refuses the files’ own field sent without a filename (a text field), as a client generated from the document never sends it', async () => {
    const parts = [{ name: 'files', data: fileOf(HEADS.png) }];
    const err = await rejectionOf(() => receive(parts, { mode: 'bulk' }));
    expect(statusOf(err)).toBe(400);
    expect((err as Error).message).toMatch(
      /^Unexpected text field "files": .*each sent with a filename/,
    );
    expect(sink.objects.size).toBe(0);
  });

  it('accepts any field name shared by all files', async () => {
    const slots = await receive(files(2, 'upload-file'), { mode: 'bulk' });
    expect(slots).toHaveLength(2);
  });

  it(`fails an ${BULK_MAX_FILES + 1}th file with 400 and removes what was stored`, async () => {
    const err = await rejectionOf(() =>
      receive(files(BULK_MAX_FILES + 1), { mode: 'bulk' }, { paced: true }),
    );
    expect(statusOf(err)).toBe(400);
    expect((err as Error).message).toBe(
      `At most ${BULK_MAX_FILES} files per request; nothing was stored`,
    );
    expect(sink.started.length).toBeGreaterThan(0);
    expect([...sink.removed].sort()).toEqual([...sink.started].sort());
    expect(sink.objects.size).toBe(0);
  });

  it('gives a refused file an error slot; the others are stored', async () => {
    const slots = await receive(
      [
        { name: 'files', filename: 'ok.png', data: fileOf(HEADS.png) },
        { name: 'files', filename: 'page.html', data: Buffer.from('<html></html>'.repeat(9)) },
        { name: 'files', filename: 'big.pdf', data: fileOf(HEADS.pdf, 20_000) },
        { name: 'files', filename: 'empty.gif', data: Buffer.alloc(0) },
        { name: 'files', contentType: 'application/octet-stream', data: fileOf(HEADS.jpeg) },
      ],
      { mode: 'bulk' },
    );
    expect(slots.map((s) => (isFailed(s) ? errorSlot(s) : stored(s).mime))).toEqual([
      'image/png',
      {
        error: {
          statusCode: 415,
          message:
            'File type not accepted; send one of image/jpeg, image/png, image/gif, image/webp, application/pdf',
          filename: 'page.html',
        },
      },
      {
        error: {
          statusCode: 413,
          message: 'The file is larger than 10000 bytes',
          filename: 'big.pdf',
        },
      },
      { error: { statusCode: 400, message: 'The file is empty', filename: 'empty.gif' } },
      'image/jpeg',
    ]);
    expect(sink.objects.size).toBe(2);
    expect(stored(slots[4]).filename).toBeNull();
  });

  it('stores the files one after the other: the next is read once the previous is stored', async () => {
    const parts = files(3);
    const order: string[] = [];
    let release: () => void = () => undefined;
    const firstStored = new Promise<void>((resolve) => (release = resolve));
    const put = sink.put.bind(sink);
    sink.put = async (key, body, contentType) => {
      order.push(`start ${key}`);
      await put(key, body, contentType);
      if (key === 'uploads/u/1.png') await firstStored;
      order.push(`stored ${key}`);
    };
    const done = receive(parts, { mode: 'bulk' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The first file is read in full, but not stored yet: the second waits.
    expect(order).toEqual(['start uploads/u/1.png']);
    release();
    const slots = await done;
    expect(order).toEqual([
      'start uploads/u/1.png',
      'stored uploads/u/1.png',
      'start uploads/u/2.png',
      'stored uploads/u/2.png',
      'start uploads/u/3.png',
      'stored uploads/u/3.png',
    ]);
    expect(slots.map((s) => stored(s).filename)).toEqual(parts.map((p) => p.filename));
  });

  it('refuses files under different field names with 400', async () => {
    const err = await rejectionOf(() =>
      receive([...files(1, 'a'), ...files(1, 'b')], { mode: 'bulk' }),
    );
    expect(statusOf(err)).toBe(400);
    expect((err as Error).message).toMatch(/share one field name; got "a" and "b"/);
    expect(sink.objects.size).toBe(0);
  });

  it('refuses a request without files with 400', async () => {
    const err = await rejectionOf(() => receive([], { mode: 'bulk' }));
    expect(statusOf(err)).toBe(400);
    expect((err as Error).message).toMatch(/No files/);
  });

  it('fails the whole request when storage fails, removing the files already stored', async () => {
    sink.failPut = (key) =>
      key.startsWith('uploads/u/3.') ? serviceUnavailable('down') : undefined;
    const err = await rejectionOf(() => receive(files(4), { mode: 'bulk' }));
    expect(statusOf(err)).toBe(503);
    expect(sink.objects.size).toBe(0);
  });

  it('cleans the file name of an error slot', async () => {
    const body = Buffer.from(
      [
        '--bnd',
        `Content-Disposition: form-data; name="files"; filename*=UTF-8''a%07b%0D%0A.txt`,
        'Content-Type: text/plain',
        '',
        'plain text, not an image',
        '--bnd--',
        '',
      ].join('\r\n'),
    );
    const slots = await receiveFiles(Readable.from([body]), {
      ...options({ mode: 'bulk' }),
      contentType: multipartType('bnd'),
    });
    expect(isFailed(slots[0]) && errorSlot(slots[0]).error.filename).toBe('ab.txt');
  });
});

describe('the parts of a reception', () => {
  const multipart = 'multipart/form-data; boundary=x';

  describe('refuseRequest', () => {
    const request = (contentType: string | undefined, contentLength?: number) => ({
      mode: 'single' as const,
      contentType,
      contentLength,
      maxFileBytes: 1000,
    });

    it('takes multipart/form-data with its boundary, in any case, quoted or not', () => {
      expect(refuseRequest(request(multipart))).toBeUndefined();
      expect(refuseRequest(request('Multipart/Form-Data; Boundary=x'))).toBeUndefined();
      expect(refuseRequest(request('multipart/form-data; charset=utf-8; boundary="a b"'))).toBe(
        undefined,
      );
    });

    it.each([
      'multipart/form-data',
      'multipart/form-data; charset=utf-8',
      'multipart/form-data; boundary=',
    ])('refuses %p with 400: no boundary, so no body could be read', (contentType) => {
      expect(refuseRequest(request(contentType))).toMatchObject({
        code: 400,
        message: 'Malformed multipart/form-data content type: the boundary is missing',
      });
    });

    it.each<[string | undefined, string]>([
      [undefined, 'no content type'],
      ['application/json; charset=utf-8', 'application/json'],
      ['multipart/form-datax; boundary=x', 'multipart/form-datax'],
    ])('refuses %p with 400 naming what came', (contentType, named) => {
      const err = refuseRequest(request(contentType));
      expect(err?.code).toBe(400);
      expect(err?.message).toBe(`Send files as multipart/form-data (got ${named})`);
    });

    it('refuses an upload longer than all the files it may carry and their envelopes', () => {
      expect(refuseRequest(request(multipart, 1000 + MULTIPART_OVERHEAD))).toBeUndefined();
      const err = refuseRequest(request(multipart, 1001 + MULTIPART_OVERHEAD));
      expect(err).toMatchObject({ code: 413, message: 'The file is larger than 1000 bytes' });
      const bulk = (length: number) => ({ ...request(multipart, length), mode: 'bulk' as const });
      const most = BULK_MAX_FILES * (1000 + MULTIPART_OVERHEAD);
      expect(bodyBytesLimit('bulk', 1000)).toBe(most);
      expect(refuseRequest(bulk(most))).toBeUndefined();
      expect(refuseRequest(bulk(most + 1))).toMatchObject({
        code: 413,
        message: `The upload is larger than ${BULK_MAX_FILES} files of 1000 bytes can be; send fewer or smaller files`,
      });
    });
  });

  it('busboyLimits lets one file and one byte too many through, to refuse them', () => {
    expect(busboyLimits('single', 1000)).toMatchObject({ fileSize: 1001, files: 2 });
    expect(busboyLimits('bulk', 1000)).toMatchObject({ files: BULK_MAX_FILES + 1 });
  });

  it('fileTooLarge spells whole megabytes as MB, anything else in bytes', () => {
    expect(fileTooLarge(5 * 1024 * 1024).message).toBe('The file is larger than 5 MB');
    expect(fileTooLarge(1500).message).toBe('The file is larger than 1500 bytes');
    expect(fileTooLarge(1500).code).toBe(413);
  });

  describe('refusePart', () => {
    it('takes one upload-file part in a single upload', () => {
      expect(refusePart('single', SINGLE_FIELD, SINGLE_FIELD, 0)).toBeUndefined();
      expect(refusePart('single', 'photo', 'photo', 0)?.message).toBe(
        'Unexpected file field "photo"; send the file as "upload-file"',
      );
      expect(refusePart('single', SINGLE_FIELD, SINGLE_FIELD, 1)?.message).toMatch(
        /use \/file\/bulk-upload for several/,
      );
    });

    it(`takes up to ${BULK_MAX_FILES} parts named like the first in a bulk upload`, () => {
      expect(refusePart('bulk', 'files', 'files', 0)).toBeUndefined();
      expect(refusePart('bulk', 'files', 'files', BULK_MAX_FILES - 1)).toBeUndefined();
      expect(refusePart('bulk', 'files', 'files', BULK_MAX_FILES)?.message).toBe(
        `At most ${BULK_MAX_FILES} files per request; nothing was stored`,
      );
      expect(refusePart('bulk', 'b', 'a', 1)?.message).toBe(
        'All files must share one field name; got "a" and "b"',
      );
    });
  });

  it('noFilesError says what was missing', () => {
    expect(noFilesError('single').message).toBe('Missing the file part "upload-file"');
    expect(noFilesError('bulk').message).toMatch(/^No files; send 1 to 7 files/);
    expect(noFilesError('bulk').code).toBe(400);
  });

  describe('acceptHead', () => {
    it('names the type of an allowed file from its bytes', () => {
      expect(acceptHead(HEADS.png, ['image/png']).mime).toBe('image/png');
    });

    it('refuses an empty file with 400, another type with 415', () => {
      expect(thrownBy(() => acceptHead(Buffer.alloc(0), ['image/png']))).toMatchObject({
        code: 400,
        message: 'The file is empty',
      });
      expect(thrownBy(() => acceptHead(HEADS.pdf, ['image/png', 'image/gif']))).toMatchObject({
        code: 415,
        message: 'File type not accepted (application/pdf); send one of image/png, image/gif',
      });
      expect(thrownBy(() => acceptHead(Buffer.from('hello'), ['image/png']))).toMatchObject({
        code: 415,
        message: 'File type not accepted; send one of image/png',
      });
    });
  });

  it('cleanFilename drops control characters, bounds the length, and empties to null', () => {
    expect(cleanFilename('a\x07b\r\n.png')).toBe('ab.png');
    expect(cleanFilename('x'.repeat(300))).toHaveLength(255);
    expect(cleanFilename('\x01')).toBeNull();
    expect(cleanFilename(undefined)).toBeNull();
  });

  it('cleanFilename drops C1 controls and lone surrogates, and counts characters, never halves of one', () => {
    expect(cleanFilename('a\u0085b\u009b.png')).toBe('ab.png');
    expect(cleanFilename('a\ud800b.png')).toBe('ab.png');
    const cut = cleanFilename('📦'.repeat(300)) as string;
    expect(Array.from(cut)).toHaveLength(255);
    expect(cut).toBe('📦'.repeat(255));
  });

  it('reads a file name sent as UTF-8, as browsers send it', async () => {
    const png = fileOf(HEADS.png, 100);
    const [slot] = await receive([
      { name: 'upload-file', filename: 'фото доставки.png', contentType: 'image/png', data: png },
    ]);
    expect(stored(slot).filename).toBe('фото доставки.png');
    const [refused] = await receive(
      [{ name: 'files', filename: 'накладная.txt', contentType: 'text/plain', data: 'hello' }],
      { mode: 'bulk' },
    );
    expect(isFailed(refused) && refused.filename).toBe('накладная.txt');
  });

  it('says of a text field without a name that it has none', async () => {
    const err = await rejectionOf(() => receive([{ name: '', data: 'hello' }], { mode: 'bulk' }));
    expect((err as Error).message).toMatch(/^Unexpected text field without a name: /);
  });

  it.each(['single', 'bulk'] as const)(
    'refuses file parts without a name (%s): in a bulk upload they shared "no name"',
    async (mode) => {
      const png = fileOf(HEADS.png, 100);
      const part = { name: '', filename: 'a.png', contentType: 'image/png', data: png };
      const err = await rejectionOf(() => receive([part, part], { mode }));
      expect(statusOf(err)).toBe(400);
      expect((err as Error).message).toMatch(/^A file part without a name; /);
      expect(sink.objects.size).toBe(0);
    },
  );
});

describe('a request refused before its body is read', () => {
  it.each([
    ['not multipart', 'text/plain'],
    ['without a boundary', 'multipart/form-data'],
  ])(
    'is answered, and its body ending badly afterwards (%s; the client gone, the watch’s timeout) stops nothing',
    async (_, contentType) => {
      const body = new PassThrough();
      const watched = watchBody(body, { idleMs: 20, deadlineMs: 5_000 });
      await expect(receiveFiles(watched, options({ contentType }))).rejects.toMatchObject({
        code: 400,
      });
      body.write(Buffer.alloc(1024));
      // The watch goes quiet and destroys itself with a 408 nobody reads; then the client goes.
      await new Promise((resolve) => setTimeout(resolve, 60));
      body.destroy(new Error('the client went away'));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(watched.destroyed).toBe(true);
    },
  );
});
