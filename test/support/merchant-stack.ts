import type { ServiceBroker, ServiceSchema } from 'moleculer';
import { createUserWithKey } from './http';
import {
  dropDatabases,
  isolation,
  startClient,
  startNode,
  type Isolation,
  type NodeProcess,
} from './stack';

export interface Merchant {
  key: string;
  userId: string;
}

/** Every service in one process, two merchants with keys, and a broker for internal calls. */
export interface MerchantStack {
  iso: Isolation;
  node: NodeProcess;
  /** Calls internal actions the gateway does not expose. */
  client: ServiceBroker;
  alice: Merchant;
  bob: Merchant;
}

/**
 * Starts the stack before the suite and removes it, databases included, after. The fields
 * are filled in `beforeAll`: read them inside tests, not at the top of the file.
 */
export function useMerchantStack(options: {
  internal: string[];
  env?: Record<string, string>;
  /** Services of the test's own on the client broker (event listeners). */
  own?: ServiceSchema[];
  /** The services the node runs (default all). */
  services?: string;
}): MerchantStack {
  const stack = { iso: isolation() } as MerchantStack;
  beforeAll(async () => {
    stack.node = await startNode({
      services: options.services ?? 'all',
      iso: stack.iso,
      env: options.env,
    });
    [stack.alice, stack.bob] = await Promise.all([
      createUserWithKey(stack.node.url),
      createUserWithKey(stack.node.url),
    ]);
    stack.client = await startClient(stack.iso, options.internal, options.own);
  });
  afterAll(async () => {
    await stack.client?.stop();
    await stack.node?.stop();
    await dropDatabases(stack.iso);
  });
  return stack;
}
