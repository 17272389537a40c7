import { performance } from 'node:perf_hooks';
import { ServiceBroker, type Context, type Middleware } from 'moleculer';
import { metricTableOf, type Count, type Histogram } from './metric-table';

/**
 * moleculer's call, event and packet metrics, under moleculer's own names and labels, counted
 * in the broker's metric table instead of moleculer's registry (libs/metric-table): its
 * built-in `Metrics` middleware made a dozen registry changes per call, each hashing its
 * labels, and had no switch of its own (decision 64). Each action and event finds its series
 * once per caller; a call then costs a few additions.
 */

/** Call and event times in milliseconds, as moleculer's default buckets. */
const TIME_BUCKETS_MS = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000];

const CALL_LABELS = ['service', 'action', 'type', 'caller'] as const;
const EVENT_LABELS = ['service', 'group', 'event', 'caller'] as const;
const ERROR_LABELS = ['errorName', 'errorCode', 'errorType'] as const;

interface Series {
  total: Count;
  active: Count;
  time: Histogram;
}

type Handler = (this: unknown, ctx: Context) => Promise<unknown>;

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  type?: unknown;
}

const labelValue = (value: unknown) => (value === undefined || value === null ? '' : String(value));
const errorLabels = (err: unknown) => {
  const { name, code, type } = (err ?? {}) as ErrorLike;
  return [labelValue(name), labelValue(code), labelValue(type)];
};

/** The built-in middlewares moleculer registers itself, in its order, without `Metrics`. */
const METRICS_AT = ServiceBroker.INTERNAL_MIDDLEWARES.indexOf('Metrics');
const BUILT_IN_WITHOUT_METRICS = ServiceBroker.INTERNAL_MIDDLEWARES.filter(
  (name) => name !== 'Metrics',
);

/**
 * The broker's middlewares: ours (innermost first, as moleculer adds user middlewares before
 * its own), moleculer's built-in ones but its `Metrics`, and these metrics in its place. Use
 * with `internalMiddlewares: false`.
 */
export function withCallMetrics(ours: Middleware[]): (Middleware | string)[] {
  const [beforeMetrics, afterMetrics] = [
    BUILT_IN_WITHOUT_METRICS.slice(0, METRICS_AT),
    BUILT_IN_WITHOUT_METRICS.slice(METRICS_AT),
  ];
  // moleculer also takes a function of the broker (its MiddlewareInit), which the option's
  // type leaves out: these metrics need the broker's own table.
  const init = callMetrics as unknown as Middleware;
  return [...ours, ...beforeMetrics, init, ...afterMetrics];
}

