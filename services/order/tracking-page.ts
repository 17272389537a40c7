import type { TrackingState, TrackingView } from '../../libs/contracts/order';
import { escapeHtml, htmlDocument, jsonForScript, scriptHash } from '../../libs/html';

/**
 * The public tracking page (`GET /track/:trackingId`), rendered whole at load so that it shows
 * the state without JavaScript, and its live regions as markup of their own: the gateway's
 * event stream carries them, and the page's one small script swaps those that changed.
 */

/** The page's own path; its event stream is `<path>/events`. */
export const trackingPagePath = (trackingId: string) => `/track/${encodeURIComponent(trackingId)}`;

interface Clock {
  time: Intl.DateTimeFormat;
  day: Intl.DateTimeFormat;
  /** "Lagos time", "New York time", "UTC". */
  label: string;
}

// One per zone in use (a tariff's zone is a valid IANA name, so at most a few hundred), kept:
// building a formatter costs far more than using one, and the page is rendered on every change.
const clocks = new Map<string, Clock>();

/** Times as the recipient's clock reads them: the zone of the tariff the delivery was priced by. */
function clockOf(timeZone: string): Clock {
  let clock = clocks.get(timeZone);
  if (!clock) {
    const city = timeZone.split('/').pop()!.replaceAll('_', ' ');
    clock = {
      time: new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit' }),
      day: new Intl.DateTimeFormat('en-GB', { timeZone, day: 'numeric', month: 'short' }),
      label: timeZone.includes('/') ? `${city} time` : city,
    };
    clocks.set(timeZone, clock);
  }
  return clock;
}

const time = (iso: string, clock: Clock) =>
  `<time datetime="${escapeHtml(iso)}">${escapeHtml(clock.day.format(new Date(iso)))}, ${escapeHtml(clock.time.format(new Date(iso)))}</time>`;

const statusRegion = (view: TrackingView) =>
  `<p class="status" data-status="${escapeHtml(view.status)}">${escapeHtml(view.statusText)}</p>`;

/**
 * The arrival window, with its day: a long trip's window may open tonight or tomorrow, and two
 * times alone read as today's. Its day once when both ends fall on it, else each end's own.
 */
function etaRegion(view: TrackingView): string {
  if (!view.eta) return '';
  const clock = clockOf(view.timeZone);
  const [from, to] = [view.eta.from, view.eta.to].map((iso) => new Date(iso));
  const day = clock.day.format(from);
  const oneDay = day === clock.day.format(to);
  const at = (iso: string, date: Date) =>
    oneDay
      ? `<time datetime="${escapeHtml(iso)}">${escapeHtml(clock.time.format(date))}</time>`
      : time(iso, clock);
  return (
    `<p class="eta">Expected between ${at(view.eta.from, from)} and ${at(view.eta.to, to)}` +
    `${oneDay ? ` on ${escapeHtml(day)}` : ''} (${escapeHtml(clock.label)})</p>`
  );
}

/** What the page says in place of a courier it does not show. */
const WITHHELD_TEXT: Record<NonNullable<TrackingView['courierWithheld']>, string> = {
  unassigned: 'No courier yet.',
  'no-longer-shown': 'Courier details are no longer shown.',
  unavailable: 'Courier details are unavailable right now.',
};

function courierRegion(view: TrackingView): string {
  const { courier } = view;
  if (!courier) {
    const why = view.courierWithheld ?? 'unassigned';
    // A delivery that ended without one will not get one.
    const text =
      why === 'unassigned' && view.terminal ? 'No courier was assigned.' : WITHHELD_TEXT[why];
    return `<p>${text}</p>`;
  }
  const v = courier.vehicle;
  const where = courier.place ? `<dt>Last seen near</dt><dd>${escapeHtml(courier.place)}</dd>` : '';
  return (
    '<dl>' +
    `<dt>Courier</dt><dd class="courier-name">${escapeHtml(courier.firstName)}</dd>` +
    `<dt>Vehicle</dt><dd>${escapeHtml(`${v.colour} ${v.make} ${v.model}`)}${v.type ? ` (${escapeHtml(v.type)})` : ''}</dd>` +
    `<dt>Plate</dt><dd class="plate">${escapeHtml(v.regNo)}</dd>` +
    where +
    '</dl>'
  );
}

