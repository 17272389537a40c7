import { Transform, type Readable, type TransformCallback } from 'node:stream';
import Busboy from 'busboy';
import {
  ERROR_STATUS,
  badRequest,
  isWaybillError,
  payloadTooLarge,
  unsupportedMediaType,
  type WaybillError,
} from '../../libs/errors';
import { UNPRINTED } from '../../libs/text';
import { readableBytes } from './sizes';
import { SNIFF_LENGTH, extensionFor, sniff, type Sniffed } from './sniff';

/** Files one bulk upload may carry (the specification's limit). */
export const BULK_MAX_FILES = 7;
/** The one file part of a single upload. */
export const SINGLE_FIELD = 'upload-file';
/** Room for the boundaries and part headers around a single file. */
export const MULTIPART_OVERHEAD = 64 * 1024;

/** Where files go: the S3 bucket in production, a fake in unit tests. */
export interface FileSink {
  /** Stores `body` under `key`; rejects (after cleaning up) when `body` is destroyed. */
  put(key: string, body: Readable, contentType: string): Promise<void>;
  /** Deletes objects (missing ones are fine); never throws, and deletes again what it could not. */
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

/** The client's file name, for messages and error slots: no control characters, bounded. */
export function cleanFilename(name: string | undefined): string | null {
  if (name === undefined) return null;
  // C0 and C1 controls and lone surrogates; 255 characters counted as code points, so that a
  // cut never splits one in two halves.
  const clean = Array.from(name.replace(UNPRINTED, '')).slice(0, FILENAME_MAX_CHARACTERS).join('');
  return clean === '' ? null : clean;
}

const FILENAME_MAX_CHARACTERS = 255;

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

/**
 * The most a request's body may weigh: as many files as it may carry, each at the limit, with
 * their envelopes. No upload that could succeed is larger; past it, what busboy passes over
 * (a preamble, parts it skips, the rest of a file over the limit, an epilogue) would go on
 * being read until the upload's time ran out.
 */
export const bodyBytesLimit = (mode: ReceiveOptions['mode'], maxFileBytes: number) =>
  (mode === 'single' ? 1 : BULK_MAX_FILES) * (maxFileBytes + MULTIPART_OVERHEAD);

/** The 413 of a request body past `bodyBytesLimit`. */
export const bodyTooLarge = (mode: ReceiveOptions['mode'], maxFileBytes: number) =>
  mode === 'single'
    ? fileTooLarge(maxFileBytes)
    : payloadTooLarge(
        `The upload is larger than ${BULK_MAX_FILES} files of ${readableBytes(maxFileBytes)} can be; send fewer or smaller files`,
      );

const missingBoundary = () =>
  badRequest('Malformed multipart/form-data content type: the boundary is missing');

export const fileTooLarge = (maxFileBytes: number) =>
  payloadTooLarge(`The file is larger than ${readableBytes(maxFileBytes)}`);

/**
 * Why the request cannot be a multipart upload, before its body is read: not multipart, or a
 * Content-Length beyond what its files could weigh (`bodyBytesLimit`). Undefined when it may be.
 */
export function refuseRequest(
  options: Pick<ReceiveOptions, 'mode' | 'contentType' | 'contentLength' | 'maxFileBytes'>,
): WaybillError | undefined {
  const { contentType } = options;
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType)) {
    return badRequest(
      `Send files as multipart/form-data (got ${contentType ? contentType.split(';')[0] : 'no content type'})`,
    );
  }
  if (!/;\s*boundary=("[^"]+"|[^\s;"]+)/i.test(contentType)) return missingBoundary();
  if (
    options.contentLength !== undefined &&
    options.contentLength > bodyBytesLimit(options.mode, options.maxFileBytes)
  ) {
    return bodyTooLarge(options.mode, options.maxFileBytes);
  }
  return undefined;
}

/**
 * busboy's limits: one file more than allowed and one text field, so that they can be refused
 * by name. The upload fails at the first refused part (busboy stops there), so no limit on
 * parts is needed: past one, busboy would skip the rest, files included, without a word.
 */
export function busboyLimits(mode: ReceiveOptions['mode'], maxFileBytes: number) {
  return {
    // busboy flags a file that reaches the limit, so one byte more is the first too many.
    fileSize: maxFileBytes + 1,
    files: mode === 'single' ? 2 : BULK_MAX_FILES + 1,
    // The first is refused by name (textFieldError); busboy skips any past the limit unsaid.
    fields: 1,
    fieldSize: 1024,
    headerPairs: 20,
  };
}