function callMetrics(broker: ServiceBroker): Middleware | null {
  if (!broker.isMetricsEnabled()) return null;
  const table = metricTableOf(broker);
  const request = {
    total: table.counter('moleculer_request_total', 'Number of requests', CALL_LABELS),
    active: table.gauge('moleculer_request_active', 'Number of active requests', CALL_LABELS),
    errors: table.counter('moleculer_request_error_total', 'Number of request errors', [
      ...CALL_LABELS,
      ...ERROR_LABELS,
    ]),
    time: table.histogram(
      'moleculer_request_time',
      'Request times in milliseconds',
      CALL_LABELS,
      TIME_BUCKETS_MS,
    ),
  };
  const event = {
    total: table.counter(
      'moleculer_event_received_total',
      'Number of received events',
      EVENT_LABELS,
    ),
    active: table.gauge(
      'moleculer_event_received_active',
      'Number of active event executions',
      EVENT_LABELS,
    ),
    errors: table.counter(
      'moleculer_event_received_error_total',
      'Number of event execution errors',
      [...EVENT_LABELS, ...ERROR_LABELS],
    ),
    time: table.histogram(
      'moleculer_event_received_time',
      'Execution time of events in milliseconds',
      EVENT_LABELS,
      TIME_BUCKETS_MS,
    ),
  };
  const emitted = table.counter('moleculer_event_emit_total', 'Number of emitted events', [
    'event',
  ]);
  const broadcast = table.counter('moleculer_event_broadcast_total', 'Number of broadcast events', [
    'event',
  ]);
  const published = table.counter(
    'moleculer_transit_publish_total',
    'Number of published packets',
    ['type'],
  );
  const received = table.counter('moleculer_transit_receive_total', 'Number of received packets', [
    'type',
  ]);
  const count = (name: string, help: string) => table.counter(name, help, []).of();
  const sent = {
    packets: count('moleculer_transporter_packets_sent_total', 'Number of sent packets'),
    bytes: count('moleculer_transporter_packets_sent_bytes', 'Number of sent bytes'),
  };
  const got = {
    packets: count('moleculer_transporter_packets_received_total', 'Number of received packets'),
    bytes: count('moleculer_transporter_packets_received_bytes', 'Number of received bytes'),
  };

  /**
   * Counts each run of `handler` in `family`, its time and its failures, under the label
   * values of its context; the series are found once per distinct `keyOf`.
   */
  function measured(
    family: typeof request | typeof event,
    valuesOf: (ctx: Context) => string[],
    keyOf: (ctx: Context) => string,
    handler: Handler,
  ): Handler {
    const found = new Map<string, Series>();
    const seriesOf = (ctx: Context) => {
      const key = keyOf(ctx);
      let series = found.get(key);
      if (!series) {
        const values = valuesOf(ctx);
        series = {
          total: family.total.of(...values),
          active: family.active.of(...values),
          time: family.time.of(...values),
        };
        found.set(key, series);
      }
      return series;
    };
    return function (this: unknown, ctx: Context) {
      const series = seriesOf(ctx);
      series.total.value++;
      series.active.value++;
      const started = performance.now();
      return handler.call(this, ctx).then(
        (answer) => {
          series.time.observe(performance.now() - started);
          series.active.value--;
          return answer;
        },
        (err: unknown) => {
          series.time.observe(performance.now() - started);
          series.active.value--;
          family.errors.of(...valuesOf(ctx), ...errorLabels(err)).value++;
          throw err;
        },
      );
    };
  }

  const callerOf = (ctx: Context) => labelValue(ctx.caller);
  const wrapAction = (type: 'local' | 'remote') =>
    function (next: Handler, action: { name: string; service?: { fullName?: string } }) {
      const fixed = [labelValue(action.service?.fullName), action.name, type];
      return measured(request, (ctx) => [...fixed, callerOf(ctx)], callerOf, next);
    };

  return {
    name: 'CallMetrics',
    localAction: wrapAction('local'),
    remoteAction: wrapAction('remote'),
    localEvent(next: Handler, handler: { group?: string; service?: { name?: string } }) {
      const service = labelValue(handler.service?.name);
      const group = labelValue(handler.group ?? handler.service?.name);
      return measured(
        event,
        (ctx) => [service, group, labelValue(ctx.eventName), callerOf(ctx)],
        (ctx) => `${ctx.eventName ?? ''}\u0000${ctx.caller ?? ''}`,
        next,
      );
    },
    emit(next: (name: string, ...rest: unknown[]) => Promise<void>) {
      return (name: string, ...rest: unknown[]) => {
        emitted.of(name).value++;
        return next(name, ...rest);
      };
    },
    broadcast(next: (name: string, ...rest: unknown[]) => Promise<void>) {
      return (name: string, ...rest: unknown[]) => {
        broadcast.of(name).value++;
        return next(name, ...rest);
      };
    },
    transitPublish(next: (packet: { type: string }) => Promise<void>) {
      return (packet: { type: string }) => {
        published.of(packet.type).value++;
        return next(packet);
      };
    },
    transitMessageHandler(next: (cmd: string, packet: unknown) => unknown) {
      return (cmd: string, packet: unknown) => {
        received.of(cmd).value++;
        return next(cmd, packet);
      };
    },
    transporterSend(next: (topic: string, data: Buffer, meta: unknown) => Promise<void>) {
      return (topic: string, data: Buffer, meta: unknown) => {
        sent.packets.value++;
        sent.bytes.value += data?.length ?? 0;
        return next(topic, data, meta);
      };
    },
    transporterReceive(next: (cmd: string, data: Buffer, s: unknown) => Promise<void>) {
      return (cmd: string, data: Buffer, s: unknown) => {
        got.packets.value++;
        got.bytes.value += data?.length ?? 0;
        return next(cmd, data, s);
      };
    },
    // moleculer's declared hook types return the wrapped method's result, not the wrapper.
  } as unknown as Middleware;
}
