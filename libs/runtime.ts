import { engines } from '../package.json';

/** A version's numbers, `v22.12.0` or `22.12` alike; missing parts are 0. */
function numbersOf(version: string): number[] {
  return version
    .replace(/^v/, '')
    .split('.')
    .map((part) => Number.parseInt(part, 10) || 0);
}

/**
 * Why this Node cannot run Waybill, or undefined when it can: `minimum` is the `>=` bound of
 * package.json's `engines.node`. An older Node starts, then fails where it lacks what we use
 * (an upload needs `ArrayBuffer.prototype.transfer`, Node 21 and later), so the server refuses
 * to start instead, saying what to install.
 */
export function unsupportedNode(
  running: string = process.version,
  minimum: string = engines.node.replace(/^>=\s*/, ''),
): string | undefined {
  const have = numbersOf(running);
  const need = numbersOf(minimum);
  for (let i = 0; i < Math.max(have.length, need.length); i++) {
    const [a, b] = [have[i] ?? 0, need[i] ?? 0];
    if (a > b) return undefined;
    if (a < b) {
      return `Node ${minimum} or later is needed; this is Node ${running.replace(/^v/, '')}. Install the version in .nvmrc (nvm install) or use the image`;
    }
  }
  return undefined;
}
