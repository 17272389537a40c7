import Joi from '../../libs/joi';
import { action, operatorOf, type ServiceActions } from '../../libs/service';
import { userFileParams, userFilesParams, FILE_LIST_MAX } from './schemas';
import type { UserFiles } from './stored-files';
import { purgedFilesView, storedFileView } from './views';
import { userIdParams } from '../../libs/schemas';

/** Operators' view of users' files: what one stored, a takedown, and a purge (decision 147). */
export function createFileAdminActions(files: UserFiles): ServiceActions {
  return {
    listUserFiles: action({
      retry: 'safe',
      http: {
        group: 'admin',
        method: 'GET',
        path: '/users/:userId/files',
        message: 'Files retrieved',
        summary: 'A user’s uploaded files, a page at a time',
        description:
          'In name order, which is random. The next page begins `after` the last `fileName` of this one; a page shorter than `limit` is the last. A user with no files, or no such user, has none.',
        response: Joi.array().items(storedFileView).max(FILE_LIST_MAX),
      },
      params: userFilesParams,
      handler: (ctx) => files.list(ctx.params.userId, ctx.params),
    }),

    deleteUserFile: action({
      // A repeat would answer 404 for a file this call deleted.
      retry: 'never',
      http: {
        group: 'admin',
        method: 'DELETE',
        path: '/users/:userId/files/:fileName',
        status: 204,
        message: 'File deleted',
        summary: 'Take down one of a user’s files',
        description:
          'The file’s URL is `<CDN_BASE_URL>/uploads/<userId>/<fileName>`. A CDN in front of the bucket may serve its cached copy until that expires: purge it there too.',
        errors: { 404: 'The user has no file of that name' },
      },
      params: userFileParams,
      async handler(ctx) {
        await files.delete(ctx.params.userId, ctx.params.fileName, {
          by: 'operator',
          ...operatorOf(ctx.meta),
        });
        return null;
      },
    }),

    /** What a purge would delete now (`waybill files purge` without `--yes`): no route. */
    countPurgeable: action({
      retry: 'safe',
      visibility: 'public',
      params: userIdParams,
      handler: (ctx) => files.purgeable(ctx.params.userId),
    }),

    purgeUserFiles: action({
      // Deleting what is left again is what a repeat does.
      retry: 'safe',
      http: {
        group: 'admin',
        // A step of work, not the removal of a resource: the list stays, empty once done.
        method: 'POST',
        path: '/users/:userId/purge-files',
        message: 'Files deleted',
        summary: `Delete a user’s files, up to ${FILE_LIST_MAX} a call`,
        description:
          'Deletes everything in the user’s folder of the bucket, a page at a time: call again while `more` is true. Revoke the user’s API keys first, or uploads under way land after it.',
        response: purgedFilesView,
      },
      params: userIdParams,
      handler: (ctx) => files.purge(ctx.params.userId, { by: 'operator', ...operatorOf(ctx.meta) }),
    }),
  };
}
