import { hostedUrlPattern } from '../../../libs/contracts/file';
import { validate } from '../../../libs/validation';
import { saveParams } from '../../../services/package/schemas';
import { thrownBy } from '../helpers';

const CDN = 'http://cdn.test';
const image = `${CDN}/uploads/1c7e8d2f-3e4b-4c6d-9e0f-1a2b3c4d5e6f/0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e.png`;
const save = (fields: Record<string, unknown>) =>
  validate(saveParams(CDN), {
    packageType: 'Parcel',
    name: 'Box',
    quantity: 1,
    size: 'SMALL',
    value: 1,
    ...fields,
  }) as { image?: string };

describe('a package’s image', () => {
  it('is taken exactly as the document’s pattern states it: an uploaded file’s URL as sent', () => {
    const pattern = new RegExp(hostedUrlPattern(CDN));
    expect(save({ image }).image).toBe(image);
    expect(pattern.test(image)).toBe(true);
    // Surrounding spaces: outside the documented pattern, and refused as the pattern says.
    for (const padded of [` ${image}`, `${image} `, `\t${image}\n`]) {
      expect(pattern.test(padded)).toBe(false);
      expect(thrownBy(() => save({ image: padded }))).toMatchObject({ code: 400 });
    }
  });

  it('is checked whatever its characters: 300 emoji are 300 characters and 600 UTF-16 units', () => {
    for (const image of [
      `javascript:alert(1)//${'😀'.repeat(300)}`,
      `https://evil.example/x.png${'😀'.repeat(250)}`,
    ]) {
      expect(thrownBy(() => save({ image }))).toMatchObject({ code: 400 });
    }
  });
});
