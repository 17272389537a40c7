import { Errors } from 'moleculer';
import { clipForJson } from './text';

/**
 * Error types of the platform and their HTTP statuses. Errors cross the transporter as
 * plain objects, so everything downstream decides by `type`/`code`, never `instanceof`.
 */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  // Not `REQUEST_TIMEOUT`: that is moleculer's own type for a call that timed out (504).
  BODY_TIMEOUT: 408,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UNPROCESSABLE: 422,
  QUOTA_EXCEEDED: 429,
  TOO_MANY_REQUESTS: 429,
  // Not `BAD_GATEWAY`: that is moleculer's own type for a broker cut off from NATS (503).
  UPSTREAM_FAILED: 502,
  SERVICE_UNAVAILABLE: 503,
  UPSTREAM_TIMEOUT: 504,
} as const;

export type ErrorType = keyof typeof ERROR_STATUS;

export interface FieldError {
  field: string;
  message: string;
}

export interface WaybillErrorData {
  errors?: FieldError[];
  /** Seconds the client should wait before retrying: the answer's `Retry-After`. */
  retryAfter?: number;
}

export class WaybillError extends Errors.MoleculerError {
  constructor(type: ErrorType, message: string, data?: WaybillErrorData) {
    super(message, ERROR_STATUS[type], type, data);
    this.name = 'WaybillError';
  }
}

/** An error of ours, here or from another node (a plain object there): its type is known. */
export function isWaybillError(err: unknown): err is WaybillError {
  const type = (err as { type?: unknown } | null | undefined)?.type;
  return typeof type === 'string' && Object.hasOwn(ERROR_STATUS, type);
}

/**
 * Problems one error lists, and the bytes of each field's name and message: a body of
 * thousands of unknown keys, or one key of 200 KB, must not make an answer of megabytes (a
 * reply over NATS's 1 MB never arrives, and its caller waits out its timeout for a 504).
 */
export const MAX_LISTED_PROBLEMS = 20;
const MAX_PROBLEM_TEXT_BYTES = 300;

/** The first `MAX_LISTED_PROBLEMS` problems, each clipped: what any error carries of them. */
const listedProblems = (problems: readonly FieldError[]): FieldError[] =>
  problems.slice(0, MAX_LISTED_PROBLEMS).map((p) => ({
    field: clipForJson(p.field, MAX_PROBLEM_TEXT_BYTES),
    message: clipForJson(p.message, MAX_PROBLEM_TEXT_BYTES),
  }));

/**
 * A 400 whose `message` is the spec's own ("Invalid packages selection"): its problems are
 * listed as `validationError` lists them, the message left as it is.
 */
export const badRequest = (message: string, errors?: FieldError[]) =>
  new WaybillError('BAD_REQUEST', message, errors ? { errors: listedProblems(errors) } : undefined);

/**
 * The 400 of invalid input: its first problems (each clipped), and `summary`, or the listed
 * problems' messages joined, saying how many more there were.
 */
export function validationError(problems: FieldError[], summary?: string): WaybillError {
  const listed = listedProblems(problems);
  const more = problems.length - listed.length;
  const message =
    summary !== undefined
      ? clipForJson(summary, MAX_PROBLEM_TEXT_BYTES)
      : listed.length > 0
        ? `Validation failed: ${listed.map((p) => p.message).join('; ')}`
        : 'Validation failed';
  return new WaybillError(
    'VALIDATION_ERROR',
    more > 0 ? `${message}; and ${more} more problems: fix these and send it again` : message,
    { errors: listed },
  );
}

export const unauthorized = (message: string) => new WaybillError('UNAUTHORIZED', message);
export const forbidden = (message: string) => new WaybillError('FORBIDDEN', message);
/** A 404 whose `message` is the spec's own: what to do about it, when there is more to say, listed. */
export const notFound = (message: string, errors?: FieldError[]) =>
  new WaybillError('NOT_FOUND', message, errors ? { errors: listedProblems(errors) } : undefined);
export const methodNotAllowed = (message: string) =>
  new WaybillError('METHOD_NOT_ALLOWED', message);
export const conflict = (message: string, data?: WaybillErrorData) =>
  new WaybillError('CONFLICT', message, data);
export const unprocessable = (message: string) => new WaybillError('UNPROCESSABLE', message);
export const payloadTooLarge = (message: string) => new WaybillError('PAYLOAD_TOO_LARGE', message);
export const unsupportedMediaType = (message: string) =>
  new WaybillError('UNSUPPORTED_MEDIA_TYPE', message);
export const quotaExceeded = () => new WaybillError('QUOTA_EXCEEDED', 'API quota exceeded');
export const serviceUnavailable = (message: string) =>
  new WaybillError('SERVICE_UNAVAILABLE', message);
/** A refusal for load: nothing is wrong, the client retries after `retryAfter` seconds. */
export const serviceBusy = (message: string, retryAfter: number) =>
  new WaybillError('SERVICE_UNAVAILABLE', message, { retryAfter });
export const tooManyRequests = (message: string, retryAfter: number) =>
  new WaybillError('TOO_MANY_REQUESTS', message, { retryAfter });
