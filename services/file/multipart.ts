import { Transform, type Readable, type TransformCallback } from 'node:stream';
import Busboy from 'busboy';
import {
  ERROR_STATUS,
  badRequest,
  payloadTooLarge,
  unsupportedMediaType,
  type WaybillError,
} from '../../libs/errors';
import { SNIFF_LENGTH, extensionFor, sniff } from './sniff';

/** Files one bulk upload may carry (the specification's limit). */
export const BULK_MAX_FILES = 7;
/** The one file part of a single upload. */
export const SINGLE_FIELD = 'upload-file';
/** Room for boundaries, part headers and small text fields around a single file. */
export const MULTIPART_OVERHEAD = 64 * 1024;

/** Where files go: the S3 bucket in production, a fake in unit tests. */
export interface FileSink {
  /** Stores `body` under `key`; rejects (after cleaning up) when `body` is destroyed. */
  put(key: string, body: Readable, contentType: string): Promise<void>;
  /** Deletes objects; never throws. */
  remove(keys: string[]): Promise<void>;
}

export interface ReceiveOptions {
  /** `single`: one part named `upload-file`; `bulk`: up to 7 parts sharing one name. */
  mode: 'single' | 'bulk';
  /** The request's Content-Type and Content-Length headers. */
  contentType: string | undefined;
  contentLength?: number;
  maxFileBytes: number;
  allowedTypes: readonly string[];
  /** A fresh object key for a file with this extension. */
  newKey: (ext: string) => string;
  sink: FileSink;
}

export interface StoredFile {
  key: string;
  mime: string;
  size: number;
  filename: string | null;
}

export interface FailedFile {
  error: WaybillError;
  filename: string | null;
}

/** One entry per file part, in the order sent. */
export type FileSlot = StoredFile | FailedFile;

export const isFailed = (slot: FileSlot): slot is FailedFile => 'error' in slot;

