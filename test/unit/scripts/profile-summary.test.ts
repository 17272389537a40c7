import { bucketOf, summarise } from '../../../scripts/profile-summary';

const frame = (functionName: string, url = '') => ({ functionName, url });

describe('profile summary', () => {
  it('counts a frame under its package, a file of ours, or Node', () => {
    expect(bucketOf(frame('x', 'file:///w/node_modules/moleculer/src/a.js'))).toBe('moleculer');
    expect(bucketOf(frame('x', 'file:///w/node_modules/@hapi/hoek/lib/c.js'))).toBe('@hapi/hoek');
    expect(bucketOf(frame('x', 'file:///w/services/gateway/http.ts'))).toBe('gateway/http.ts');
    expect(bucketOf(frame('writeBuffer'))).toBe('node: writeBuffer');
    expect(bucketOf(frame('end', 'node:_http_outgoing'))).toBe('node: node:_http_outgoing');
  });

  it('shares the serving samples by self time, leaving out idle time and start-up', () => {
    const nodes = [
      { id: 1, callFrame: frame('(root)'), children: [2, 3, 4, 6] },
      { id: 2, callFrame: frame('(idle)') },
      { id: 3, callFrame: frame('handle', 'file:///w/services/gateway/edge.ts'), children: [5] },
      { id: 4, callFrame: frame('wrapModuleLoad', 'node:internal/modules/cjs/loader') },
      { id: 5, callFrame: frame('call', 'file:///w/node_modules/moleculer/src/b.js') },
      { id: 6, callFrame: frame('(garbage collector)') },
    ];
    const samples = [2, 2, 2, 3, 5, 5, 5, 4, 4, 6];
    expect(summarise({ nodes, samples })).toEqual([
      { bucket: 'moleculer', share: 0.6 },
      { bucket: 'gateway/edge.ts', share: 0.2 },
      { bucket: 'node: (garbage collector)', share: 0.2 },
    ]);
  });
});
