import { Transporters } from 'moleculer';
import { Events, type NatsConnection } from 'nats';

/** How long a stop waits for NATS to take what is queued before it closes the connection. */
const FLUSH_ON_STOP_MS = 1_000;

/**
 * moleculer's NATS transporter, told when the connection drops and comes back. moleculer's
 * own only logs the NATS client's reconnects: while NATS is down it goes on publishing into
 * the client's reconnect buffer, every call in flight waits out its whole timeout, and a stop
 * waits forever for a flush that needs the server (issue 10, item 11). Here a dropped
 * connection rejects at once the calls waiting for answers (retried when their kind allows,
 * else 503), makes new calls fail at once (moleculer's BrokerDisconnectedError, also 503)
 * and readiness report it; once reconnected, the node announces itself again as after a
 * first connect, so that peers that dropped it meanwhile route to it at once.
 */
export class NatsTransporter extends Transporters.NATS {
  override async connect(): Promise<void> {
    await super.connect();
    void this.follow(this.client as NatsConnection);
  }

  override async disconnect(): Promise<void> {
    const client = this.client as NatsConnection | null;
    if (!client) return;
    this.client = null;
    if (this.connected) {
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = new Promise<void>(
        (resolve) => (timer = setTimeout(resolve, FLUSH_ON_STOP_MS)),
      );
      await Promise.race([client.flush().catch(() => undefined), gaveUp]);
      clearTimeout(timer);
    }
    this.connected = false;
    await client.close();
  }

  /** Follows one connection's status until it is closed. */
  private async follow(client: NatsConnection): Promise<void> {
    for await (const status of client.status()) {
      if (status.type === Events.Disconnect) this.dropped();
      else if (status.type === Events.Reconnect && this.client === client) {
        this.logger.info('NATS connection is back; announcing this node again');
        // Peers learn of this node by its heartbeats anyway; the announcement only hastens it.
        await this.onConnected(true).catch((err: unknown) =>
          this.logger.warn('could not announce this node after reconnecting', err),
        );
      }
    }
  }

  private dropped(): void {
    if (!this.connected) return;
    this.logger.warn('NATS connection lost; calls in flight fail, new ones fail until it is back');
    this.connected = false;
    this.transit.connected = false;
    // Requests waiting for an answer, and request streams coming from any node, are cut off.
    const nodes = new Set<string>(this.broker.registry.nodes.list({}).map((n) => n.id));
    for (const request of this.transit.pendingRequests.values()) nodes.add(request.nodeID);
    nodes.delete(this.broker.nodeID);
    for (const nodeID of nodes) this.transit.removePendingRequestByNodeID(nodeID);
  }
}