const formatBytes = (n: number) =>
  n >= 1024 * 1024 && n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MB` : `${n} bytes`;

/** The client's file name, for messages and error slots: no control characters, bounded. */
function cleanFilename(name: string | undefined): string | null {
  if (name === undefined) return null;
  // eslint-disable-next-line no-control-regex -- control characters are dropped on purpose
  const clean = name.replace(/[\x00-\x1f\x7f]/g, '').slice(0, 255);
  return clean === '' ? null : clean;
}

/**
 * Holds back the first bytes of a file until its type is known, then lets everything
 * through with backpressure. `decide(head)` throws to refuse the file; it runs once, with
 * at least SNIFF_LENGTH bytes or the whole (shorter) file.
 */
class SniffGate extends Transform {
  private head: Buffer[] = [];
  private headLength = 0;
  private open = false;
  bytes = 0;

  constructor(private readonly decide: (head: Buffer) => void) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
    this.bytes += chunk.length;
    if (this.open) {
      callback(null, chunk);
      return;
    }
    this.head.push(chunk);
    this.headLength += chunk.length;
    if (this.headLength < SNIFF_LENGTH) callback();
    else this.release(callback);
  }

  override _flush(callback: TransformCallback) {
    if (this.open) callback();
    else this.release(callback);
  }

  private release(callback: TransformCallback) {
    const head = Buffer.concat(this.head);
    this.head = [];
    try {
      this.decide(head);
    } catch (err) {
      callback(err as Error);
      return;
    }
    this.open = true;
    callback(null, head);
  }
}

function parserFor(options: ReceiveOptions) {
  const { contentType } = options;
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType)) {
    throw badRequest(
      `Send files as multipart/form-data (got ${contentType ? contentType.split(';')[0] : 'no content type'})`,
    );
  }
  if (
    options.mode === 'single' &&
    options.contentLength !== undefined &&
    options.contentLength > options.maxFileBytes + MULTIPART_OVERHEAD
  ) {
    throw payloadTooLarge(`The file is larger than ${formatBytes(options.maxFileBytes)}`);
  }
  try {
    return Busboy({
      headers: { 'content-type': contentType },
      limits: {
        // busboy flags a file that reaches the limit, so one byte more is the first too many.
        fileSize: options.maxFileBytes + 1,
        files: options.mode === 'single' ? 2 : BULK_MAX_FILES + 1,
        fields: 20,
        fieldSize: 1024,
        parts: 50,
        headerPairs: 20,
      },
    });
  } catch {
    throw badRequest('Malformed multipart/form-data content type: the boundary is missing');
  }
}

/**
 * Parses a multipart body and streams each file to the sink as it arrives: the first bytes
 * are sniffed (the client's type and name are not trusted), the rest flows through with
 * backpressure, so memory stays flat whatever the size. Resolves with one slot per file, in
 * order, once the whole body is read.
 *
 * A refused file (empty, too large, type not allowed) fails the request in `single` mode and
 * becomes an error slot in `bulk` mode. A request-level failure (not multipart, wrong or
 * mixed field names, too many files, malformed or interrupted body, storage down) rejects:
 * uploads in flight are aborted and every object stored for this request is deleted first.
 */
export function receiveFiles(stream: Readable, options: ReceiveOptions): Promise<FileSlot[]> {
  let busboy: Busboy.Busboy;
  try {
    busboy = parserFor(options);
  } catch (err) {
    stream.resume(); // let the body drain; the answer goes out now
    return Promise.reject(err);
  }
  const { mode, sink } = options;
  const allowed = new Set(options.allowedTypes);

  return new Promise<FileSlot[]>((resolve, reject) => {
    const slots: Promise<FileSlot>[] = [];
    /** Keys whose upload started: all deleted if the request fails. */
    const started = new Set<string>();
    const gates = new Set<SniffGate>();
    let fieldName: string | undefined;
    let textFileField = false;
    let failed = false;

    function fail(err: WaybillError) {
      if (failed) return;
      failed = true;
      stream.unpipe(busboy);
      stream.resume();
      busboy.removeAllListeners('close');
      busboy.destroy();
      for (const gate of gates) gate.destroy(err);
      void Promise.allSettled(slots)
        .then(() => sink.remove([...started]))
        .then(() => reject(err));
    }

    function storeFile(file: Readable, filename: string | null): Promise<FileSlot> {
      return new Promise<FileSlot>((settle) => {
        let put: Promise<void> | undefined;
        let key = '';
        let mime = '';
        const refused = (error: WaybillError): FileSlot => {
          if (mode === 'single') fail(error);
          return { error, filename };
        };

        const gate = new SniffGate((head) => {
          if (head.length === 0) throw badRequest('The file is empty');
          const sniffed = sniff(head);
          if (!sniffed || !allowed.has(sniffed.mime)) {
            throw unsupportedMediaType(
              `File type not accepted${sniffed ? ` (${sniffed.mime})` : ''}; send one of ${[...allowed].join(', ')}`,
            );
          }
          key = options.newKey(extensionFor(sniffed, filename ?? undefined));
          mime = sniffed.mime;
          started.add(key);
          put = sink.put(key, gate, mime);
          put.then(
            () => settle({ key, mime, size: gate.bytes, filename }),
            async (err: WaybillError) => {
              if (err.type === 'PAYLOAD_TOO_LARGE') {
                await sink.remove([key]);
                started.delete(key);
                settle(refused(err));
              } else {
                fail(err);
                settle({ error: err, filename });
              }
            },
          );
        });
        gates.add(gate);
        gate.once('close', () => gates.delete(gate));
        gate.on('error', (err: WaybillError) => {
          file.unpipe(gate);
          file.resume(); // busboy waits for each file to be read before it goes on
          if (!put) settle(refused(err));
        });
        file.on('limit', () =>
          gate.destroy(
            payloadTooLarge(`The file is larger than ${formatBytes(options.maxFileBytes)}`),
          ),
        );
        file.on('error', (err: Error) =>
          gate.destroy(badRequest(`Malformed file part: ${err.message}`)),
        );
        file.pipe(gate);
      });
    }

    busboy.on('file', (name, file, info) => {
      // busboy destroys an unfinished file stream with an error when parsing stops.
      file.on('error', () => undefined);
      if (failed) {
        file.resume();
        return;
      }
      if (mode === 'single') {
        if (name !== SINGLE_FIELD) {
          file.resume();
          fail(badRequest(`Unexpected file field "${name}"; send the file as "${SINGLE_FIELD}"`));
          return;
        }
        if (slots.length >= 1) {
          file.resume();
          fail(badRequest(`Send one file as "${SINGLE_FIELD}"; use /file/bulk-upload for several`));
          return;
        }
      } else {
        fieldName ??= name;
        if (name !== fieldName) {
          file.resume();
          fail(badRequest(`All files must share one field name; got "${fieldName}" and "${name}"`));
          return;
        }
        if (slots.length >= BULK_MAX_FILES) {
          file.resume();
          fail(badRequest(`At most ${BULK_MAX_FILES} files per request; nothing was stored`));
          return;
        }
      }
      slots.push(storeFile(file, cleanFilename(info.filename)));
    });

    busboy.on('field', (name) => {
      if (name === SINGLE_FIELD) textFileField = true;
    });

    busboy.on('error', (err: Error) =>
      fail(badRequest(`Malformed multipart body: ${err.message}`)),
    );
    stream.on('error', () => fail(badRequest('The upload was interrupted before it ended')));

    busboy.on('close', () => {
      void Promise.all(slots).then((results) => {
        if (failed) return;
        if (results.length === 0) {
          const hint =
            mode === 'single'
              ? textFileField
                ? `"${SINGLE_FIELD}" must be a file part, sent with a filename`
                : `Missing the file part "${SINGLE_FIELD}"`
              : `No files; send 1 to ${BULK_MAX_FILES} files in parts sharing one field name`;
          fail(badRequest(hint));
          return;
        }
        resolve(results);
      });
    });

    stream.pipe(busboy);
  });
}

/** The error slot of a refused file in a bulk upload's `urls`. */
export function errorSlot(slot: FailedFile) {
  const statusCode =
    typeof slot.error.type === 'string' && Object.hasOwn(ERROR_STATUS, slot.error.type)
      ? ERROR_STATUS[slot.error.type as keyof typeof ERROR_STATUS]
      : 400;
  return { error: { statusCode, message: slot.error.message, filename: slot.filename } };
}
