import Joi from '../../libs/joi';
import { FILE_NAME_PATTERN, MAX_URL_LENGTH, hostedUrlPattern } from '../../libs/contracts/file';
import { documented, fromUrl, uuid, view } from '../../libs/schemas';
import { BULK_MAX_FILES, SINGLE_FIELD } from './multipart';

/** Params and answers of the file actions; the answers are what /openapi.json documents. */

const errorSlot = view('RefusedFile', {
  error: Joi.object({
    statusCode: Joi.number().integer().valid(400, 413, 415),
    message: Joi.string(),
    filename: Joi.string().allow(null),
  }),
}).description('A file that was refused; the other files are stored');

export const singleUploadView = view('UploadedFile', { url: Joi.string().uri() });

export const bulkUploadView = view('UploadedFiles', {
  urls: Joi.array().items(Joi.string().uri(), errorSlot),
});

/** The forms of the uploads, for the document (the bytes decide what is accepted). */
export const singleUploadForm = {
  type: 'object',
  properties: { [SINGLE_FIELD]: { type: 'string', format: 'binary' } },
  required: [SINGLE_FIELD],
  // A text field or another file is refused (services/file/multipart).
  additionalProperties: false,
};

/**
 * Any one name, which the document cannot name. Not `files` by example beside it: a negative
 * case then sends an empty array under another name, which multipart cannot carry, and the
 * valid `files` alone is taken (schemathesis failed it as a schema-violating request accepted).
 */
export const bulkUploadForm = {
  type: 'object',
  description: `One field, any name, with 1 to ${BULK_MAX_FILES} files, each sent with a filename; a text field is refused`,
  minProperties: 1,
  maxProperties: 1,
  additionalProperties: {
    type: 'array',
    items: { type: 'string', format: 'binary' },
    minItems: 1,
    maxItems: BULK_MAX_FILES,
  },
};

/** Uploads take their body as a stream; nothing else. */
export const noParams = Joi.object({});

/** The upload actions a gateway may open a transfer for, and how each reads its body. */
export const UPLOAD_ACTIONS = { 'file.singleUpload': 'single', 'file.bulkUpload': 'bulk' } as const;

/** A gateway on another node asks where to send an upload's body (libs/transfer). */
export const openUploadParams = Joi.object<{ action: keyof typeof UPLOAD_ACTIONS }, true>({
  action: Joi.string()
    .valid(...Object.keys(UPLOAD_ACTIONS))
    .required(),
});

/** The URL pattern states in the document what `parseHostedUrl` accepts; the handler checks. */
export const downloadParams = (cdnBaseUrl: string) =>
  Joi.object<{ url: string }, true>({
    url: documented(Joi.string().max(MAX_URL_LENGTH), {
      pattern: hostedUrlPattern(cdnBaseUrl),
    }).required(),
  });

/** S3 lists at most this many objects a page. */
export const FILE_LIST_MAX = 1000;

const fileName = () =>
  Joi.string().pattern(new RegExp(FILE_NAME_PATTERN)).messages({
    'string.pattern.base':
      '{{#label}} must be a stored file’s name, the last segment of its URL: <uuid>.<ext>',
  });

const filePage = {
  limit: fromUrl(Joi.number().integer().min(1).max(FILE_LIST_MAX).default(100)),
  after: fileName().description(
    'The page begins after this file: the `fileName` that ended the previous page',
  ),
};

export interface FilePage {
  limit: number;
  after?: string;
}

/** A user's files, a page at a time: by the caller (`/api/files`). */
export const ownFilesParams = Joi.object<FilePage, true>(filePage);

/** One of the caller's files. */
export const ownFileParams = Joi.object<{ fileName: string }, true>({
  fileName: fileName().required(),
});

/** A user's files, a page at a time: by an operator (`/admin/users/:userId/files`). */
export const userFilesParams = Joi.object<FilePage & { userId: string }, true>({
  userId: uuid().required(),
  ...filePage,
});

/** One of a user's files, by an operator. */
export const userFileParams = Joi.object<{ userId: string; fileName: string }, true>({
  userId: uuid().required(),
  fileName: fileName().required(),
});
