import { isFileKey, userFolder } from '../../libs/contracts/file';
import { notFound } from '../../libs/errors';
import { action, requireUser, type operatorOf, type ServiceActions } from '../../libs/service';
import Joi from '../../libs/joi';
import { ownFileParams, ownFilesParams, FILE_LIST_MAX, type FilePage } from './schemas';
import type { FileStorage } from './store';
import { storedFileView, toStoredFileView, type StoredFileView } from './views';

export interface PurgedFiles {
  deleted: number;
  more: boolean;
}

/** Who deleted files, in its log line: their owner, or an operator (`operatorOf`). */
export type DeletedBy = { by: 'owner' } | ({ by: 'operator' } & ReturnType<typeof operatorOf>);

/**
 * Deletes of one purge running at once, one object each: a batch delete (DeleteObjects) needs
 * a request checksum not every S3-compatible server takes, and fails per key all the same.
 */
const PURGE_CONCURRENCY = 8;

/** Lists one page asks S3 for at most: strays in a folder are read past, a few pages of them. */
const LIST_ROUNDS = 5;

/**
 * A user's stored files, read from the bucket itself: the folder of their keys is the record
 * (decision 147). Owners list and delete theirs; operators anyone's (file-admin.ts).
 */
export class UserFiles {
  constructor(
    private readonly storage: () => FileStorage,
    private readonly cdnBaseUrl: string,
    private readonly log: (message: string, fields: Record<string, unknown>) => void,
  ) {}

  /**
   * A page of the user's files, in name order (which is random: names are UUIDs): `limit` of
   * them unless there are no more, so that a shorter page is the last (a stray object in the
   * folder, or a server listing short pages, is read past).
   */
  async list(userId: string, { limit, after }: FilePage): Promise<StoredFileView[]> {
    const folder = userFolder(userId);
    const files: StoredFileView[] = [];
    let from = after === undefined ? undefined : folder + after;
    for (let round = 0; round < LIST_ROUNDS; round++) {
      const page = await this.storage().list(folder, { limit: limit - files.length, after: from });
      for (const object of page.objects) {
        if (isFileKey(object.key)) files.push(toStoredFileView(object, this.cdnBaseUrl));
      }
      const last = page.objects[page.objects.length - 1];
      // A server that lists nothing new (StartAfter ignored) would be asked forever.
      const moved = last !== undefined && (from === undefined || last.key > from);
      if (!page.more || !moved || files.length >= limit) return files;
      from = last.key;
    }
    return files;
  }

  /**
   * Deletes one of the user's files; 404 when they have none of that name. `by`: who deleted
   * it, as its log line names them (the owner, or an operator by name).
   */
  async delete(userId: string, fileName: string, by: DeletedBy): Promise<void> {
    const key = userFolder(userId) + fileName;
    if (!(await this.storage().exists(key))) throw notFound(`File ${fileName} not found`);
    await this.storage().delete(key);
    this.log('file deleted', { userId, key, ...by });
  }

  /**
   * What `purge` would delete now: the user's objects (everything in their folder, file-named
   * or not), up to FILE_LIST_MAX, and whether more are left.
   */
  async purgeable(userId: string): Promise<{ count: number; more: boolean }> {
    const page = await this.storage().list(userFolder(userId), { limit: FILE_LIST_MAX });
    return { count: page.objects.length, more: page.more };
  }

  /**
   * Deletes up to FILE_LIST_MAX of the user's objects (everything in their folder) and says
   * whether more are left. It stops at the first failed delete, which it throws (S3 failing,
   * each further one would cost up to twice S3_TIMEOUT_MS): run it again.
   */
  async purge(userId: string, by: DeletedBy): Promise<PurgedFiles> {
    const page = await this.storage().list(userFolder(userId), { limit: FILE_LIST_MAX });
    let deleted = 0;
    try {
      for (let i = 0; i < page.objects.length; i += PURGE_CONCURRENCY) {
        const results = await Promise.allSettled(
          page.objects.slice(i, i + PURGE_CONCURRENCY).map(({ key }) => this.storage().delete(key)),
        );
        deleted += results.filter((r) => r.status === 'fulfilled').length;
        const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed) throw failed.reason;
      }
    } finally {
      if (deleted > 0) this.log('files purged', { userId, deleted, ...by });
    }
    return { deleted, more: page.more };
  }
}

/** The caller's own files: `GET /api/files`, `DELETE /api/files/:fileName`. */
export function createStoredFileActions(files: UserFiles): ServiceActions {
  return {
    listFiles: action({
      retry: 'safe',
      http: {
        group: 'api',
        method: 'GET',
        path: '/files',
        message: 'Files retrieved',
        summary: 'Your uploaded files, a page at a time',
        description:
          'In name order, which is random (names are UUIDs). The next page begins `after` the last `fileName` of this one; a page shorter than `limit` is the last.',
        response: Joi.array().items(storedFileView).max(FILE_LIST_MAX),
      },
      params: ownFilesParams,
      handler: (ctx) => files.list(requireUser(ctx), ctx.params),
    }),

    deleteFile: action({
      // A repeat would answer 404 for a file this call deleted.
      retry: 'never',
      http: {
        group: 'api',
        method: 'DELETE',
        path: '/files/:fileName',
        status: 204,
        message: 'File deleted',
        summary: 'Delete one of your uploaded files',
        description:
          '`fileName` is the last segment of the file’s URL. Downloads of it answer 404 from then on; a CDN in front of the bucket may serve its cached copy until that expires, and packages or deliveries that name its URL keep the URL.',
        errors: { 404: 'You have no file of that name' },
      },
      params: ownFileParams,
      async handler(ctx) {
        await files.delete(requireUser(ctx), ctx.params.fileName, { by: 'owner' });
        return null;
      },
    }),
  };
}
