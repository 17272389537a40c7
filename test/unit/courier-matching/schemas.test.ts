import type Joi from '../../../libs/joi';
import { validate } from '../../../libs/validation';
import {
  createCourierParams,
  listCouriersParams,
  updateCourierParams,
} from '../../../services/courier-matching/schemas';
import { thrownBy } from '../helpers';

const CDN = 'http://cdn.test';
const create = createCourierParams(CDN);
const update = updateCourierParams(CDN);
const typeId = '3f1c2a8e-9b7d-4c6e-8f0a-1b2c3d4e5f60';
const courierId = '0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e';

const valid = {
  name: 'Tunde Bakare',
  phone: '+2348031234567',
  fleet: { typeId, regNo: 'LSD-482-XY', make: 'Bajaj', model: 'Boxer', colour: 'Red' },
};

/** The field errors of a refused value, as `field: message`. */
function problems(schema: Joi.Schema, value: unknown): Record<string, string> {
  const err = thrownBy(() => validate(schema, value)) as {
    data: { errors: { field: string; message: string }[] };
  };
  return Object.fromEntries(err.data.errors.map((e) => [e.field, e.message]));
}

describe('a new courier', () => {
  it('is active, without photo or location, by default', () => {
    expect(validate(create, valid)).toEqual({ ...valid, profilePhoto: null, active: true });
  });

  it.each([
    ['lsd-482-xy', 'LSD-482-XY'],
    ['  abj 305 ky\t', 'ABJ 305 KY'],
    ['KJA217AB', 'KJA217AB'],
  ])('has registration number %j stored as %j', (regNo, stored) => {
    expect(validate(create, { ...valid, fleet: { ...valid.fleet, regNo } }).fleet.regNo).toBe(
      stored,
    );
  });

  it.each(['LSD--482', 'LSD  482', '-LSD', 'LSD/482', 'ÀBC-123', '', '   ', 'A'.repeat(21)])(
    'refuses registration number %j',
    (regNo) => {
      expect(Object.keys(problems(create, { ...valid, fleet: { ...valid.fleet, regNo } }))).toEqual(
        ['fleet.regNo'],
      );
    },
  );

  it.each([
    'https://photos.example.com/a.jpg',
    `${CDN}/uploads/1c7e8d2f-3e4b-4c6d-9e0f-1a2b3c4d5e6f/0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e.png`,
  ])('takes photo %s', (profilePhoto) => {
    expect(validate(create, { ...valid, profilePhoto }).profilePhoto).toBe(profilePhoto);
  });

  it.each([
    [
      'http://photos.example.com/a.jpg',
      /must be an https URL as a browser writes it .*, or the URL of a file uploaded/,
    ],
    [
      `${CDN}/uploads/not-ours.png`,
      /must be an https URL as a browser writes it .*, or the URL of a file uploaded/,
    ],
    // What the schemas' https URL refuses (isHttpsUrl): a photo URL is fetched by browsers.
    ['https://user:secret@photos.example.com/a.jpg', /must be an https URL as a browser/],
    ['https://10.0.0.1/a.jpg', /must be an https URL as a browser/],
    ['https://192.168.0.10:8443/a.jpg', /must be an https URL as a browser/],
    ['https://[fd00::1]/a.jpg', /must be an https URL as a browser/],
    ['https://Photos.example.com/a.jpg', /must be an https URL as a browser/],
    ['https://photos.example.com', /must be an https URL as a browser/],
    ['https:photos.example.com/a.jpg', /must be an https URL as a browser/],
    ['https://photos.example.com/./a.jpg', /must be an https URL as a browser/],
    ['https://example.com/a b.jpg', /without spaces or non-ASCII characters/],
    ['https://example.com/ça.jpg', /without spaces or non-ASCII characters/],
    [`https://example.com/${'a'.repeat(500)}`, /less than or equal to 512 characters/],
    // Characters of two UTF-16 units each: within 512 characters, still no URL of ours.
    [`javascript:alert(1)//${'😀'.repeat(300)}`, /without spaces or non-ASCII characters/],
  ])('refuses photo %s', (profilePhoto, message) => {
    expect(problems(create, { ...valid, profilePhoto }).profilePhoto).toMatch(message);
  });

  it('refuses control characters in the texts a merchant will read', () => {
    const fields = problems(create, {
      ...valid,
      name: 'Tunde\u0000',
      fleet: { ...valid.fleet, make: 'Baj\u0007aj' },
    });
    expect(Object.keys(fields)).toEqual(['name', 'fleet.make']);
  });

  it('never takes a location', () => {
    expect(problems(create, { ...valid, lastLocation: null })).toEqual({
      lastLocation: 'lastLocation is what the courier last reported to matching; it cannot be set',
    });
  });
});

describe('a change to a courier', () => {
  it('takes single fleet fields, normalized', () => {
    expect(validate(update, { courierId, fleet: { regNo: ' kja 1 ' } })).toEqual({
      courierId,
      fleet: { regNo: 'KJA 1' },
    });
  });

  it('names what may be changed when nothing is', () => {
    expect(problems(update, { courierId })).toEqual({
      body: 'Send at least one of name, phone, profilePhoto, fleet, active',
    });
  });
});

describe('the list of couriers', () => {
  it('reads its filters and page from the query string', () => {
    expect(validate(listCouriersParams, { active: 'false', limit: '5', regNo: 'lsd-1' })).toEqual({
      active: false,
      regNo: 'LSD-1',
      limit: 5,
      offset: 0,
    });
  });
});
