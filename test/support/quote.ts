import { request } from './http';

/** A Mode B quote (Ikeja → Lekki, 3 kg, ₦20,000 declared): geo and pricing, no database. */
export const QUOTE = {
  origin: { lat: 6.6018, lon: 3.3515 },
  destination: 'Lekki, Lagos',
  totalWeight: 3,
  totalValue: 20000,
};

/**
 * The gateway may listen before it has discovered pricing and geo: waits for a real quote
 * and returns its total.
 */
export async function waitForQuote(url: string, key: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  let last = '';
  while (Date.now() < deadline) {
    const reply = await request(url, 'POST', '/api/pricing', {
      headers: { 'api-key': key },
      json: QUOTE,
    });
    if (reply.status === 200 && reply.body.data?.costs?.total) return reply.body.data.costs.total;
    last = `${reply.status} ${reply.text}`;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no quote within 30 s; last answer: ${last}`);
}
