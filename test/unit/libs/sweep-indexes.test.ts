import mongoose from 'mongoose';
import { defineOrderModels } from '../../../services/order/store';
import { defineCheckoutModels } from '../../../services/payment/checkout-store';

/**
 * The periodic sweeps' reads, on MongoDB (FerretDB reads by `_id` alone, and these lists are
 * the small ones decision 63 accepts a scan of): each walks an index in the order it sorts by,
 * rather than reading the collection and sorting it in memory every few seconds.
 */
describe('the indexes of the sweeps’ reads', () => {
  const connection = mongoose.createConnection();
  const order = defineOrderModels(connection);
  const checkout = defineCheckoutModels(connection);
  const keysOf = (model: mongoose.Model<never>) =>
    model.schema.indexes().map(([fields]) => JSON.stringify(fields));

  it.each([
    ['the transitions left to project', order.TransitionWork, { at: 1, _id: 1 }],
    ['the running simulations', order.Simulation, { since: 1, _id: 1 }],
    ['the notification outbox’s queue', order.NotificationPlace, { createdAt: 1, _id: 1 }],
    ['the notification outbox’s due places', order.NotificationPlace, { dueAt: 1 }],
    ['the checkouts waiting for an outcome', checkout.CheckoutPending, { expiresAt: 1 }],
    ['the outcomes not yet acknowledged', checkout.CheckoutOutbox, { nextAttemptAt: 1 }],
  ] as const)('%s', (_name, model, fields) => {
    expect(keysOf(model as unknown as mongoose.Model<never>)).toContain(JSON.stringify(fields));
  });

  afterAll(() => connection.close());
});
