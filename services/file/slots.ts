import type { ServiceBroker } from 'moleculer';

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

  constructor(
    private readonly max: number,
    private readonly report: (event: { active: number; refused: boolean }) => void = () =>
      undefined,
  ) {}

  /** A slot, or undefined when all are taken. */
  take(): Slot | undefined {
    if (this.active >= this.max) {
      this.report({ active: this.active, refused: true });
      return undefined;
    }
    this.active++;
    this.report({ active: this.active, refused: false });
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.active--;
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
