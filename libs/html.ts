import { createHash } from 'node:crypto';

/**
 * The few HTML pages the platform serves to people (the sandbox checkout, its error pages):
 * no scripts, inline styles only, every interpolated text escaped here.
 */

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text made safe for an HTML element or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

/**
 * The security headers of every page: nothing but inline styles may load, forms post only
 * to us, no framing (clickjacking a Pay button: `frame-ancestors`, and `X-Frame-Options` for
 * older browsers), no referrer (the URL is a capability), and
 * nothing cached (the page shows a state that changes).
 */
export const SECURE_PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
};

/**
 * The headers of the pages a link opens (a delivery's tracking, a checkout, their errors): a
 * link shared where crawlers read is kept out of their index, names, places and all.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  ...SECURE_PAGE_HEADERS,
  'X-Robots-Tag': 'noindex, nofollow, noarchive',
};

const STYLE =
  'body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222}' +
  'h1{font-size:1.4rem}.amount{font-size:2rem;font-weight:600;margin:.5rem 0}' +
  'form{display:inline-block;margin-right:.5rem}button{font-size:1rem;padding:.6rem 1.4rem;cursor:pointer}' +
  '.status{padding:.6rem 1rem;border-radius:.3rem;background:#f2f2f2}';

/**
 * A whole page around `body`, which must already be markup built with `escapeHtml` for
 * every text it holds; the title is escaped here. A page of its own may bring its `style`
 * (instead of the common one) and a `script`, which its Content-Security-Policy must allow
 * by hash (`scriptHash`).
 */
export function htmlDocument(
  title: string,
  body: string,
  own: { style?: string; script?: string } = {},
): string {
  const script = own.script === undefined ? '' : `<script>${own.script}</script>`;
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${escapeHtml(title)}</title><style>${own.style ?? STYLE}</style></head>` +
    `<body>${body}${script}</body></html>`
  );
}

/** The CSP source that allows exactly this inline script: `'sha256-…'`. */
export function scriptHash(script: string): string {
  return `'sha256-${createHash('sha256').update(script, 'utf8').digest('base64')}'`;
}

/** JSON inside a `<script type="application/json">`: no `</script>` can end it early. */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

/** The page of an error: its status and message, for a person rather than a program. */
export function errorPage(status: number, message: string): string {
  return htmlDocument(
    `Error ${status}`,
    `<h1>Error ${status}</h1><p class="status">${escapeHtml(message)}</p>`,
  );
}
