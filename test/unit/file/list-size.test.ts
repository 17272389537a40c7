import { loadConfig } from '../../../libs/config';
import { FILE_LIST_MAX } from '../../../services/file/schemas';
import { toStoredFileView } from '../../../services/file/views';
import { NATS_MAX_PAYLOAD, PACKET_ALLOWANCE } from '../../support/message-size';

describe('the largest list of a user’s files', () => {
  it('fits in one NATS message under the longest CDN_BASE_URL there may be', () => {
    const longest = `https://cdn.example.com/${'a'.repeat(426 - 24)}`;
    expect(() => loadConfig({ CDN_BASE_URL: `${longest}a` })).toThrow(/CDN_BASE_URL/);
    const { cdnBaseUrl } = loadConfig({ CDN_BASE_URL: longest });
    const key = `uploads/${'1'.repeat(8)}-1111-4111-8111-${'1'.repeat(12)}/${'2'.repeat(8)}-2222-4222-8222-${'2'.repeat(12)}.jpeg`;
    const view = toStoredFileView(
      { key, size: Number.MAX_SAFE_INTEGER, lastModified: new Date() },
      cdnBaseUrl,
    );
    const page = JSON.stringify(Array.from({ length: FILE_LIST_MAX }, () => view));
    expect(Buffer.byteLength(page) + PACKET_ALLOWANCE).toBeLessThan(NATS_MAX_PAYLOAD);
  });
});
