import type { ServiceBroker } from 'moleculer';
import type { SearchCounts } from './waiting-searches';

/** The running searches by state (`waybill_matching_searches{state}` on `/metrics`). */
const SEARCHES_METRIC = 'waybill.matching.searches';

/**
 * What each sweep saw of the running searches, set on the process's `/metrics`: every
 * replica sweeps every search, so each reports all of them (aggregate with `max`).
 */
export function searchGauge(broker: ServiceBroker): (counts: SearchCounts) => void {
  if (!broker.isMetricsEnabled()) return () => undefined;
  broker.metrics.register({
    type: 'gauge',
    name: SEARCHES_METRIC,
    labelNames: ['state'],
    description:
      'Running courier searches at the last sweep: all of them (running), those whose last step found nobody to offer to (waiting_for_courier), those whose offer is open (awaiting_answer)',
  });
  return (counts) => {
    for (const [state, value] of Object.entries(counts)) {
      broker.metrics.set(SEARCHES_METRIC, value, { state });
    }
  };
}
