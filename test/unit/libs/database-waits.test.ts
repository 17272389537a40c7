import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLAIM_END_LEASE_MS } from '../../../libs/mongo';
import { MARK_GRACE_MS } from '../../../libs/work-marks';

/** How long FerretDB, as `scripts/infra` builds it, holds a write for SQLite's write lock. */
function ferretBusyTimeoutMs(): number {
  const main = readFileSync(join(__dirname, '../../../tools/ferretdb/main.go'), 'utf8');
  const found = /busy_timeout\((\d+)\)/.exec(main);
  if (!found) throw new Error('tools/ferretdb/main.go no longer sets busy_timeout');
  return Number(found[1]);
}

describe('leases reckoned from a database write’s longest wait', () => {
  const busyMs = ferretBusyTimeoutMs();

  it('a claim’s end outlasts its insert and its delete, each held for the write lock', () => {
    expect(busyMs).toBeGreaterThan(0);
    expect(CLAIM_END_LEASE_MS).toBeGreaterThan(2 * busyMs);
  });

  it('a work mark waits for its item past its own write and the item’s insert, each held for it', () => {
    expect(MARK_GRACE_MS).toBeGreaterThan(2 * busyMs);
  });
});
