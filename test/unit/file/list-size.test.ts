import Joi from '../../../libs/joi';
import { loadConfig } from '../../../libs/config';
import {
  CDN_BASE_URL_MAX,
  LONGEST_NEW_FILE_KEY,
  hostedUrl,
  newFileKey,
} from '../../../libs/contracts/file';
import { validate } from '../../../libs/validation';
import { profilePhoto } from '../../../services/courier-matching/schemas';
import { ALIASES } from '../../../services/file/sniff';
import { FILE_LIST_MAX } from '../../../services/file/schemas';
import { toStoredFileView } from '../../../services/file/views';
import { saveParams } from '../../../services/package/schemas';
import { NATS_MAX_PAYLOAD, PACKET_ALLOWANCE } from '../../support/message-size';

const LONGEST_BASE = `https://cdn.example.com/${'a'.repeat(CDN_BASE_URL_MAX - 24)}`;

describe('the longest CDN_BASE_URL there may be', () => {
  it('is the longest the configuration takes', () => {
    expect(loadConfig({ CDN_BASE_URL: LONGEST_BASE }).cdnBaseUrl).toBe(LONGEST_BASE);
    expect(() => loadConfig({ CDN_BASE_URL: `${LONGEST_BASE}a` })).toThrow(/CDN_BASE_URL/);
  });

  it('leaves room for the key of every file the file service takes, in a package or a courier', () => {
    const { cdnBaseUrl } = loadConfig({ CDN_BASE_URL: LONGEST_BASE });
    const user = '0b6f1c1e-6a7e-4a63-9d6e-1c9f3a8d2b10';
    const newPackage = { packageType: 'Parcel', name: 'Box', quantity: 1, size: 'SMALL', value: 1 };
    for (const ext of Object.values(ALIASES).flat()) {
      const url = hostedUrl(newFileKey(user, ext), cdnBaseUrl);
      expect(validate(saveParams(cdnBaseUrl), { ...newPackage, image: url })).toMatchObject({
        image: url,
      });
      expect(validate(Joi.object({ photo: profilePhoto(cdnBaseUrl) }), { photo: url })).toEqual({
        photo: url,
      });
    }
  });

  it('is measured as URLs are made: a base whose canonical form is longer is refused', () => {
    // `1.1` is the address 1.0.0.1: four characters more in every hosted URL.
    const fits = `http://1.1/${'a'.repeat(CDN_BASE_URL_MAX - 4 - 'http://1.1/'.length)}`;
    expect(loadConfig({ CDN_BASE_URL: fits }).cdnBaseUrl).toBe(fits);
    expect(() => loadConfig({ CDN_BASE_URL: `${fits}a` })).toThrow(/room for a key/);
  });
});

describe('the largest list of a user’s files', () => {
  it('fits in one NATS message under the longest CDN_BASE_URL there may be', () => {
    const { cdnBaseUrl } = loadConfig({ CDN_BASE_URL: LONGEST_BASE });
    const view = toStoredFileView(
      { key: LONGEST_NEW_FILE_KEY, size: Number.MAX_SAFE_INTEGER, lastModified: new Date() },
      cdnBaseUrl,
    );
    const page = JSON.stringify(Array.from({ length: FILE_LIST_MAX }, () => view));
    expect(Buffer.byteLength(page) + PACKET_ALLOWANCE).toBeLessThan(NATS_MAX_PAYLOAD);
  });
});
