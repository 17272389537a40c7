import fc from 'fast-check';
import {
  isOffHours,
  localNow,
  scheduleProblem,
  zonedInstant,
} from '../../../services/pricing/schedule';

describe('delivery slots in a tariff', () => {
  it('is off hours when it reaches outside opening time', () => {
    expect(isOffHours({ start: 480, end: 1080 }, '08:00', '18:00')).toBe(false);
    expect(isOffHours({ start: 420, end: 600 }, '08:00', '18:00')).toBe(true);
    expect(isOffHours({ start: 1020, end: 1140 }, '08:00', '18:00')).toBe(true);
  });
});

describe('delivery dates in a tariff time zone', () => {
  // 23:30 UTC on 22 Nov is 00:30 on 23 Nov in Lagos (UTC+1).
  const now = new Date('2026-11-22T23:30:00Z');
  const morning = { start: 540, end: 720 };

  it('reads today in the tariff time zone', () => {
    expect(localNow(now, 'Africa/Lagos')).toEqual({ date: '2026-11-23', minutes: 30 });
    expect(localNow(now, 'UTC')).toEqual({ date: '2026-11-22', minutes: 1410 });
  });

  it('refuses a date before today in that zone', () => {
    expect(scheduleProblem('2026-11-22', morning, now, 'Africa/Lagos')).toEqual({
      field: 'deliveryDate',
      message: 'deliveryDate 2026-11-22 is in the past; today is 2026-11-23 (Africa/Lagos)',
    });
    expect(scheduleProblem('2026-11-22', { start: 1420, end: 1439 }, now, 'UTC')).toBeNull();
  });

  it('refuses a slot that has ended today, accepts one still open', () => {
    const late = new Date('2026-11-23T12:00:00Z'); // 13:00 in Lagos
    expect(scheduleProblem('2026-11-23', morning, late, 'Africa/Lagos')?.field).toBe(
      'deliverySlot',
    );
    expect(
      scheduleProblem('2026-11-23', { start: 720, end: 900 }, late, 'Africa/Lagos'),
    ).toBeNull();
  });

  it('refuses a slot the trip, leaving now, would no longer reach before it closes', () => {
    const late = new Date('2026-11-23T12:00:00Z'); // 13:00 in Lagos
    const afternoon = { start: 720, end: 900 }; // 12:00 - 15:00
    // Two hours of the slot left: a trip of 1 h 59 min reaches it, one of 2 h does not.
    expect(scheduleProblem('2026-11-23', afternoon, late, 'Africa/Lagos', 7140)).toBeNull();
    expect(scheduleProblem('2026-11-23', afternoon, late, 'Africa/Lagos', 7200)).toEqual({
      field: 'deliverySlot',
      message:
        'deliverySlot 12:00 - 15:00 of 2026-11-23 can no longer be reached: the trip takes about 2 h; choose a later slot or date',
    });
    // Tomorrow's slot closes 26 h from now: a trip of 26 h 30 min no longer makes it.
    expect(scheduleProblem('2026-11-24', afternoon, late, 'Africa/Lagos', 95_400)?.message).toBe(
      'deliverySlot 12:00 - 15:00 of 2026-11-24 can no longer be reached: the trip takes about 26 h 30 min; choose a later slot or date',
    );
    expect(scheduleProblem('2026-11-25', afternoon, late, 'Africa/Lagos', 95_400)).toBeNull();
  });

  it('refuses dates more than 30 days ahead', () => {
    expect(scheduleProblem('2026-12-23', morning, now, 'Africa/Lagos')).toBeNull();
    expect(scheduleProblem('2026-12-24', morning, now, 'Africa/Lagos')?.message).toMatch(/30 days/);
  });
});

describe('the instant a slot starts, in the tariff time zone', () => {
  it('reads the wall-clock time in that zone', () => {
    expect(zonedInstant('2026-12-24', 540, 'Africa/Lagos').toISOString()).toBe(
      '2026-12-24T08:00:00.000Z',
    );
    expect(zonedInstant('2026-12-24', 30, 'Africa/Lagos').toISOString()).toBe(
      '2026-12-23T23:30:00.000Z',
    );
    expect(zonedInstant('2026-12-24', 540, 'UTC').toISOString()).toBe('2026-12-24T09:00:00.000Z');
    expect(zonedInstant('2026-07-01', 600, 'Europe/London').toISOString()).toBe(
      '2026-07-01T09:00:00.000Z',
    );
  });

  it('answers as clocks do across a daylight-saving change: a skipped time later, a repeated one first', () => {
    // New York springs forward at 02:00 on 8 March 2026 and falls back at 02:00 on 1 November.
    expect(zonedInstant('2026-03-08', 150, 'America/New_York').toISOString()).toBe(
      '2026-03-08T07:30:00.000Z',
    );
    expect(zonedInstant('2026-11-01', 90, 'America/New_York').toISOString()).toBe(
      '2026-11-01T05:30:00.000Z',
    );
    // London at 01:00 on 29 March and 25 October 2026.
    expect(zonedInstant('2026-03-29', 90, 'Europe/London').toISOString()).toBe(
      '2026-03-29T01:30:00.000Z',
    );
    expect(zonedInstant('2026-10-25', 90, 'Europe/London').toISOString()).toBe(
      '2026-10-25T00:30:00.000Z',
    );
  });

  it('is the time localNow reads back, whatever the date, minute and zone', () => {
    const zones = [
      'Africa/Lagos',
      'UTC',
      'Africa/Nairobi',
      'America/New_York',
      'Europe/London',
      'Asia/Kolkata',
      'Australia/Lord_Howe',
    ];
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('2024-01-01T00:00:00Z'),
          max: new Date('2030-12-31T00:00:00Z'),
          noInvalidDate: true,
        }),
        fc.integer({ min: 0, max: 1439 }),
        fc.constantFrom(...zones),
        (day, minutes, zone) => {
          const date = day.toISOString().slice(0, 10);
          const instant = zonedInstant(date, minutes, zone);
          const local = localNow(instant, zone);
          // A time the spring change skips reads back as late as the change moved clocks on;
          // read with the offset after the change, it is no instant either.
          const skippedBy = local.minutes - minutes;
          expect(local.date).toBe(date);
          expect([0, 30, 60]).toContain(skippedBy);
          if (skippedBy !== 0) {
            const earlier = localNow(new Date(instant.getTime() - skippedBy * 60_000), zone);
            expect(earlier.minutes).not.toBe(minutes);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});
