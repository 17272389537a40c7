import type { ServiceBroker } from 'moleculer';
import type { AllowanceShare } from '../../libs/contracts/file';
import { countIn } from '../../libs/open-counts';

/** Uploads this process is receiving, and those it refused because all slots were taken. */
export const UPLOADS_ACTIVE_METRIC = 'waybill.file.uploads.active';
export const UPLOADS_REFUSED_METRIC = 'waybill.file.uploads.refused.total';
/** Downloads this process is streaming, and those it refused. */
export const DOWNLOADS_ACTIVE_METRIC = 'waybill.file.downloads.active';
export const DOWNLOADS_REFUSED_METRIC = 'waybill.file.downloads.refused.total';

export interface Slot {
  /** Gives the slot back; once, whatever the number of calls. */
  release(): void;
}

/**
 * The transfers of one kind a process runs at once: uploads (FILE_MAX_UPLOADS, each holding
 * at most UPLOAD_MEMORY_BYTES, so the cap bounds the process's memory) or downloads
 * (FILE_MAX_DOWNLOADS, each holding an S3 connection). docs/files.md.
 */
export class Slots {
  private active = 0;
  /** Slots held by each account, whichever of its keys. */
  private readonly byOwner = new Map<string, number>();
  /** Slots held by each account's publishable keys, of those above. */
  private readonly byPublishable = new Map<string, number>();
  /**
   * The most one account holds: half the process's (rounded up), so that no one account, its
   * server keys and its publishable keys together, takes a process. Its caps across replicas
   * (FILE_MAX_*_PER_USER) are no bound here: each of its two shares may hold as many as a
   * process has.
   */
  readonly ownerMax: number;
  /**
   * The most an account's publishable keys hold of the account's own: half of it (at least
   * one), so that keys anyone may pull out of an app never take the room of the merchant's
   * servers on a process (decision 158).
   */
  readonly publishableMax: number;

  constructor(
    readonly max: number,
    private readonly report: (event: { active: number; refused: boolean }) => void = () =>
      undefined,
  ) {
    this.ownerMax = Math.max(1, Math.ceil(max / 2));
    this.publishableMax = Math.max(1, Math.floor(this.ownerMax / 2));
  }

  /**
   * A slot for `share`, or why there is none: all taken, the account holds its part, or its
   * publishable keys hold theirs.
   */
  take(share: AllowanceShare): Slot | 'full' | 'owner-full' | 'publishable-full' {
    const { userId, publishable } = share;
    const held = this.byOwner.get(userId) ?? 0;
    const heldPublishable = publishable ? (this.byPublishable.get(userId) ?? 0) : 0;
    const refusal =
      this.active >= this.max
        ? 'full'
        : held >= this.ownerMax
          ? 'owner-full'
          : heldPublishable >= this.publishableMax
            ? 'publishable-full'
            : null;
    if (refusal) {
      // Counted only when the process is full: the metric says when more replicas are needed.
      this.report({ active: this.active, refused: refusal === 'full' });
      return refusal;
    }
    this.active++;
    countIn(this.byOwner, userId, 1);
    if (publishable) countIn(this.byPublishable, userId, 1);
    this.report({ active: this.active, refused: false });
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.active--;
        countIn(this.byOwner, userId, -1);
        if (publishable) countIn(this.byPublishable, userId, -1);
        this.report({ active: this.active, refused: false });
      },
    };
  }

  get size(): number {
    return this.active;
  }
}

const METRICS = {
  uploads: {
    active: UPLOADS_ACTIVE_METRIC,
    refused: UPLOADS_REFUSED_METRIC,
    activeHelp: 'Uploads this file-service process is receiving (at most FILE_MAX_UPLOADS)',
    refusedHelp: 'Uploads refused with 503 because FILE_MAX_UPLOADS were in progress',
  },
  downloads: {
    active: DOWNLOADS_ACTIVE_METRIC,
    refused: DOWNLOADS_REFUSED_METRIC,
    activeHelp: 'Downloads this file-service process is streaming (at most FILE_MAX_DOWNLOADS)',
    refusedHelp: 'Downloads refused with 503 because FILE_MAX_DOWNLOADS were in progress',
  },
};

/** Slots whose use shows on `/metrics` (gauge of those in use, counter of refusals). */
export function meteredSlots(
  broker: ServiceBroker,
  max: number,
  kind: keyof typeof METRICS,
): Slots {
  if (!broker.isMetricsEnabled()) return new Slots(max);
  const names = METRICS[kind];
  broker.metrics.register({ type: 'gauge', name: names.active, description: names.activeHelp });
  broker.metrics.register({
    type: 'counter',
    name: names.refused,
    description: names.refusedHelp,
  });
  broker.metrics.set(names.active, 0);
  return new Slots(max, ({ active, refused }) => {
    broker.metrics.set(names.active, active);
    if (refused) broker.metrics.increment(names.refused);
  });
}
