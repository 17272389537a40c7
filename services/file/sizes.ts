/**
 * A size as a limit's message states it: in the largest binary unit that divides it exactly
 * ("20 MB", "1 GB", "512 KB"), else in bytes ("10000 bytes"), never rounded.
 */
export function readableBytes(n: number): string {
  const units: [number, string][] = [
    [1024 ** 3, 'GB'],
    [1024 ** 2, 'MB'],
    [1024, 'KB'],
  ];
  for (const [size, unit] of units) {
    if (n >= size && n % size === 0) return `${n / size} ${unit}`;
  }
  return `${n} bytes`;
}