function mapRegion(view: TrackingView): string {
  const { map } = view;
  const { pickup: a, dropoff: b, courier: c } = map;
  const describe =
    `Map drawing, not to a street scale: pickup near ${view.pickup.place}, drop-off near ${view.dropoff.place}` +
    (view.courier?.place ? `, courier near ${view.courier.place}.` : '.');
  const marker = c
    ? `<g class="courier-marker" transform="translate(${c.x} ${c.y})"><circle r="9" fill="#f59e0b" stroke="#111" stroke-width="2"/></g>`
    : '';
  return (
    `<svg viewBox="0 0 ${map.width} ${map.height}" role="img" aria-label="${escapeHtml(describe)}">` +
    `<rect width="${map.width}" height="${map.height}" fill="#eef2f6"/>` +
    `<line x1="${a.x}" y1="${a.y}" x2="${b.x}" y2="${b.y}" stroke="#1d4ed8" stroke-width="3" stroke-dasharray="8 5"/>` +
    `<circle cx="${a.x}" cy="${a.y}" r="7" fill="#166534"/>` +
    `<circle cx="${b.x}" cy="${b.y}" r="7" fill="#b91c1c"/>` +
    marker +
    '</svg>' +
    '<ul class="legend">' +
    `<li><span class="dot pickup"></span>Pickup: ${escapeHtml(view.pickup.place)}</li>` +
    `<li><span class="dot dropoff"></span>Drop-off: ${escapeHtml(view.dropoff.place)}</li>` +
    (c ? '<li><span class="dot courier"></span>Courier</li>' : '') +
    `<li>Route: about ${escapeHtml(String(view.distanceKm))} km</li>` +
    '</ul>'
  );
}

function stepsRegion(view: TrackingView): string {
  const clock = clockOf(view.timeZone);
  const items = view.steps.map(
    (s) =>
      `<li${s.active ? ' aria-current="step" class="current"' : ''}>` +
      `<span class="label">${escapeHtml(s.label)}</span> ${time(s.at, clock)}</li>`,
  );
  return `<ol class="steps">${items.join('')}</ol>`;
}

/** The live regions by id (`tr-<name>` on the page), each rendered from the view alone. */
function trackingRegions(view: TrackingView): Record<string, string> {
  return {
    status: statusRegion(view),
    eta: etaRegion(view),
    courier: courierRegion(view),
    map: mapRegion(view),
    steps: stepsRegion(view),
  };
}

export function trackingState(view: TrackingView): TrackingState {
  return { view, regions: trackingRegions(view) };
}

/**
 * Follows the event stream and swaps the regions that changed. Static, so that the page's
 * CSP allows it by hash and no nonce is needed; the state it starts from is the page's
 * own (`#tr-state`), so nothing is announced twice, and a state of an older version of the
 * delivery than the one shown (a gateway's feed read before the page) is passed over. A
 * terminal state closes the stream, or EventSource would reconnect to a delivery that is over.
 */
// A stream refused (429, 503: EventSource gives up for good on any answer but 200) is asked
// for again after a wait that doubles from 5 s to a minute, spread so that the pages a gateway
// turned away do not all come back together; one the server ended (`end`) is not.
export const TRACKING_PAGE_SCRIPT =
  '(function(){' +
  "var el=document.getElementById('tr-state');if(!el||!window.EventSource)return;" +
  'var first=JSON.parse(el.textContent);var last=first.regions;var version=first.version;' +
  "var url=location.pathname.replace(/\\/$/,'')+'/events';var wait=5000;var over=false;" +
  'function open(){var es=new EventSource(url);' +
  "es.addEventListener('open',function(){wait=5000;});" +
  "es.addEventListener('state',function(e){var s=JSON.parse(e.data);" +
  "if(typeof s.view.version==='number'){if(typeof version==='number'&&s.view.version<version)return;version=s.view.version;}" +
  "for(var k in s.regions){if(s.regions[k]!==last[k]){var n=document.getElementById('tr-'+k);if(n)n.innerHTML=s.regions[k];}}" +
  'last=s.regions;if(s.view.terminal){over=true;es.close();}});' +
  "es.addEventListener('end',function(){over=true;es.close();});" +
  "es.addEventListener('error',function(){if(over||es.readyState!==2)return;" +
  'setTimeout(open,wait*(0.5+Math.random()));wait=Math.min(wait*2,60000);});}' +
  'open();' +
  '})();';

