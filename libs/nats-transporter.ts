import { Transporters } from 'moleculer';
import { Events, type NatsConnection } from 'nats';
import { settledWithin } from './at-once';

/** How long a stop waits for NATS to take what is queued before it closes the connection. */
const FLUSH_ON_STOP_MS = 1_000;

/**
 * moleculer's NATS transporter, told when the connection drops and comes back. moleculer's
 * own only logs the NATS client's reconnects: while NATS is down it goes on publishing into
 * the client's reconnect buffer, every call in flight waits out its whole timeout, and a stop
 * waits forever for a flush that needs the server (issue 10, item 11). Here a dropped
 * connection drops the other nodes, rejecting at once the calls waiting for their answers
 * (retried when their kind allows, else 503), makes new calls fail at once (moleculer's
 * BrokerDisconnectedError, also 503) and readiness report it; once reconnected, the node
 * announces itself and asks the others to, as after a first connect.
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
    if (this.connected) await settledWithin(client.flush(), FLUSH_ON_STOP_MS);
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
    this.logger.warn('NATS connection lost; calls fail at once until it is back');
    this.connected = false;
    this.transit.connected = false;
    // Cut off, this node knows nothing of the others: it drops them, as their silence would
    // after the heartbeat timeout, which rejects the calls waiting for their answers and
    // request streams coming from them. Each comes back when it is heard from again, after
    // it reconnected too: a node still reconnecting has no subscription, and NATS would
    // silently drop a call sent to it.
    const { nodes } = this.broker.registry;
    for (const node of nodes.list({ onlyAvailable: true })) {
      if (node.id !== this.broker.nodeID) nodes.disconnected(node.id, true);
    }
  }
}
