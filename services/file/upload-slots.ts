import type { ServiceBroker } from 'moleculer';

/** Uploads this process is receiving, and those it refused because all slots were taken. */
export const UPLOADS_ACTIVE_METRIC = 'waybill.file.uploads.active';
export const UPLOADS_REFUSED_METRIC = 'waybill.file.uploads.refused.total';

export interface UploadSlot {
  /** Gives the slot back; once, whatever the number of calls. */
  release(): void;
}

/**
 * The uploads one process receives at once (FILE_MAX_UPLOADS). Each holds at most
 * UPLOAD_MEMORY_BYTES, so the cap is what bounds the process's memory (docs/files.md).
 */
export class UploadSlots {
  private active = 0;

  constructor(
    private readonly max: number,
    private readonly report: (event: { active: number; refused: boolean }) => void = () =>
      undefined,
  ) {}

  /** A slot, or undefined when all are taken. */
  take(): UploadSlot | undefined {
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

/** Slots whose use shows on `/metrics` (gauge of active uploads, counter of refusals). */
export function meteredUploadSlots(broker: ServiceBroker, max: number): UploadSlots {
  if (!broker.isMetricsEnabled()) return new UploadSlots(max);
  broker.metrics.register({
    type: 'gauge',
    name: UPLOADS_ACTIVE_METRIC,
    description: 'Uploads this file-service process is receiving (at most FILE_MAX_UPLOADS)',
  });
  broker.metrics.register({
    type: 'counter',
    name: UPLOADS_REFUSED_METRIC,
    description: 'Uploads refused with 503 because FILE_MAX_UPLOADS were in progress',
  });
  broker.metrics.set(UPLOADS_ACTIVE_METRIC, 0);
  return new UploadSlots(max, ({ active, refused }) => {
    broker.metrics.set(UPLOADS_ACTIVE_METRIC, active);
    if (refused) broker.metrics.increment(UPLOADS_REFUSED_METRIC);
  });
}
