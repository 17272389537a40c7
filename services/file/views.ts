import Joi from '../../libs/joi';
import { fileNameOf, hostedUrl } from '../../libs/contracts/file';
import { view } from '../../libs/schemas';
import type { ListedObject } from './store';

export const storedFileView = view('StoredFile', {
  fileName: Joi.string().description('The last segment of its URL; delete it by this name'),
  url: Joi.string().uri(),
  size: Joi.number().integer().min(0).description('Bytes'),
  uploadedAt: Joi.string().isoDate().allow(null),
});

export interface StoredFileView {
  fileName: string;
  url: string;
  size: number;
  uploadedAt: string | null;
}

export function toStoredFileView(object: ListedObject, cdnBaseUrl: string): StoredFileView {
  return {
    fileName: fileNameOf(object.key),
    url: hostedUrl(object.key, cdnBaseUrl),
    size: object.size,
    uploadedAt: object.lastModified ? object.lastModified.toISOString() : null,
  };
}

export const purgedFilesView = view('PurgedFiles', {
  deleted: Joi.number().integer().min(0).description('Files deleted by this call'),
  more: Joi.boolean().description('More files are left: call again'),
});