function parserFor(options: ReceiveOptions): Busboy.Busboy {
  const refusal = refuseRequest(options);
  if (refusal) throw refusal;
  try {
    return Busboy({
      headers: { 'content-type': options.contentType },
      // What browsers send: a file name's UTF-8 bytes as they are (busboy reads Latin-1).
      defParamCharset: 'utf8',
      limits: busboyLimits(options.mode, options.maxFileBytes),
    });
  } catch {
    throw missingBoundary();
  }
}

/**
 * Why a file part cannot be taken, given the name of the request's first file part and the
 * files taken before it: a single upload takes one `upload-file`, a bulk upload up to 7 parts
 * named alike. Undefined when it can.
 */
export function refusePart(
  mode: ReceiveOptions['mode'],
  name: string | undefined,
  firstName: string | undefined,
  received: number,
): WaybillError | undefined {
  // busboy hands on a part whose Content-Disposition has no name (or an empty one) as named
  // nothing: every such part would share the "one field name" of a bulk upload.
  if (!name) {
    return badRequest(
      mode === 'single'
        ? `A file part without a name; send the file as "${SINGLE_FIELD}"`
        : 'A file part without a name; name every file part, all with one name',
    );
  }
  if (mode === 'single') {
    if (name !== SINGLE_FIELD) {
      return badRequest(`Unexpected file field "${name}"; send the file as "${SINGLE_FIELD}"`);
    }
    if (received >= 1) {
      return badRequest(`Send one file as "${SINGLE_FIELD}"; use /file/bulk-upload for several`);
    }
    return undefined;
  }
  if (name !== firstName) {
    return badRequest(`All files must share one field name; got "${firstName}" and "${name}"`);
  }
  if (received >= BULK_MAX_FILES) {
    return badRequest(`At most ${BULK_MAX_FILES} files per request; nothing was stored`);
  }
  return undefined;
}

/** The 400 of a body without file parts. */
export function noFilesError(mode: ReceiveOptions['mode']): WaybillError {
  return badRequest(
    mode === 'bulk'
      ? `No files; send 1 to ${BULK_MAX_FILES} files in parts sharing one field name`
      : `Missing the file part "${SINGLE_FIELD}"`,
  );
}

/**
 * The 400 of a text field (a part without a filename): an upload takes file parts only, as the
 * document's form says (its fields are files), and as an unknown JSON field is refused.
 */
export function textFieldError(
  mode: ReceiveOptions['mode'],
  name: string | undefined,
): WaybillError {
  if (mode === 'single' && name === SINGLE_FIELD) {
    return badRequest(`"${SINGLE_FIELD}" must be a file part, sent with a filename`);
  }
  const files =
    mode === 'single'
      ? `one file part named "${SINGLE_FIELD}"`
      : `1 to ${BULK_MAX_FILES} file parts sharing one name, each sent with a filename`;
  const field = name ? `text field "${name}"` : 'text field without a name';
  return badRequest(
    `Unexpected ${field}: an upload takes ${files}, nothing else; nothing was stored`,
  );
}

/** The type of a file from its first bytes; 400 when empty, 415 when not an allowed type. */
export function acceptHead(head: Buffer, allowed: readonly string[]): Sniffed {
  if (head.length === 0) throw badRequest('The file is empty');
  const sniffed = sniff(head);
  if (!sniffed || !allowed.includes(sniffed.mime)) {
    throw unsupportedMediaType(
      `File type not accepted${sniffed ? ` (${sniffed.mime})` : ''}; send one of ${allowed.join(', ')}`,
    );
  }
  return sniffed;
}

/**
 * One request's files under way. A failure of the request (`fail`) stops the parse, aborts
 * the uploads in flight, and deletes every object stored for it before rejecting.
 */
class Reception {
  readonly slots: Promise<FileSlot>[] = [];
  /** Why the request failed, once it has. */
  private failure: WaybillError | undefined;
  /** Keys whose upload started: all deleted if the request fails. */
  private readonly started = new Set<string>();
  private readonly gates = new Set<SniffGate>();
  private readonly allowed: string[];

  constructor(
    private readonly stream: Readable,
    private readonly busboy: Busboy.Busboy,
    private readonly options: ReceiveOptions,
    private readonly reject: (err: WaybillError) => void,
  ) {
    this.allowed = [...new Set(options.allowedTypes)];
  }

  get failed(): boolean {
    return this.failure !== undefined;
  }

  fail(err: WaybillError): void {
    if (this.failure) return;
    this.failure = err;
    this.stream.unpipe(this.busboy);
    this.stream.resume();
    this.busboy.removeAllListeners('close');
    this.busboy.destroy();
    for (const gate of this.gates) gate.destroy(err);
    void Promise.allSettled(this.slots)
      .then(() => this.options.sink.remove([...this.started]))
      .then(() => this.reject(err));
  }

