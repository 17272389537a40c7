import { unsupportedNode } from '../../../libs/runtime';
import { engines } from '../../../package.json';

describe('unsupportedNode', () => {
  it('accepts the minimum and anything later', () => {
    for (const running of ['v22.12.0', 'v22.12.1', 'v22.13.0', 'v23.0.0', 'v24.21.0', 'v100.0.0']) {
      expect(unsupportedNode(running, '22.12')).toBeUndefined();
    }
  });

  it('refuses an older Node, naming both versions and what to do', () => {
    expect(unsupportedNode('v20.20.2', '22.12')).toBe(
      'Node 22.12 or later is needed; this is Node 20.20.2. Install the version in .nvmrc (nvm install) or use the image',
    );
    for (const running of ['v22.11.9', 'v22.0.0', 'v18.20.4']) {
      expect(unsupportedNode(running, '22.12')).toContain('Node 22.12 or later is needed');
    }
  });

  it("reads the bound from package.json's engines, which this Node meets", () => {
    expect(engines.node).toMatch(/^>=\s*\d+(\.\d+)*$/);
    expect(unsupportedNode()).toBeUndefined();
    expect(unsupportedNode('v1.0.0')).toContain(
      `Node ${engines.node.replace(/^>=\s*/, '')} or later`,
    );
  });
});
