import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import type { Page } from 'playwright-core';
import { asCourier, courierAt, offerOf, type Courier } from '../support/couriers';
import { launchChromium } from '../support/checkout';
import {
  cancelDelivery,
  credit,
  DESTINATION,
  getDelivery,
  proofCodeSent,
  ORIGIN,
  requestDelivery,
  savePackage,
  type Party,
} from '../support/deliveries';
import { eventually } from '../support/eventually';
import { createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';

/**
 * The public tracking page (issue 14) through the gateway, every service in one process on
 * the real FerretDB, NATS and Redis: a delivery driven to the door by the courier API while
 * the page, in headless Chromium, follows it live over server-sent events.
 */
const stack = useMerchantStack({
  internal: ['order'],
  env: {
    MATCHING_OFFER_TIMEOUT_MS: '20000',
    MATCHING_SWEEP_INTERVAL_MS: '200',
    ORDER_SWEEP_INTERVAL_MS: '500',
    COURIER_LOCATION_FLUSH_MS: '300',
    TRACKING_REFRESH_MS: '500',
    TRACKING_HEARTBEAT_MS: '1000',
    TRACKING_MAX_STREAMS: '5',
    TRACKING_MAX_STREAMS_PER_ADDRESS: '3',
    // The caps are per client address: the test speaks for several through X-Forwarded-For.
    TRUST_PROXY_HOPS: '1',
  },
});
const base = () => stack.node.url;

/** Everything the page or the stream must never show: contacts, last names, streets. */
const PRIVATE = [
  DESTINATION.contactPhone,
  DESTINATION.contactEmail,
  'Obi',
  'Bakare',
  '+234',
  '@',
  'Admiralty',
  'Allen Avenue',
];

const expectNothingPrivate = (text: string) => {
  for (const secret of PRIVATE) expect(text).not.toContain(secret);
};

/** A wallet-paid delivery from ORIGIN, its tracking id, and a courier near the pickup. */
async function trackedDelivery() {
  const merchant: Party = await createUserWithKey(base());
  await credit(base(), merchant, 100_000);
  const packageId = await savePackage(base(), merchant);
  const created = await requestDelivery(base(), merchant, [packageId], {
    originContactName: 'Sola Adeyemi',
    originContactPhone: '+2348099990000',
    originContactEmail: 'sola@example.com',
  });
  expect(created.status).toBe(201);
  const deliveryId = created.body.data.deliveryId as string;
  const trackingId = (await getDelivery(base(), merchant, deliveryId)).body.data
    .trackingId as string;
  return { merchant, deliveryId, trackingId };
}

/** A raw event stream: what came so far, and a way to leave. */
interface Stream {
  status: number;
  headers: IncomingMessage['headers'];
  text: () => string;
  close: () => void;
}

function openStream(path: string, forwardedFor?: string): Promise<Stream> {
  const url = new URL(path, base());
  return new Promise((resolve, reject) => {
    let body = '';
    const req: ClientRequest = httpRequest(
      url,
      { headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {} },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('error', () => undefined);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: () => body,
          close: () => req.destroy(),
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The states a stream sent so far, parsed. */
const statesOf = (text: string) =>
  [...text.matchAll(/^event: state\ndata: (.*)$/gm)].map(
    (m) => JSON.parse(m[1]) as { view: { status: string; courier: unknown } },
  );

/**
 * Runs in the browser (the test's compiler knows no DOM, so it travels as text): the centre
 * of the courier marker's amber (#f59e0b) pixels in a PNG, decoded by Chromium itself.
 */
const AMBER_CENTRE = `async (data) => {
  const img = new Image();
  img.src = 'data:image/png;base64,' + data;
  await img.decode();
  const canvas = document.createElement('canvas');
  canvas.width = img.width;
  canvas.height = img.height;
  const g = canvas.getContext('2d');
  g.drawImage(img, 0, 0);
  const px = g.getImageData(0, 0, img.width, img.height).data;
  let sx = 0, sy = 0, count = 0;
  for (let i = 0; i < px.length; i += 4) {
    if (Math.abs(px[i] - 245) > 30 || Math.abs(px[i + 1] - 158) > 30 || px[i + 2] > 60) continue;
    sx += (i / 4) % img.width;
    sy += Math.floor(i / 4 / img.width);
    count++;
  }
  return { x: sx / count, y: sy / count, count };
}`;

/** Where the courier marker is on a screenshot of the page's map. */
async function markerCentre(page: Page): Promise<{ x: number; y: number; count: number }> {
  const png = await page.locator('#tr-map svg').screenshot();
  const probe = await page.context().newPage();
  try {
    return await probe.evaluate(`(${AMBER_CENTRE})(${JSON.stringify(png.toString('base64'))})`);
  } finally {
    await probe.close();
  }
}

describe('GET /track/:trackingId', () => {
  it('answers 404 pages, and 404 envelopes on the stream, for ids we never issued', async () => {
    for (const id of ['P2P-000000000000', 'not-a-tracking-id', `P2P-${'A'.repeat(100)}`]) {
      const page = await fetch(`${base()}/track/${id}`);
      expect(page.status).toBe(404);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('x-robots-tag')).toBe('noindex, nofollow, noarchive');
      const html = await page.text();
      expect(html).toContain('No delivery has this tracking number');
      expect(html).toContain('ask the sender');
      expectErrorEnvelope(
        await request(base(), 'GET', `/track/${id}/events`),
        404,
        /No delivery has this tracking number/,
      );
    }
    const doc = (await request(base(), 'GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths['/track/{trackingId}/events'].get.responses)).toEqual(
      expect.arrayContaining(['200', '404', '429', '503']),
    );
    expect(doc.paths['/track/{trackingId}'].get.responses['200'].content).toHaveProperty(
      'text/html',
    );
    // A page's errors are pages (as the sandbox checkout's).
    const post = await fetch(`${base()}/track/P2P-000000000000`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    expect(post.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('serves the state at load, without JavaScript, with a CSP that loads nothing from elsewhere', async () => {
    const { merchant, deliveryId, trackingId } = await trackedDelivery();
    // Lower case, as someone may type it from a label.
    const res = await fetch(`${base()}/track/${trackingId.toLowerCase()}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = res.headers.get('content-security-policy') as string;
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(csp).not.toMatch(/https?:|\*|'unsafe-eval'/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    // A link shared where crawlers read stays out of their index.
    expect(res.headers.get('x-robots-tag')).toBe('noindex, nofollow, noarchive');
    const html = await res.text();
    expect(html).toContain(trackingId);
    expect(html).toContain('Your delivery is booked');
    expect(html).toContain('Your delivery from Sola for Ada');
    expect(html).toMatch(/<main>/);
    expect(html).toMatch(/role="status" aria-live="polite"/);
    expect(html).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
    expectNothingPrivate(html.replace(trackingId, ''));
    // A link tapped in an app, or shortened, carries parameters of theirs: the page opens.
    // Even one named as the path's own (`trackingId`): the path's stands.
    const tapped = await fetch(
      `${base()}/track/${trackingId}?fbclid=IwAR0x&utm_source=sms&trackingId=P2P-000000000000`,
    );
    expect(tapped.status).toBe(200);
    expect(await tapped.text()).toContain('Your delivery is booked');
    // Cancelled: out of the way of the next test's courier, and told at load.
    expect((await cancelDelivery(base(), merchant, deliveryId)).status).toBe(201);
    const cancelled = await (await fetch(`${base()}/track/${trackingId}`)).text();
    expect(cancelled).toContain('This delivery was cancelled by the sender');
  });

  it('caps the streams per address (429) and in total (503), and frees a slot when a page leaves', async () => {
    const { merchant, deliveryId, trackingId } = await trackedDelivery();
    const path = `/track/${trackingId}/events`;
    const mine = await Promise.all([1, 2, 3].map(() => openStream(path, '203.0.113.1')));
    expect(mine.map((s) => s.status)).toEqual([200, 200, 200]);
    expect(mine[0].headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const fourth = await request(base(), 'GET', path, {
      headers: { 'x-forwarded-for': '203.0.113.1' },
    });
    expectErrorEnvelope(fourth, 429, /Too many live tracking pages open from your address/);
    expect(fourth.headers.get('retry-after')).toBe('30');
    const others = await Promise.all([1, 2].map(() => openStream(path, '203.0.113.2')));
    expect(others.map((s) => s.status)).toEqual([200, 200]);
    expectErrorEnvelope(
      await request(base(), 'GET', path, { headers: { 'x-forwarded-for': '203.0.113.3' } }),
      503,
      /reload the page in a minute/,
    );
    // Every stream got the state at once, and heartbeats while nothing changed.
    await eventually(() => {
      for (const s of [...mine, ...others]) {
        expect(statesOf(s.text())).toHaveLength(1);
        expect(s.text()).toContain(': heartbeat');
      }
    });
    mine[0].close();
    await eventually(async () => {
      const again = await openStream(path, '203.0.113.1');
      expect(again.status).toBe(200);
      mine[0] = again;
    });
    // The delivery ends: every stream is told, then closed by the gateway.
    expect((await cancelDelivery(base(), merchant, deliveryId)).status).toBe(201);
    await eventually(() => {
      for (const s of [...mine, ...others]) {
        expect(s.text()).toMatch(/event: end\ndata: \{"status":"CANCELLED"\}\n\n$/);
        expect(statesOf(s.text()).at(-1)?.view.status).toBe('CANCELLED');
      }
    });
    for (const s of [...mine, ...others]) s.close();
  });
});

describe('the tracking page in headless Chromium, following a delivery to the door', () => {
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('shows each step live, moves the courier marker, fits 375 px, and shows no contact data', async () => {
    const courier: Courier = await courierAt(base(), {
      lat: ORIGIN.lat + 0.01,
      lon: ORIGIN.lon - 0.01,
    });
    const { deliveryId, trackingId } = await trackedDelivery();
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 375, height: 740 });
    const loaded = await page.goto(`${base()}/track/${trackingId}`);
    expect(loaded?.status()).toBe(200);
    const statusOf = () => page.locator('#tr-status [data-status]').getAttribute('data-status');
    expect(await statusOf()).toBe('REQUEST_CREATED');
    expect(await page.locator('#tr-courier').innerText()).toContain('No courier yet');
    // Landmarks and headings a screen reader navigates by.
    expect(await page.locator('header h1').count()).toBe(1);
    expect(await page.locator('main section h2').count()).toBe(4);
    // Mobile first: nothing wider than the phone's screen.
    const overflow = () =>
      page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(await overflow()).toBeLessThanOrEqual(0);

    // A stream of our own, next to the page, to read what it carries.
    const stream = await openStream(`/track/${trackingId}/events`);
    expect(stream.status).toBe(200);
    const step = (name: string, json?: unknown) =>
      asCourier(base(), courier, 'POST', `/courier/deliveries/${deliveryId}/${name}`, json);
    const codeSent = (purpose: 'COLLECTION_CODE' | 'DELIVERY_CODE') =>
      proofCodeSent(base(), deliveryId, purpose);
    const liveStatus = (status: string) =>
      eventually(async () => expect(await statusOf()).toBe(status), { timeout: 10_000 });

    // Accepted: the page learns it without a reload, with the courier's first name and vehicle.
    const offer = await offerOf(base(), courier);
    expect(offer.deliveryId).toBe(deliveryId);
    expect(
      (await asCourier(base(), courier, 'POST', `/courier/offers/${offer.id}/accept`)).status,
    ).toBe(200);
    await liveStatus('COURIER_ASSIGNED');
    const card = await page.locator('#tr-courier').innerText();
    expect(card).toContain('Tunde');
    expect(card).toContain('Red Bajaj Boxer');
    expect(card).toMatch(/RUN-\d+-\d+/);
    await eventually(
      async () =>
        // A window that crosses midnight in the city names each end's day too.
        expect(await page.locator('#tr-eta').innerText()).toMatch(
          /Expected between (\d{1,2} [A-Z][a-z]{2,3}, )?\d\d:\d\d and (\d{1,2} [A-Z][a-z]{2,3}, )?\d\d:\d\d/,
        ),
      { timeout: 10_000 },
    );
    const before = await eventually(async () => {
      const found = await markerCentre(page);
      expect(found.count).toBeGreaterThan(20);
      return found;
    });

    // The courier moves to half-way between the stops (from the drawing's corner to its
    // middle): the marker moves on the screen, still without a reload.
    const moved = await asCourier(base(), courier, 'POST', '/courier/location', {
      lat: (ORIGIN.lat + DESTINATION.lat) / 2,
      lon: (ORIGIN.lon + DESTINATION.lon) / 2,
    });
    expect(moved.status).toBe(200);
    await eventually(
      async () => {
        const after = await markerCentre(page);
        expect(Math.hypot(after.x - before.x, after.y - before.y)).toBeGreaterThan(10);
      },
      { timeout: 10_000, interval: 200 },
    );
    // Still the page first loaded: no reload, no second navigation.
    expect(await page.evaluate<number>("performance.getEntriesByType('navigation').length")).toBe(
      1,
    );

    expect((await step('arrived-at-pickup')).status).toBe(200);
    await liveStatus('ARRIVED_AT_PICKUP');
    expect((await step('collected', { code: await codeSent('COLLECTION_CODE') })).status).toBe(200);
    expect((await step('in-transit')).status).toBe(200);
    await liveStatus('IN_TRANSIT');
    expect(await page.locator('#tr-status').innerText()).toContain('on its way to you');
    expect(await page.locator('#tr-steps li').allInnerTexts()).toEqual([
      expect.stringMatching(/^Booked/),
      expect.stringMatching(/^Courier assigned/),
      expect.stringMatching(/^Courier at the pickup/),
      expect.stringMatching(/^Collected/),
      expect.stringMatching(/^On the way/),
    ]);
    expect(await page.locator('#tr-steps [aria-current=step]').innerText()).toMatch(/^On the way/);
    expect(await overflow()).toBeLessThanOrEqual(0);
    const midway = await page.screenshot({ fullPage: true });
    expect(midway.length).toBeGreaterThan(1000);

    expect((await step('arrived-at-dropoff')).status).toBe(200);
    expect((await step('delivered', { code: await codeSent('DELIVERY_CODE') })).status).toBe(200);
    await liveStatus('DELIVERED');
    // Over: no courier on the map, the stream ended.
    expect(await page.locator('#tr-map .courier-marker').count()).toBe(0);
    await eventually(() =>
      expect(stream.text()).toMatch(/event: end\ndata: \{"status":"DELIVERED"\}/),
    );
    const seen = statesOf(stream.text()).map((s) => s.view.status);
    expect(seen[0]).toBe('REQUEST_CREATED');
    expect(seen.at(-1)).toBe('DELIVERED');

    // Nothing private anywhere: the page as it stands, its markup, and everything streamed.
    expectNothingPrivate(await page.locator('body').innerText());
    expectNothingPrivate((await page.content()).replaceAll(trackingId, ''));
    expectNothingPrivate(stream.text().replaceAll(trackingId, ''));
    stream.close();
    await page.close();
  });
});
