import { finished, type Readable } from 'node:stream';
import type { ServiceBroker } from 'moleculer';
import type { Config } from '../../libs/config';
import { badRequest, serviceBusy, serviceUnavailable, upstreamTimeout } from '../../libs/errors';
import { registerHealthCheck, unregisterHealthCheck } from '../../libs/health';
import { connectRedisWithin, createRedis, redisReady, REDIS_START_WAIT_MS } from '../../libs/redis';
import { Periodic } from '../../libs/periodic';
import {
  action,
  requireUser,
  type ServiceDefinition,
  type WaybillContext,
} from '../../libs/service';
import {
  bodyGivenUp,
  DOWNLOAD_TICKET_META,
  OPEN_UPLOAD_ACTION,
  TransferDesk,
  workOnBody,
} from '../../libs/transfer';
import { contentDisposition } from './content-disposition';
import {
  FILE_RETRY_AFTER_SECONDS,
  allowanceShareOf,
  fileNameOf,
  hostedUrl,
  newFileKey,
  parseHostedUrl,
  type AllowanceShare,
} from '../../libs/contracts/file';
import { watchBody } from './body-watch';
import { Leftovers } from './leftovers';
import {
  BULK_MAX_FILES,
  bodyBytesLimit,
  bodyTooLarge,
  SINGLE_FIELD,
  errorSlot,
  isFailed,
  receiveFiles,
  refuseRequest,
  type FileSlot,
  type ReceiveOptions,
} from './multipart';
import {
  bulkUploadForm,
  bulkUploadView,
  downloadParams,
  noParams,
  openUploadParams,
  singleUploadForm,
  UPLOAD_ACTIONS,
  singleUploadView,
} from './schemas';
import { FileStorage } from './store';
import { createFileAdminActions } from './file-admin';
import { createStoredFileActions, UserFiles } from './stored-files';
import { readableBytes } from './sizes';
import { meteredSlots, type Slot, type Slots } from './slots';
import { UploadBudget, type Spent } from './upload-budget';

type UploadMode = ReceiveOptions['mode'];

/** What the request's headers said of its body (the gateway copies them into `ctx.meta`). */
type BodyMeta = Pick<ReceiveOptions, 'contentType' | 'contentLength'>;

const bodyMeta = (ctx: WaybillContext): BodyMeta => ({
  contentType: ctx.meta.contentType,
  contentLength: ctx.meta.contentLength,
});

