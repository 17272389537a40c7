import { matchesWhere } from '../../../libs/mongo';

describe('matchesWhere', () => {
  const doc = { _id: 'p1', userId: 'u1', deletedAt: null, version: 3, active: true };

  it('matches equal fields, null for null or absent, and below $lt', () => {
    expect(matchesWhere(doc, {})).toBe(true);
    expect(matchesWhere(doc, { userId: 'u1', deletedAt: null })).toBe(true);
    expect(matchesWhere(doc, { p2pDeliveryId: null })).toBe(true);
    expect(matchesWhere(doc, { version: { $lt: 4 }, active: true })).toBe(true);
  });

  it('refuses a different value, a set field for null, and a value not below $lt', () => {
    expect(matchesWhere(doc, { userId: 'u2' })).toBe(false);
    expect(matchesWhere({ ...doc, deletedAt: new Date() }, { deletedAt: null })).toBe(false);
    expect(matchesWhere(doc, { version: { $lt: 3 } })).toBe(false);
    expect(matchesWhere({ ...doc, version: undefined }, { version: { $lt: 3 } })).toBe(false);
    expect(matchesWhere(doc, { version: '3' })).toBe(false);
  });
});
