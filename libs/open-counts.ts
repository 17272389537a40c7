/** Moves `key`'s count by `by`, dropping it at zero (the maps hold only what is open). */
export function countIn(counts: Map<string, number>, key: string, by: 1 | -1): void {
  const left = (counts.get(key) ?? 0) + by;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}