export function createFileService(config: Config): ServiceDefinition {
  let storage: FileStorage;
  let leftovers: Leftovers;
  let broker: ServiceBroker;
  let uploads: Slots;
  let downloads: Slots;
  let desk: TransferDesk | undefined;
  let staleUploads: Periodic | undefined;
  const { maxBytes, allowedTypes, maxUploadBytesPerUserPerDay } = config.files;
  const maxSize = readableBytes(maxBytes);
  // Only with a limit: a platform without one needs no Redis here.
  const redis =
    maxUploadBytesPerUserPerDay > 0
      ? createRedis(
          config.redisUrl,
          `${config.namespace}-file`,
          (err) =>
            broker?.logger.warn('Redis unreachable; uploads answer 503 until it is back', {
              err: err.message,
            }),
          { commandTimeoutMs: config.redisCommandTimeoutMs },
        )
      : undefined;
  const files = new UserFiles(
    () => storage,
    config.cdnBaseUrl,
    (message, fields) => broker.logger.info(message, fields),
  );
  const budget = redis
    ? new UploadBudget(redis, `${config.namespace}:upload-bytes:`, maxUploadBytesPerUserPerDay)
    : undefined;

  /**
   * A slot for one more transfer of the share's, or the 503 that tells the client when to come
   * back: all taken, or the account (or its publishable keys) holds its part of them.
   */
  function takeSlot(share: AllowanceShare, slots: Slots = uploads, what = 'uploads'): Slot {
    const slot = slots.take(share);
    if (typeof slot === 'object') return slot;
    const retry = `retry in ${FILE_RETRY_AFTER_SECONDS} seconds`;
    const wait = `wait for one to finish, or ${retry}`;
    const ofProcess = `of this file-service process's ${slots.max}`;
    throw serviceBusy(
      slot === 'full'
        ? `The file service is busy with other ${what}; ${retry}`
        : slot === 'owner-full'
          ? `This account's ${what} hold ${slots.ownerMax} ${ofProcess}, as many as one account may, so that others find room; ${wait}`
          : `This account's publishable keys' ${what} hold ${slots.publishableMax} ${ofProcess}, as many as they may (half the account's ${slots.ownerMax}), so that its servers find room; ${wait}`,
      FILE_RETRY_AFTER_SECONDS,
    );
  }

  /**
   * The stored object, on a download slot (and an S3 connection) given back when its stream
   * ends, fails or is destroyed: at FILE_TIMEOUT_MS however slowly the client reads (here, and
   * by a gateway on another node), or by the transfer desk when no gateway pulls it.
   */
  async function download(key: string, share: AllowanceShare) {
    const slot = takeSlot(share, downloads, 'downloads');
    try {
      const object = await storage.get(key);
      // Cut at FILE_TIMEOUT_MS here too: a gateway in this process pipes the body straight to
      // its client, and one that reads a trickle keeps S3 busy enough never to time out.
      // Typed: the gateway records the cut as the timeout it is (504), not as a fault (500).
      const deadline = setTimeout(
        () =>
          object.body.destroy(
            upstreamTimeout('The download took longer than FILE_TIMEOUT_MS; it was cut'),
          ),
        config.files.timeoutMs,
      );
      finished(object.body, () => {
        clearTimeout(deadline);
        slot.release();
      });
      return object;
    } catch (err) {
      slot.release();
      throw err;
    }
  }

  /** Receives one request's files into the bucket; the slot is given back at the end. */
  async function receive(
    request: { mode: UploadMode; share: AllowanceShare; meta: BodyMeta; body: Readable },
    slot: Slot,
  ) {
    try {
      const slots = await receiveFiles(
        watchBody(request.body, {
          idleMs: config.files.idleTimeoutMs,
          deadlineMs: config.files.timeoutMs,
          minBytesPerWindow: Math.ceil(
            (config.files.minUploadBytesPerSecond * config.files.idleTimeoutMs) / 1000,
          ),
          maxBytes: {
            bytes: bodyBytesLimit(request.mode, maxBytes),
            tooLarge: () => bodyTooLarge(request.mode, maxBytes),
          },
        }),
        {
          mode: request.mode,
          contentType: request.meta.contentType,
          contentLength: request.meta.contentLength,
          maxFileBytes: maxBytes,
          allowedTypes,
          newKey: (ext) => newFileKey(request.share.userId, ext),
          sink: {
            put: (key, body, contentType) => storage.put(key, body, contentType),
            remove: (keys) => leftovers.remove(keys),
          },
        },
      );
      return slots;
    } finally {
      slot.release();
    }
  }

  /**
   * Counts what a request stored toward its user's day. The files are stored: a count that
   * fails (Redis gone meanwhile) is logged, not answered, and that much goes uncounted.
   */
  async function spend(share: AllowanceShare, slots: FileSlot[]): Promise<Spent | null> {
    const bytes = slots.reduce((sum, s) => sum + (isFailed(s) ? 0 : s.size), 0);
    const spent = await budget?.spend(share, bytes).catch((err: Error) => {
      broker.logger.warn('stored bytes not counted toward the user’s day', {
        userId: share.userId,
        publishable: share.publishable,
        bytes,
        err: err.message,
      });
      return null;
    });
    return spent ?? null;
  }

  /**
   * Deletes what an upload stored once its caller stopped waiting (its FILE_TIMEOUT_MS, its
   * client gone, or it died): nobody will ever hold these URLs, and, deleted (now or by a
   * sweep), they count nothing toward the user's day.
   */
  function forgetUnanswered(share: AllowanceShare, slots: FileSlot[], spent: Spent | null): void {
    const keys = slots.flatMap((s) => (isFailed(s) ? [] : [s.key]));
    broker.logger.warn('upload unanswered (the gateway left); its files deleted', { keys });
    void leftovers.remove(keys);
    if (!spent) return;
    const { bytes } = spent;
    void budget?.giveBack(spent).catch((err: Error) =>
      broker.logger.warn('deleted bytes still counted toward the user’s day', {
        userId: share.userId,
        bytes,
        err: err.message,
      }),
    );
  }

  /** What each upload action answers for the slots of its request. */
  const answers: Record<UploadMode, (slots: FileSlot[]) => unknown> = {
    single: ([slot]) => {
      if (isFailed(slot)) throw slot.error;
      return { url: hostedUrl(slot.key, config.cdnBaseUrl) };
    },
    bulk: (slots) => ({
      urls: slots.map((slot) =>
        isFailed(slot) ? errorSlot(slot) : hostedUrl(slot.key, config.cdnBaseUrl),
      ),
    }),
  };

  const UNANSWERED_UPLOAD = 'The gateway stopped waiting for this upload; send it again';

  /**
   * An upload action called in this process (the gateway beside us) with the request as
   * `ctx.stream`. A gateway on another node opens a transfer instead (`openUpload`): a body
   * over NATS would have no backpressure, so none is taken from there.
   */
  async function uploadHere(ctx: WaybillContext, mode: UploadMode) {
    const share = allowanceShareOf(requireUser(ctx), ctx.meta);
    const stream = ctx.stream as Readable | undefined;
    if (!stream) throw badRequest('Send files as multipart/form-data');
    if (ctx.nodeID !== broker.nodeID) {
      stream.resume();
      // Only a gateway of an older version sends one: during a rolling update, retried.
      throw serviceUnavailable('The file service is being updated; retry in a few seconds');
    }
    const meta = bodyMeta(ctx);
    // From here the gateway's lease waits for this work, its wait on the day's bytes included.
    return workOnBody(stream, async () => {
      let slot: Slot;
      try {
        // A request that can never be taken is told so first, not asked to come back later.
        const refusal = refuseRequest({ mode, ...meta, maxFileBytes: maxBytes });
        if (refusal) throw refusal;
        // The day's bytes spent: 429 before a slot is taken or a byte read.
        await budget?.check(share);
        // Given up while that was asked (its timeout, its client gone): no slot is taken for it.
        if (bodyGivenUp(stream)) throw upstreamTimeout(UNANSWERED_UPLOAD);
        slot = takeSlot(share);
      } catch (err) {
        stream.resume(); // read and dropped, so that the client reads the answer
        throw err;
      }
      const slots = await receive({ mode, share, meta, body: stream }, slot);
      const spent = await spend(share, slots);
      // Read last, nothing awaited after it: the gateway's timeout cannot fall in between.
      if (bodyGivenUp(stream)) forgetUnanswered(share, slots, spent);
      return answers[mode](slots);
    });
  }

  function openDesk(): TransferDesk {
    if (!desk) throw serviceUnavailable('The file service has no transfer port; retry');
    return desk;
  }

  const uploadErrors = {
    400: 'Not multipart/form-data, missing or misnamed file part, empty file, too many files',
    408: `The body sent nothing for ${config.files.idleTimeoutMs / 1000} s (FILE_IDLE_TIMEOUT_MS), less than FILE_MIN_UPLOAD_BYTES_PER_SECOND over that time, or did not arrive within FILE_TIMEOUT_MS; nothing was kept`,
    413: `A file is larger than ${maxSize} (FILE_MAX_BYTES), or the body larger than all the files it may carry could be`,
    429: `API quota exceeded, this key already has ${config.files.maxUploadsPerKey} uploads in progress (FILE_MAX_UPLOADS_PER_KEY) or its account ${config.files.maxUploadsPerUser} (FILE_MAX_UPLOADS_PER_USER)${maxUploadBytesPerUserPerDay > 0 ? `, or the account stored its ${readableBytes(maxUploadBytesPerUserPerDay)} of files for the day (FILE_MAX_UPLOAD_BYTES_PER_USER_PER_DAY)` : ''}; see \`Retry-After\``,
    503: 'The file service is busy with other uploads, or the account holds half of its uploads, its publishable keys half of that (see `Retry-After`), could not be reached, or file storage (or the count of stored bytes) is unavailable; retry',
  };

  return {
    name: 'file',
    actions: {
      ...createStoredFileActions(files),
      ...createFileAdminActions(files),
      singleUpload: action({
        // The body is a stream, read once.
        retry: 'never',
        http: {
          group: 'file',
          method: 'POST',
          path: '/single-upload',
          body: 'stream',
          message: 'File uploaded',
          summary: 'Upload one file',
          description:
            `multipart/form-data with one file part named \`${SINGLE_FIELD}\`. The type is read ` +
            `from the bytes, not from the client; accepted: ${allowedTypes.join(', ')}, up to ` +
            `${maxSize}. Returns the hosted URL.`,
          multipart: singleUploadForm,
          response: singleUploadView,
          errors: { ...uploadErrors, 415: 'The file type is not accepted' },
        },
        params: noParams,
        handler: (ctx) => uploadHere(ctx, 'single'),
      }),

      bulkUpload: action({
        // The body is a stream, read once.
        retry: 'never',
        http: {
          group: 'file',
          method: 'POST',
          path: '/bulk-upload',
          body: 'stream',
          message: 'Files uploaded',
          summary: `Upload up to ${BULK_MAX_FILES} files`,
          description:
            `multipart/form-data; every file part has the same field name, at most ` +
            `${BULK_MAX_FILES} files (an 8th fails the whole request and nothing is kept). ` +
            '`urls` follows the order sent; a refused file (too large, type not accepted, ' +
            'empty) has `{error: {statusCode, message, filename}}` in its place.',
          multipart: bulkUploadForm,
          response: bulkUploadView,
          errors: uploadErrors,
        },
        params: noParams,
        handler: (ctx) => uploadHere(ctx, 'bulk'),
      }),

      download: action({
        retry: 'safe',
        http: {
          group: 'file',
          method: 'POST',
          path: '/download',
          binary: true,
          message: 'File',
          summary: 'Download a hosted file',
          description:
            'Answers the bytes as `application/octet-stream` with `Content-Disposition: ' +
            'attachment`. Only URLs of this platform (`CDN_BASE_URL`) are accepted; the URL is ' +
            'mapped to a stored object, never fetched.',
          errors: {
            400: 'Not a hosted file URL',
            404: 'No such file',
            429: `API quota exceeded, or this key already has ${config.files.maxDownloadsPerKey} downloads in progress (FILE_MAX_DOWNLOADS_PER_KEY) or its account ${config.files.maxDownloadsPerUser} (FILE_MAX_DOWNLOADS_PER_USER); see \`Retry-After\``,
            502: 'File storage failed before the first byte was sent; retry',
            503: 'The file service is busy with other downloads, or the account holds half of its downloads, its publishable keys half of that (see `Retry-After`), could not be reached, or file storage is unavailable; retry',
          },
        },
        params: downloadParams(config.cdnBaseUrl),
        async handler(ctx) {
          const parsed = parseHostedUrl(ctx.params.url, config.cdnBaseUrl);
          if (!parsed.ok) {
            throw badRequest(`Not a file hosted here: ${parsed.reason}`, [
              { field: 'url', message: parsed.reason },
            ]);
          }
          const object = await download(parsed.key, allowanceShareOf(requireUser(ctx), ctx.meta));
          ctx.meta.$responseHeaders = {
            'Content-Type': 'application/octet-stream',
            'Content-Disposition': contentDisposition(fileNameOf(parsed.key)),
            'X-Content-Type-Options': 'nosniff',
            ...(object.contentLength !== undefined
              ? { 'Content-Length': String(object.contentLength) }
              : {}),
          };
          if (ctx.nodeID === broker.nodeID) return object.body;
          // To another node: the bytes go over the transfer port, pulled with this ticket.
          try {
            ctx.meta[DOWNLOAD_TICKET_META] = openDesk().offer(object.body, object.contentLength);
          } catch (err) {
            // No desk to pull it from (the service stopping): the object's stream and its
            // download slot are let go now, not at the download's deadline.
            object.body.destroy();
            throw err;
          }
          return null;
        },
      }),

      [OPEN_UPLOAD_ACTION]: action({
        // Takes a slot until its ticket is used or expires: a repeat would take another.
        retry: 'never',
        visibility: 'public',
        params: openUploadParams,
        async handler(ctx) {
          const share = allowanceShareOf(requireUser(ctx), ctx.meta);
          const mode = UPLOAD_ACTIONS[ctx.params.action];
          const meta = bodyMeta(ctx);
          // Refused before a byte is sent: not multipart, or a body larger than its files could be.
          const refusal = refuseRequest({ mode, ...meta, maxFileBytes: maxBytes });
          if (refusal) throw refusal;
          await budget?.check(share);
          const slot = takeSlot(share);
          let received: FileSlot[] = [];
          let spent: Spent | null = null;
          try {
            return openDesk().expectBody(
              async (body) => {
                received = await receive({ mode, share, meta, body }, slot);
                spent = await spend(share, received);
                return answers[mode](received);
              },
              () => slot.release(),
              () => forgetUnanswered(share, received, spent),
            );
          } catch (err) {
            slot.release();
            throw err;
          }
        },
      }),
    },
    created() {
      broker = this.broker;
      storage = new FileStorage(config.s3, config.files.maxDownloads, (operation, err) => {
        const e = err as { name?: string; message?: string };
        this.logger.warn('S3 request failed', { operation, error: e?.name, message: e?.message });
      });
      leftovers = new Leftovers(storage, (keys) =>
        this.logger.error(
          'stored files of failed uploads not deleted: nobody was given their URLs; delete these objects from the bucket',
          { keys },
        ),
      );
      registerHealthCheck(this.broker, 's3', () => storage.ready());
      uploads = meteredSlots(this.broker, config.files.maxUploads, 'uploads');
      downloads = meteredSlots(this.broker, config.files.maxDownloads, 'downloads');
    },
    async started() {
      if (redis) {
        // Reported, not required: downloads go on without Redis, uploads answer 503.
        registerHealthCheck(this.broker, 'file-redis', () => redisReady(redis), {
          required: false,
        });
        // Waited for a moment, never failing: a new replica takes uploads with its count
        // ready, yet starts without Redis (its uploads answer 503 until it is back).
        await connectRedisWithin(redis, REDIS_START_WAIT_MS);
      }
      const { staleUploadMs, uploadSweepIntervalMs } = config.files;
      staleUploads = new Periodic(
        uploadSweepIntervalMs,
        async () => {
          // First: it never throws, and the listing below needs a permission it does not.
          const deleted = await leftovers.sweep(() => staleUploads?.stopping === true);
          if (deleted > 0) this.logger.info('files of failed uploads deleted at last', { deleted });
          const aborted = await storage.abortUploadsBegunBefore(
            new Date(Date.now() - staleUploadMs),
          );
          if (aborted > 0) this.logger.info('stale multipart uploads aborted', { aborted });
        },
        (err) =>
          this.logger.warn(
            'stale multipart uploads not looked for; the next sweep tries again (the credentials need s3:ListBucketMultipartUploads)',
            { err: (err as Error).message },
          ),
      );
      if (config.background) staleUploads.start();
      // Only gateways on other nodes transfer; in one process there are none.
      if (!this.broker.transit) return;
      desk = new TransferDesk({
        host: config.host,
        port: config.files.transferPort,
        advertisedHost: config.files.transferHost,
        fallbackHost: this.broker.getLocalNodeInfo().ipList[0] ?? '127.0.0.1',
      });
      await desk.listen();
    },
    async stopped() {
      unregisterHealthCheck(this.broker, 's3');
      unregisterHealthCheck(this.broker, 'file-redis');
      // First: a sweep under way stops at its next batch, and uploads the desk's close cuts
      // log what they cannot delete.
      leftovers?.abandon();
      await staleUploads?.stop();
      // Transfers under way are no calls moleculer's stop waits for, and calls it waited for
      // may have handed out tickets: those transfers finish, within the stop's time, before
      // the desk's close would cut them.
      await desk?.idle();
      await desk?.close();
      storage.destroy();
      // Last: uploads the desk finished count their bytes.
      redis?.disconnect();
    },
  };
}
