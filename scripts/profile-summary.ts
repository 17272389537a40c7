/**
 * Where a process's CPU went, from a `node --cpu-prof` profile (`npm run bench:gateway --
 * --profile DIR`, `npm run bench:pricing -- --profile DIR`): self time by package or by file
 * of ours, as shares of the busy samples. Start-up (module loading, the geo gazetteer's
 * build) is left out, so that what is shown is the cost of serving.
 *
 *   scripts/tsx scripts/profile-summary.ts DIR/CPU.….cpuprofile [--top N]
 */
import { readFileSync } from 'node:fs';
import { option, showHelpIfAsked } from './bench-support';

showHelpIfAsked(`
scripts/tsx scripts/profile-summary.ts PROFILE.cpuprofile [--top N]
Self time by package (node_modules), by file of ours, or by Node's own functions, as shares
of the busy samples after start-up; --top N lines (default 25).`);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

/** Frames whose presence on the stack marks a sample as start-up, not serving. */
const START_UP = new Set(['wrapModuleLoad', 'warmGazetteer', 'started']);
const IDLE = new Set(['(idle)', '(program)']);

/** What a frame is counted under: a package, a file of ours, or Node's own function. */
export function bucketOf({ functionName, url }: ProfileNode['callFrame']): string {
  const inPackage = url.split('/node_modules/');
  if (inPackage.length > 1) {
    const [scopeOrName, name] = inPackage[inPackage.length - 1].split('/');
    return scopeOrName.startsWith('@') ? `${scopeOrName}/${name}` : scopeOrName;
  }
  if (url.startsWith('file://') || url.startsWith('/')) {
    return url.split('/').slice(-2).join('/');
  }
  return `node: ${url || functionName}`;
}

/** Shares of serving samples by bucket, largest first. */
export function summarise(profile: Profile): { bucket: string; share: number }[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  const counts = new Map<string, number>();
  let serving = 0;
  for (const id of profile.samples) {
    const node = byId.get(id);
    if (!node || IDLE.has(node.callFrame.functionName)) continue;
    let startUp = false;
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      if (START_UP.has(byId.get(at)?.callFrame.functionName ?? '')) startUp = true;
    }
    if (startUp) continue;
    serving++;
    const bucket = bucketOf(node.callFrame);
    counts.set(bucket, (counts.get(bucket) ?? 0) + 1);
  }
  return [...counts]
    .map(([bucket, count]) => ({ bucket, share: count / Math.max(1, serving) }))
    .sort((a, b) => b.share - a.share);
}

if (require.main === module) {
  const file = process.argv[2];
  if (!file || file.startsWith('--')) {
    console.error('Give a .cpuprofile file; --help says more');
    process.exit(2);
  }
  const top = option('top', 25);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  for (const { bucket, share } of summarise(profile).slice(0, top)) {
    console.log(`${(share * 100).toFixed(1).padStart(5)} %  ${bucket}`);
  }
}
