/**
 * What the Kubernetes manifests (deploy/k8s) give each service's pod, read the way the
 * benchmarks need it: the NODE_OPTIONS it runs with, and the memory it requests and is
 * limited to, so that a benchmark runs a process as it is deployed and can say whether what
 * it measured fits the pod.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const K8S_DIR = join(__dirname, '..', '..', 'deploy', 'k8s');

interface DeployedContainer {
  env?: { name: string; value?: string }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}

/** The first container of the Deployment in `deploy/k8s/<service>.yaml`. */
function deployedContainer(service: string): DeployedContainer {
  const file = join(K8S_DIR, `${service}.yaml`);
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) {
    const manifest = doc.toJS() as {
      kind?: string;
      spec?: { template?: { spec?: { containers?: DeployedContainer[] } } };
    };
    if (manifest.kind !== 'Deployment') continue;
    return manifest.spec?.template?.spec?.containers?.[0] ?? {};
  }
  throw new Error(`${file} has no Deployment`);
}

/**
 * The NODE_OPTIONS a service's pod runs with (docker-compose.yml sets the same,
 * test/unit/deploy), '' for V8's defaults: a benchmark starts each process as it is deployed,
 * or its memory is not a pod's.
 */
export function deployedNodeOptions(service: string): string {
  const env = deployedContainer(service).env ?? [];
  return env.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
}

const UNITS: Record<string, number> = {
  '': 1,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  K: 1e3,
  M: 1e6,
  G: 1e9,
};

/** `512Mi`, `1Gi`, `500M`: a Kubernetes memory quantity in bytes. */
export function kubernetesBytes(quantity: string): number {
  const [, amount, unit] = /^(\d+)(Ki|Mi|Gi|K|M|G)?$/.exec(quantity) ?? [];
  if (amount === undefined) throw new Error(`not a memory quantity: ${quantity}`);
  return Number(amount) * UNITS[unit ?? ''];
}

/** The memory a service's pod requests and is limited to, in MiB (undefined if unset). */
export function deployedMemoryMb(service: string): { request?: number; limit?: number } {
  const { requests, limits } = deployedContainer(service).resources ?? {};
  const mb = (quantity: string | undefined) =>
    quantity === undefined ? undefined : kubernetesBytes(quantity) / 2 ** 20;
  return { request: mb(requests?.memory), limit: mb(limits?.memory) };
}

/** How far above the most its process was measured to use a pod requests (decision 88). */
export const REQUEST_HEADROOM = 1.1;

/**
 * The memory request, in Mi, for a process measured at `highestMb` at most: the next multiple
 * of 64 Mi at or above REQUEST_HEADROOM times it (decision 88).
 */
export function requestFor(highestMb: number): number {
  return Math.ceil((highestMb * REQUEST_HEADROOM) / 64) * 64;
}

/** How near its limit a process may come before a benchmark says so. */
export const NEAR_LIMIT = 0.8;

/**
 * What a benchmark says of a process's measured RSS against its pod's memory: above what the
 * pod requests (the scheduler reserves less than it uses), near or over its limit (the kernel
 * kills it there), or nothing to say ('').
 */
export function memoryFit(
  measured: { atRestMb: number; highestMb: number },
  pod: { request?: number; limit?: number },
): string {
  const notes: string[] = [];
  if (pod.request !== undefined && measured.atRestMb > pod.request) {
    notes.push('at rest above its request');
  } else if (pod.request !== undefined && measured.highestMb > pod.request) {
    notes.push('under load above its request');
  }
  if (pod.limit !== undefined && measured.highestMb >= pod.limit) notes.push('OVER ITS LIMIT');
  else if (pod.limit !== undefined && measured.highestMb >= NEAR_LIMIT * pod.limit) {
    notes.push(`within ${Math.round((1 - NEAR_LIMIT) * 100)} % of its limit`);
  }
  return notes.join('; ');
}
