import { CLAIM_GRACE_MS, claimHolds } from '../../../services/courier-matching/reg-no-claims';

describe('a registration number claim', () => {
  const now = new Date('2026-06-01T12:00:00Z');
  const claim = (ageMs: number) => ({
    _id: 'LSD-482-XY',
    courierId: '0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e',
    createdAt: new Date(now.getTime() - ageMs),
  });

  it('holds while its courier carries the number, however old', () => {
    expect(claimHolds(claim(365 * 86_400_000), 'LSD-482-XY', now)).toBe(true);
  });

  it('holds through the grace while its courier is not written yet, or not changed yet', () => {
    expect(claimHolds(claim(CLAIM_GRACE_MS - 1), undefined, now)).toBe(true);
    expect(claimHolds(claim(CLAIM_GRACE_MS - 1), 'KJA-217-AB', now)).toBe(true);
  });

  it('is released after the grace when its courier never took the number or gave it up', () => {
    expect(claimHolds(claim(CLAIM_GRACE_MS), undefined, now)).toBe(false);
    expect(claimHolds(claim(CLAIM_GRACE_MS + 1), 'KJA-217-AB', now)).toBe(false);
  });
});