/** What the page's Content-Security-Policy allows: nothing from elsewhere, its script by hash. */
export const TRACKING_PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; " +
  `script-src ${scriptHash(TRACKING_PAGE_SCRIPT)}; connect-src 'self'; img-src 'self' data:; ` +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// Mobile first: one column, large type; wider screens only get more margin. Colours keep a
// contrast of 4.5:1 or more against their background (WCAG AA).
const STYLE =
  '*{box-sizing:border-box}' +
  'body{font-family:system-ui,sans-serif;margin:0;color:#111;background:#fff;line-height:1.45;font-size:1rem}' +
  'header,main,footer{padding:0 1rem;max-width:40rem;margin:0 auto}' +
  'header{padding-top:1rem}h1{font-size:1.35rem;margin:.3rem 0}h2{font-size:1.1rem;margin:1.2rem 0 .4rem}' +
  '.tracking-id{font-family:ui-monospace,monospace;color:#374151;margin:0;overflow-wrap:anywhere}' +
  '.status{font-size:1.15rem;font-weight:600;padding:.75rem 1rem;border-radius:.4rem;background:#e0ecff;color:#0b2a66}' +
  'svg{display:block;width:100%;height:auto;border:1px solid #9ca3af;border-radius:.4rem}' +
  '.legend{list-style:none;padding:0;margin:.4rem 0;display:flex;flex-wrap:wrap;gap:.3rem 1rem;font-size:.95rem}' +
  '.dot{display:inline-block;width:.8rem;height:.8rem;border-radius:50%;margin-right:.35rem;vertical-align:-.05rem}' +
  '.dot.pickup{background:#166534}.dot.dropoff{background:#b91c1c}.dot.courier{background:#f59e0b;border:2px solid #111}' +
  'dl{display:grid;grid-template-columns:auto 1fr;gap:.2rem .8rem;margin:0}dt{color:#374151}dd{margin:0;overflow-wrap:anywhere}' +
  '.steps{padding-left:1.3rem;margin:0}.steps li{margin:.2rem 0}.steps .current{font-weight:700}' +
  'footer{color:#374151;font-size:.9rem;padding-bottom:1.5rem}';

/** The whole page: every region at its state at load, and the script that keeps it live. */
export function trackingPage(state: TrackingState): string {
  const { view, regions } = state;
  const to = view.dropoff.firstName ? ` for ${view.dropoff.firstName}` : '';
  const from = view.pickup.firstName ? ` from ${view.pickup.firstName}` : '';
  const body =
    '<header>' +
    `<h1>Your delivery${escapeHtml(from + to)}</h1>` +
    `<p class="tracking-id">Tracking number ${escapeHtml(view.trackingId)}</p>` +
    '</header>' +
    '<main>' +
    `<section aria-labelledby="h-status"><h2 id="h-status">Status</h2>` +
    `<div id="tr-status" role="status" aria-live="polite">${regions.status}</div>` +
    `<div id="tr-eta">${regions.eta}</div></section>` +
    `<section aria-labelledby="h-map"><h2 id="h-map">Map</h2><div id="tr-map">${regions.map}</div></section>` +
    `<section aria-labelledby="h-courier"><h2 id="h-courier">Courier</h2><div id="tr-courier">${regions.courier}</div></section>` +
    `<section aria-labelledby="h-steps"><h2 id="h-steps">Progress</h2><div id="tr-steps">${regions.steps}</div></section>` +
    '</main>' +
    '<footer><p>This page updates by itself. Questions about the delivery? Contact the sender.</p></footer>' +
    `<script type="application/json" id="tr-state">${jsonForScript({ regions, version: view.version })}</script>`;
  return htmlDocument(`Delivery ${view.trackingId}: ${view.statusText}`, body, {
    style: STYLE,
    script: TRACKING_PAGE_SCRIPT,
  });
}
