import Joi from 'joi';
import { MAX_URL_LENGTH } from '../../libs/contracts/file';

/** Params and answers of the file actions; the answers are what /openapi.json documents. */

const errorSlot = Joi.object({
  error: Joi.object({
    statusCode: Joi.number().integer().valid(400, 413, 415),
    message: Joi.string(),
    filename: Joi.string().allow(null),
  }),
}).description('A file that was refused; the other files are stored');

export const singleUploadView = Joi.object({ url: Joi.string().uri() });

export const bulkUploadView = Joi.object({
  urls: Joi.array().items(Joi.string().uri(), errorSlot),
});

/** Uploads take their body as a stream; nothing else. */
export const noParams = Joi.object({});

export const downloadParams = Joi.object<{ url: string }, true>({
  url: Joi.string().max(MAX_URL_LENGTH).required(),
});
