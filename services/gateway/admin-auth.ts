import { createHash, timingSafeEqual } from 'node:crypto';
import { forbidden, unauthorized } from '../../libs/errors';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Checks `Authorization: Bearer <ADMIN_TOKEN>` in constant time; throws 401/403. */
export function checkAdminToken(header: string | undefined, adminToken: string | undefined): void {
  if (!adminToken) {
    throw forbidden('The admin API is disabled; start the platform with ADMIN_TOKEN set');
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!match) {
    throw unauthorized('Admin token is required: send Authorization: Bearer <ADMIN_TOKEN>');
  }
  if (!timingSafeEqual(digest(match[1]), digest(adminToken))) {
    throw unauthorized('Invalid admin token');
  }
}
