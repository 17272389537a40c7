import { startNode, type Isolation, type NodeProcess } from './stack';

type Env = Record<string, string>;

/**
 * The environment of a file stack's processes: the file service's take `file` (S3, its slots),
 * the gateway's `gateway` (its Redis, the per-key caps), every one `common`, and all of them a
 * CDN_BASE_URL unless `common` names one.
 */
export interface FileStackEnv {
  common?: Env;
  file?: Env;
  gateway?: Env;
}

const commonEnv = (env: FileStackEnv): Env => ({
  CDN_BASE_URL: 'https://cdn.waybill.test',
  ...env.common,
});

/** The file service on a node of its own beside `gateways` nodes of the gateway (and accounts). */
export async function startFileStack(iso: Isolation, env: FileStackEnv, gateways = 1) {
  const common = commonEnv(env);
  const nodes = await Promise.all([
    startNode({ services: 'file', iso, env: { ...common, ...env.file } }),
    ...Array.from({ length: gateways }, () =>
      startNode({ services: 'gateway,account', iso, env: { ...common, ...env.gateway } }),
    ),
  ]);
  const [file, ...gatewayNodes] = nodes;
  return { file, gateways: gatewayNodes, all: nodes };
}

/** A file stack as a test of either topology sees it. */
export interface FileTopologyStack {
  /** The gateway's base URL. */
  url: string;
  /** The gateway's metrics: its answers, 499s included. */
  gatewayOps: string;
  /** The file service's metrics: its slots. */
  fileOps: string;
  nodes: NodeProcess[];
}

export type FileTopology = (iso: Isolation, env: FileStackEnv) => Promise<FileTopologyStack>;

/**
 * The two ways a transfer reaches the file service, for `describe.each`: in the gateway's
 * process (the request is the action's stream), and on a node of its own (tickets and the
 * transfer port).
 */
export const fileTopologies: [string, FileTopology][] = [
  [
    'the file service in the gateway’s process',
    async (iso, env) => {
      const node = await startNode({
        services: 'all',
        iso,
        env: { ...commonEnv(env), ...env.file, ...env.gateway },
      });
      return { url: node.url, gatewayOps: node.opsUrl, fileOps: node.opsUrl, nodes: [node] };
    },
  ],
  [
    'the file service on its own node',
    async (iso, env) => {
      const { file, gateways, all } = await startFileStack(iso, env);
      return {
        url: gateways[0].url,
        gatewayOps: gateways[0].opsUrl,
        fileOps: file.opsUrl,
        nodes: all,
      };
    },
  ],
];
