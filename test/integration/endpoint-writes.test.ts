import { randomUUID } from 'node:crypto';
import type mongoose from 'mongoose';
import { defineWebhookModels, WebhookStore } from '../../services/webhook/store';
import { isolation, openServiceDatabase } from '../support/stack';
import { endpointRecord } from '../support/webhook-records';

/**
 * An endpoint's writers (its owner's enable and rotation, dispatchers' failures, successes and
 * disable) change different fields of one document, and FerretDB writes a change as the whole
 * document it read: on the real server, two at once must both stand (decision 132).
 */
const iso = isolation();
let conn: mongoose.Connection;
let models: ReturnType<typeof defineWebhookModels>;
let store: WebhookStore;

beforeAll(async () => {
  conn = await openServiceDatabase(iso, 'webhook_writes');
  models = defineWebhookModels(conn);
  await Promise.all(Object.values(models).map((model) => model.createIndexes()));
  store = new WebhookStore(() => models);
});

afterAll(async () => {
  await conn?.dropDatabase();
  await conn?.close();
});

it('keeps an enable and a rotation written at once, every time', async () => {
  const endpoint = endpointRecord(randomUUID());
  await store.insertEndpoint(endpoint);
  const enabled = { status: 'ACTIVE' as const, disabledAt: null, disabledReason: null };
  for (let round = 2; round < 22; round++) {
    await models.Endpoint.updateOne(
      { _id: endpoint._id },
      { $set: { status: 'DISABLED', disabledAt: new Date(), disabledReason: 'failing' } },
    );
    const written = await Promise.all([
      store.updateEndpoint(endpoint._id, enabled),
      store.updateEndpoint(endpoint._id, { secretVersion: round }),
    ]);
    expect(written).toEqual([true, true]);
    expect(await store.endpoint(endpoint._id)).toMatchObject({
      ...enabled,
      secretVersion: round,
    });
  }
});