  /**
   * Takes a file part: its slot settles once it is stored or refused. Files are stored one
   * after the other: the next is read once the previous is in the bucket, so that a request
   * holds one upload's part buffers at a time whatever its number of files (the memory
   * bound of docs/files.md); busboy waits meanwhile, and so does the client.
   */
  take(file: Readable, filename: string | null): void {
    const previous = this.slots.at(-1);
    const next = () => {
      if (!this.failure) return this.store(file, filename);
      file.resume();
      return { error: this.failure, filename };
    };
    this.slots.push(previous ? previous.then(next) : Promise.resolve(next()));
  }

  /** A refused file fails a single upload; in a bulk upload it is an error slot. */
  private refused(error: WaybillError, filename: string | null): FileSlot {
    if (this.options.mode === 'single') this.fail(error);
    return { error, filename };
  }

  /** Holds the file back until its first bytes name an allowed type, then uploads it. */
  private store(file: Readable, filename: string | null): Promise<FileSlot> {
    return new Promise<FileSlot>((settle) => {
      let uploading = false;
      const gate = new SniffGate((head) => {
        const sniffed = acceptHead(head, this.allowed);
        uploading = true;
        void this.upload(gate, sniffed, filename).then(settle);
      });
      this.gates.add(gate);
      gate.once('close', () => this.gates.delete(gate));
      gate.on('error', (err: WaybillError) => {
        file.unpipe(gate);
        file.resume(); // busboy waits for each file to be read before it goes on
        if (!uploading) settle(this.refused(err, filename));
      });
      const tooLarge = () => gate.destroy(fileTooLarge(this.options.maxFileBytes));
      file.on('limit', tooLarge);
      file.on('error', (err: Error) =>
        gate.destroy(badRequest(`Malformed file part: ${err.message}`)),
      );
      // busboy may have cut the file at the limit while it waited for its turn.
      if ((file as Readable & { truncated?: boolean }).truncated) tooLarge();
      else file.pipe(gate);
    });
  }

  /** Streams an accepted file to the sink; a file that grows too large is removed, refused. */
  private async upload(gate: SniffGate, sniffed: Sniffed, filename: string | null) {
    const { sink } = this.options;
    let key: string | undefined;
    try {
      // Within the try: a key that cannot be made fails the request (its slot settles, and
      // the request's other files are removed) instead of leaving the slot open for good.
      key = this.options.newKey(extensionFor(sniffed, filename ?? undefined));
      this.started.add(key);
      await sink.put(key, gate, sniffed.mime);
      return { key, mime: sniffed.mime, size: gate.bytes, filename };
    } catch (e) {
      const err = e as WaybillError;
      if (key !== undefined && err.type === 'PAYLOAD_TOO_LARGE') {
        await sink.remove([key]);
        this.started.delete(key);
        return this.refused(err, filename);
      }
      this.fail(err);
      return { error: err, filename };
    }
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
    // The body drains while the answer goes out. Nothing reads it any more, so its own end
    // (the client gone, the watch's timeout) is ours to take: an error nobody listens for
    // would stop the process.
    stream.on('error', () => undefined);
    stream.resume();
    return Promise.reject(err);
  }

  return new Promise<FileSlot[]>((resolve, reject) => {
    const reception = new Reception(stream, busboy, options, reject);
    let firstName: string | undefined;

    busboy.on('file', (name, file, info) => {
      // busboy destroys an unfinished file stream with an error when parsing stops.
      file.on('error', () => undefined);
      if (reception.failed) {
        file.resume();
        return;
      }
      firstName ??= name;
      const refusal = refusePart(options.mode, name, firstName, reception.slots.length);
      if (refusal) {
        file.resume();
        reception.fail(refusal);
        return;
      }
      reception.take(file, cleanFilename(info.filename));
    });
    busboy.on('field', (name) => reception.fail(textFieldError(options.mode, name)));
    busboy.on('error', (err: Error) =>
      reception.fail(badRequest(`Malformed multipart body: ${err.message}`)),
    );
    // Our own errors (the body went quiet: 408) say what happened; anything else is a cut.
    stream.on('error', (err: unknown) =>
      reception.fail(
        isWaybillError(err) ? err : badRequest('The upload was interrupted before it ended'),
      ),
    );
    busboy.on('close', () => {
      void Promise.all(reception.slots).then((results) => {
        if (reception.failed) return;
        if (results.length === 0) reception.fail(noFilesError(options.mode));
        else resolve(results);
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
