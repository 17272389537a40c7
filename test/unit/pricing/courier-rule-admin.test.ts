import { randomUUID } from 'node:crypto';
import Joi from '../../../libs/joi';
import { VALIDATION_OPTIONS } from '../../../libs/validation';
import { createCourierRuleActions } from '../../../services/pricing/courier-rule-admin';

type Handler = (ctx: unknown) => Promise<unknown>;

type Doc = Record<string, unknown> & { _id: string };

/** Lets every other task waiting take its step first, as a database round trip would. */
const roundTrip = () => new Promise((resolve) => setImmediate(resolve));

const matches = (doc: Doc, filter: Record<string, unknown> = {}) =>
  Object.entries(filter).every(([field, value]) => doc[field] === value);

/**
 * One collection as FerretDB 1.24 keeps it: a unique `_id`, every call a round trip, and an
 * update that writes the whole document from the copy it read (decision 99), so that two
 * updates of one document at once keep one's fields.
 */
function collection(docs: Doc[] = []) {
  const query = <T>(result: () => T) => {
    const chain = {
      sort: () => chain,
      skip: () => chain,
      limit: () => chain,
      lean: async () => (await roundTrip(), result()),
    };
    return chain;
  };
  return {
    docs,
    find: (filter?: Record<string, unknown>) =>
      query(() => docs.filter((d) => matches(d, filter)).map((d) => structuredClone(d))),
    findById: (id: string) => query(() => structuredClone(docs.find((d) => d._id === id) ?? null)),
    findOneAndUpdate: (filter: { _id: string }, update: { $set: Record<string, unknown> }) =>
      query(async () => {
        const read = docs.find((d) => d._id === filter._id);
        if (!read) return null;
        const copy = structuredClone(read);
        await roundTrip();
        const written = { ...copy, ...update.$set, updatedAt: new Date() };
        // Written whole, where it was or again if it was deleted meanwhile.
        const at = docs.findIndex((d) => d._id === filter._id);
        docs.splice(at < 0 ? docs.length : at, 1, written);
        return structuredClone(written);
      }),
    async create(fields: Partial<Doc>) {
      await roundTrip();
      const now = new Date();
      const doc = { _id: randomUUID(), createdAt: now, updatedAt: now, ...fields } as Doc;
      if (docs.some((d) => d._id === doc._id)) {
        throw Object.assign(new Error('E11000 duplicate key'), { code: 11000 });
      }
      docs.push(doc);
      return { toObject: () => structuredClone(doc) };
    },
    async deleteOne(filter: { _id: string }) {
      await roundTrip();
      const at = docs.findIndex((d) => d._id === filter._id);
      if (at >= 0) docs.splice(at, 1);
      return { deletedCount: at >= 0 ? 1 : 0 };
    },
  };
}

/** Pricing replicas over one database: each its own actions (and turns), as processes are. */
function replicas(count: number) {
  const models = { CourierRule: collection(), CourierRuleRevision: collection() };
  const announced: string[] = [];
  const ctx = (params: object) => ({
    params,
    meta: {},
    // geo.findArea: every place exists, spelled as sent.
    call: async (_action: string, place: object) => (await roundTrip(), place),
    broadcast: async (event: string) => void announced.push(event),
    service: { logger: { warn: () => undefined } },
  });
  const nodes = Array.from({ length: count }, () => {
    const actions = createCourierRuleActions({ models } as never, {
      reload: async () => undefined,
    });
    // Params as the action's schema reads them, defaults and all.
    return (name: string, params: object) => {
      const action = actions[name] as { params: Joi.Schema; handler: Handler };
      return action.handler(ctx(Joi.attempt(params, action.params, VALIDATION_OPTIONS)));
    };
  });
  return { nodes, models, announced };
}

const rule = {
  courierId: '2e4f6a8c-0b1d-4e3f-9a5b-7c9d1e3f5a7b',
  from: 'Lagos',
  to: 'Lagos',
  amountKobo: 1000,
};

describe('changes of one courier rule through two replicas at once', () => {
  it('both land: the one that lost the revision is made again on the rule as the other left it', async () => {
    const { nodes, announced } = replicas(2);
    const [a, b] = nodes;
    const { id } = (await a('createCourierRule', rule)) as { id: string };
    const answers = (await Promise.all([
      a('updateCourierRule', { ruleId: id, amountKobo: 2000 }),
      b('updateCourierRule', { ruleId: id, priority: 7 }),
    ])) as { amountKobo: number; priority: number }[];
    // The later answer shows both changes: it was made on the rule as the other left it.
    expect(answers.filter((r) => r.amountKobo === 2000 && r.priority === 7)).toHaveLength(1);
    for (const node of nodes) {
      const listed = (await node('listCourierRules', { limit: 100, offset: 0 })) as object[];
      expect(listed).toEqual([expect.objectContaining({ id, amountKobo: 2000, priority: 7 })]);
    }
    expect(announced).toHaveLength(3);
  });

  it('a change racing a deletion never brings the rule back', async () => {
    const { nodes } = replicas(2);
    const [a, b] = nodes;
    const { id } = (await a('createCourierRule', rule)) as { id: string };
    const outcomes = await Promise.allSettled([
      a('updateCourierRule', { ruleId: id, amountKobo: 2000 }),
      b('deleteCourierRule', { ruleId: id }),
    ]);
    expect(outcomes[1]).toEqual({ status: 'fulfilled', value: null });
    expect(await a('listCourierRules', { limit: 100, offset: 0 })).toEqual([]);
    const again = await Promise.allSettled([a('updateCourierRule', { ruleId: id, priority: 1 })]);
    expect(again[0]).toMatchObject({ status: 'rejected', reason: { code: 404 } });
  });
});
