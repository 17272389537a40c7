import type { ResolvedAddress } from '../../../libs/contracts/geo';
import { UNREADABLE, resolveAddress, type SavedAddressLookup } from '../../../services/geo/address';
import { rejectionOf } from '../helpers';

const SAVED_ID = '6f177c89-2c19-4ccc-9b13-2c42243961ee';
const saved: ResolvedAddress = {
  country: 'Nigeria',
  lat: 6.6018,
  lon: 3.3515,
  addressLine1: 'Allen Avenue, Ikeja',
  floor: '1',
  contactName: 'Ada',
  contactPhone: '+2348011111111',
  h3Index: '893f2a5c8a3ffff',
  phrase: 'saved.place.here',
  resolution: 9,
};
const lookup =
  (answer: Awaited<ReturnType<SavedAddressLookup>>): SavedAddressLookup =>
  async () =>
    answer;
const resolve = (
  input: Parameters<typeof resolveAddress>[0],
  answer: ResolvedAddress | null | typeof UNREADABLE,
) => resolveAddress(input, 'origin', { savedAddress: lookup(answer) });

describe('a stop given by a saved address id', () => {
  it('is the saved place, with the floor it sends over its own and only the contacts it sends', async () => {
    const resolved = await resolve(
      { id: SAVED_ID, floor: '3', contactName: 'Bisi', additionalNote: 'Gate B' },
      { ...saved, note: 'Saved gate' },
    );
    expect(resolved).toMatchObject({
      lat: 6.6018,
      addressLine1: 'Allen Avenue, Ikeja',
      floor: '3',
      contactName: 'Bisi',
      note: 'Gate B',
    });
    expect(resolved).not.toHaveProperty('contactPhone');
    const alone = await resolve({ id: SAVED_ID }, { ...saved, note: 'Saved gate' });
    expect(alone).toMatchObject({ floor: '1', lat: 6.6018 });
    for (const field of ['contactName', 'contactPhone', 'contactEmail', 'note']) {
      expect(alone).not.toHaveProperty(field);
    }
  });

  it.each([
    ['not one of the caller’s', null],
    ['unreadable now', UNREADABLE],
  ] as const)('falls back to the rest of the input when the id is %s', async (_what, answer) => {
    const resolved = await resolve({ id: SAVED_ID, lat: 9.0765, lon: 7.3986 }, answer);
    expect(resolved).toMatchObject({ lat: 9.0765, lon: 7.3986, country: 'Nigeria' });
  });

  it('refuses an id that names nothing, alone, with 400 naming the field', async () => {
    const err = await rejectionOf(() => resolve({ id: SAVED_ID }, null));
    expect(err).toMatchObject({
      code: 400,
      data: { errors: [{ field: 'origin.id', message: `no saved address ${SAVED_ID}` }] },
    });
  });

  it('answers 503, not that there is no such address, while saved addresses cannot be read', async () => {
    const err = await rejectionOf(() => resolve({ id: SAVED_ID }, UNREADABLE));
    expect(err).toMatchObject({ code: 503, message: /cannot be read right now/ });
  });
});
