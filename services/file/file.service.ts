import type { Readable } from 'node:stream';
import type { ServiceBroker } from 'moleculer';
import type { Config } from '../../libs/config';
import { badRequest, serviceBusy } from '../../libs/errors';
import { registerHealthCheck, unregisterHealthCheck } from '../../libs/health';
import {
  action,
  requireUser,
  type ServiceDefinition,
  type WaybillContext,
} from '../../libs/service';
import { StreamFlows, receiveFlow } from '../../libs/stream-flow';
import { contentDisposition } from './content-disposition';
import {
  UPLOAD_RETRY_AFTER_SECONDS,
  fileNameOf,
  hostedUrl,
  newFileKey,
  parseHostedUrl,
} from '../../libs/contracts/file';
import { watchBody } from './body-watch';
import {
  BULK_MAX_FILES,
  SINGLE_FIELD,
  errorSlot,
  isFailed,
  receiveFiles,
  type ReceiveOptions,
} from './multipart';
import {
  bulkUploadForm,
  bulkUploadView,
  downloadParams,
  noParams,
  singleUploadForm,
  singleUploadView,
} from './schemas';
import { FileStorage } from './store';
import { meteredUploadSlots, type UploadSlots } from './upload-slots';

export function createFileService(config: Config): ServiceDefinition {
  let storage: FileStorage;
  let broker: ServiceBroker;
  let uploads: UploadSlots;
  const flows = new StreamFlows('file');
  const { maxBytes, allowedTypes } = config.files;
  const maxSize = `${Math.round((maxBytes / 1024 / 1024) * 10) / 10} MB`;

  async function receive(ctx: WaybillContext, mode: ReceiveOptions['mode']) {
    const userId = requireUser(ctx);
    if (!ctx.stream) throw badRequest('Send files as multipart/form-data');
    const stream = ctx.stream as Readable;
    const slot = uploads.take();
    if (!slot) {
      // Read and dropped without credit: a gateway on another node sends no more than its
      // window, then closes the flow once this answer reaches it.
      stream.resume();
      throw serviceBusy(
        `The file service is busy with other uploads; retry in ${UPLOAD_RETRY_AFTER_SECONDS} seconds`,
        UPLOAD_RETRY_AFTER_SECONDS,
      );
    }
    try {
      const body = receiveFlow(stream, ctx.meta.$flow, (a, p, o) => broker.call(a, p, o));
      return await receiveFiles(
        watchBody(body, { idleMs: config.files.idleTimeoutMs, deadlineMs: config.files.timeoutMs }),
        {
          mode,
          contentType: ctx.meta.contentType,
          contentLength: ctx.meta.contentLength,
          maxFileBytes: maxBytes,
          allowedTypes,
          newKey: (ext) => newFileKey(userId, ext),
          sink: storage,
        },
      );
    } finally {
      slot.release();
    }
  }

  const uploadErrors = {
    400: 'Not multipart/form-data, missing or misnamed file part, empty file, too many files',
    408: `The body sent nothing for ${config.files.idleTimeoutMs / 1000} s (FILE_IDLE_TIMEOUT_MS), or did not arrive within FILE_TIMEOUT_MS; nothing was kept`,
    413: `A file is larger than ${maxSize} (FILE_MAX_BYTES)`,
    429: `API quota exceeded, or this key already has ${config.files.maxUploadsPerKey} uploads in progress (FILE_MAX_UPLOADS_PER_KEY); see \`Retry-After\``,
    503: 'The file service is busy with other uploads (see `Retry-After`), or file storage is unavailable; retry',
  };

  return {
    name: 'file',
    actions: {
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
        async handler(ctx) {
          const [slot] = await receive(ctx, 'single');
          if (isFailed(slot)) throw slot.error;
          return { url: hostedUrl(slot.key, config.cdnBaseUrl) };
        },
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
        async handler(ctx) {
          const slots = await receive(ctx, 'bulk');
          return {
            urls: slots.map((slot) =>
              isFailed(slot) ? errorSlot(slot) : hostedUrl(slot.key, config.cdnBaseUrl),
            ),
          };
        },
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
          errors: { 400: 'Not a hosted file URL', 404: 'No such file' },
        },
        params: downloadParams(config.cdnBaseUrl),
        async handler(ctx) {
          const parsed = parseHostedUrl(ctx.params.url, config.cdnBaseUrl);
          if (!parsed.ok) {
            throw badRequest(`Not a file hosted here: ${parsed.reason}`, [
              { field: 'url', message: parsed.reason },
            ]);
          }
          const object = await storage.get(parsed.key);
          ctx.meta.$responseHeaders = {
            'Content-Type': 'application/octet-stream',
            'Content-Disposition': contentDisposition(fileNameOf(parsed.key)),
            'X-Content-Type-Options': 'nosniff',
            ...(object.contentLength !== undefined
              ? { 'Content-Length': String(object.contentLength) }
              : {}),
          };
          if (ctx.nodeID === broker.nodeID) return object.body;
          // To another node: gated, so a slow client does not pile the file up there.
          const flow = flows.open(object.body, broker.nodeID, config.files.timeoutMs);
          flow.stream.once('close', () => {
            if (!object.body.readableEnded) object.body.destroy();
          });
          ctx.meta.$responseFlow = flow.meta;
          return flow.stream;
        },
      }),

      /** Credit for downloads streamed to a gateway on another node (libs/stream-flow). */
      streamCredit: flows.action(),
    },
    created() {
      broker = this.broker;
      storage = new FileStorage(config.s3, (operation, err) => {
        const e = err as { name?: string; message?: string };
        this.logger.warn('S3 request failed', { operation, error: e?.name, message: e?.message });
      });
      registerHealthCheck(this.broker, 's3', () => storage.ready());
      uploads = meteredUploadSlots(this.broker, config.files.maxUploads);
    },
    stopped() {
      unregisterHealthCheck(this.broker, 's3');
      storage.destroy();
    },
  };
}
