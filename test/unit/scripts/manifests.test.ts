import { readdirSync } from 'node:fs';
import {
  K8S_DIR,
  NEAR_LIMIT,
  deployedMemoryMb,
  deployedNodeOptions,
  kubernetesBytes,
  REQUEST_HEADROOM,
  memoryFit,
  requestFor,
} from '../../../scripts/lib/manifests';
import { SERVICE_NAMES } from '../../../libs/config';

describe('kubernetesBytes', () => {
  it.each([
    ['512Mi', 512 * 2 ** 20],
    ['1Gi', 2 ** 30],
    ['64Ki', 64 * 1024],
    ['500M', 500e6],
    ['2G', 2e9],
    ['1000', 1000],
  ])('reads %s', (quantity, bytes) => {
    expect(kubernetesBytes(quantity)).toBe(bytes);
  });

  it.each(['', '1.5Gi', '512mi', 'Mi', '-1Gi'])('refuses %j', (quantity) => {
    expect(() => kubernetesBytes(quantity)).toThrow(`not a memory quantity: ${quantity}`);
  });
});

describe('the deployed pods', () => {
  it('has a manifest for every service', () => {
    const files = readdirSync(K8S_DIR);
    for (const name of SERVICE_NAMES) expect(files).toContain(`${name}.yaml`);
  });

  it.each(SERVICE_NAMES)('reads the memory of %s in MiB, its request under its limit', (name) => {
    const { request, limit } = deployedMemoryMb(name);
    expect(request).toBeGreaterThan(0);
    expect(limit).toBeGreaterThan(request as number);
  });

  it('reads the NODE_OPTIONS a pod runs with', () => {
    expect(deployedNodeOptions('order')).toBe('--max-semi-space-size=16 --max-old-space-size=1024');
    expect(deployedNodeOptions('gateway')).toBe(
      '--max-semi-space-size=64 --max-old-space-size=1024',
    );
  });

  it('fails for a service without a manifest', () => {
    expect(() => deployedMemoryMb('nowhere')).toThrow();
  });
});

describe('requestFor', () => {
  it('requests the next 64 Mi at or above 1.1 times the highest measured', () => {
    expect(REQUEST_HEADROOM).toBe(1.1);
    expect(requestFor(100)).toBe(128);
    expect(requestFor(174)).toBe(192); // 191.4
    expect(requestFor(175)).toBe(256); // 192.5
    expect(requestFor(277)).toBe(320); // the gateway's, run Z: 304.7
  });
});

describe('memoryFit', () => {
  const pod = { request: 256, limit: 512 };

  it('has nothing to say of a process within its request', () => {
    expect(memoryFit({ atRestMb: 150, highestMb: 256 }, pod)).toBe('');
  });

  it('says when a process uses more than its request, at rest or under load', () => {
    expect(memoryFit({ atRestMb: 300, highestMb: 320 }, pod)).toBe('at rest above its request');
    expect(memoryFit({ atRestMb: 200, highestMb: 300 }, pod)).toBe('under load above its request');
  });

  it('says when a process comes near its limit, or reaches it', () => {
    const near = NEAR_LIMIT * pod.limit;
    expect(memoryFit({ atRestMb: 200, highestMb: near - 1 }, pod)).toBe(
      'under load above its request',
    );
    expect(memoryFit({ atRestMb: 200, highestMb: near }, pod)).toBe(
      'under load above its request; within 20 % of its limit',
    );
    expect(memoryFit({ atRestMb: 520, highestMb: 600 }, pod)).toBe(
      'at rest above its request; OVER ITS LIMIT',
    );
  });

  it('says nothing of what a pod does not set', () => {
    expect(memoryFit({ atRestMb: 900, highestMb: 900 }, {})).toBe('');
  });
});