export const bodyTimeout = (message: string) => new WaybillError('BODY_TIMEOUT', message);
/** A provider outside the platform (a payment provider) answered with an error or nonsense. */
export const upstreamFailed = (message: string) => new WaybillError('UPSTREAM_FAILED', message);
/** A provider outside the platform did not answer in time. */
export const upstreamTimeout = (message: string) => new WaybillError('UPSTREAM_TIMEOUT', message);

export interface HttpError {
  status: number;
  message: string;
  errors?: FieldError[];
  /** Seconds for `Retry-After`, when the error says when to come back. */
  retryAfter?: number;
  /** True when the cause is ours, not the caller's: log it with its stack. */
  internal: boolean;
}

interface ErrorLike {
  message?: unknown;
  code?: unknown;
  type?: unknown;
  status?: unknown;
  statusCode?: unknown;
  data?: unknown;
}

const UNAVAILABLE =
  'The service that handles this request is temporarily unavailable; retry in a few seconds';

/** The type of a body that does not decompress as its Content-Encoding says (the gateway's). */
export const UNDECODABLE_BODY = 'entity.decode.failed';

/** Errors raised by moleculer, moleculer-web and body-parser, by their `type`. */
const FRAMEWORK_ERRORS: Record<string, { status: number; message?: string }> = {
  SERVICE_NOT_FOUND: { status: 503, message: UNAVAILABLE },
  SERVICE_NOT_AVAILABLE: { status: 503, message: UNAVAILABLE },
  REQUEST_REJECTED: { status: 503, message: UNAVAILABLE },
  QUEUE_FULL: { status: 503, message: UNAVAILABLE },
  // moleculer's BrokerDisconnectedError: this node's NATS connection is down.
  BAD_GATEWAY: { status: 503, message: UNAVAILABLE },
  REQUEST_SKIPPED: { status: 504, message: 'The request timed out; retry it' },
  REQUEST_TIMEOUT: { status: 504, message: 'The request timed out; retry it' },
  'entity.parse.failed': {
    status: 400,
    message: 'Malformed JSON body; send a valid JSON document',
  },
  'entity.too.large': { status: 413, message: 'Request body is too large' },
  'encoding.unsupported': { status: 415, message: 'Unsupported content encoding' },
  [UNDECODABLE_BODY]: {
    status: 400,
    message:
      'The body could not be decompressed; send it as its Content-Encoding says (gzip, deflate or br), or without one',
  },
  'charset.unsupported': { status: 415, message: 'Unsupported charset; send UTF-8 JSON' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415 },
  INVALID_REQUEST_TYPE: { status: 415, message: 'Unsupported content type' },
};

function retryAfterOf(data: unknown): number | undefined {
  const seconds = (data as { retryAfter?: unknown } | undefined)?.retryAfter;
  return typeof seconds === 'number' && Number.isSafeInteger(seconds) && seconds > 0
    ? seconds
    : undefined;
}

function asFieldErrors(data: unknown): FieldError[] | undefined {
  const errors = (data as { errors?: unknown } | undefined)?.errors;
  if (!Array.isArray(errors)) return undefined;
  // Listed as the errors built here list them, whatever built this one (a node of an older
  // version, an error made by hand): the envelope never holds more.
  return listedProblems(
    errors.filter(
      (e): e is FieldError => typeof e?.field === 'string' && typeof e?.message === 'string',
    ),
  );
}

/** The 413 of a body that grew past what one message between services carries. */
export const BODY_TOO_LARGE_WHEN_READ =
  'Request body is too large once read (numbers such as 1e20 are written out in full between our services); send fewer or shorter values';

/** Maps any thrown value to the status and message a client sees. Never leaks internals. */
export function toHttpError(err: unknown): HttpError {
  const e = (err ?? {}) as ErrorLike;
  const type = typeof e.type === 'string' ? e.type : undefined;
  const message = typeof e.message === 'string' ? e.message : '';

  if (type && Object.hasOwn(ERROR_STATUS, type)) {
    const status = ERROR_STATUS[type as ErrorType];
    const retryAfter = retryAfterOf(e.data);
    // A refusal that says when to come back is load shedding, not a failure to look into.
    const internal = status >= 500 && retryAfter === undefined;
    return {
      status,
      message,
      errors: asFieldErrors(e.data),
      ...(retryAfter !== undefined ? { retryAfter } : {}),
      internal,
    };
  }
  // moleculer-web's own "no node runs this action yet" error has no type.
  if (!type && e.code === 503 && (err as Error).name === 'ServiceUnavailableError') {
    return { status: 503, message: UNAVAILABLE, internal: true };
  }
  if (type && Object.hasOwn(FRAMEWORK_ERRORS, type)) {
    const known = FRAMEWORK_ERRORS[type];
    return {
      status: known.status,
      message: known.message ?? message,
      internal: known.status >= 500,
    };
  }
  const status = [e.status, e.statusCode, e.code].find(
    (c): c is number => typeof c === 'number' && c >= 400 && c < 500,
  );
  if (status !== undefined && message) {
    return { status, message, internal: false };
  }
  return {
    status: 500,
    message: 'Internal server error; the failure was logged, retry later',
    internal: true,
  };
}
