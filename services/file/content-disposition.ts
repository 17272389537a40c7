/**
 * `Content-Disposition: attachment` for a download (RFC 6266). The quoted `filename` is a
 * plain-ASCII fallback: quotes, backslashes, percent signs, path separators and anything
 * outside printable ASCII become `_`, so no browser can read it two ways. When that changed
 * the name, `filename*=UTF-8''…` (RFC 8187) carries the exact one.
 */
export function contentDisposition(filename: string): string {
  const name = baseName(filename) || 'download';
  const fallback = name.replace(/[^\x20-\x7e]|["\\%/]/g, '_');
  const header = `attachment; filename="${fallback}"`;
  return fallback === name ? header : `${header}; filename*=UTF-8''${encodeRfc8187(name)}`;
}

/** The name without any directory part and without control characters. */
function baseName(filename: string): string {
  const last = filename.split(/[/\\]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex -- control characters are dropped on purpose
  return last.replace(/[\x00-\x1f\x7f]/g, '').trim();
}

/** Percent-encodes everything but RFC 8187 attr-char. */
function encodeRfc8187(value: string): string {
  // A lone surrogate cannot be encoded; it becomes U+FFFD, as String#toWellFormed does.
  const wellFormed = value.replace(
    /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g,
    '\uFFFD',
  );
  return encodeURIComponent(wellFormed).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
