import { formatSlot, type Slot } from '../../libs/schedule';

/**
 * Scheduled deliveries in the tariff's time zone: whether a date and slot can still be booked,
 * and whether a slot is off hours. Their form (patterns, parse, joi fields) is libs/schedule's.
 */

/** How far ahead a delivery may be booked; tariffs change, and a quote should still hold. */
export const MAX_SCHEDULE_DAYS = 30;

/** When a SCHEDULED delivery is to arrive. */
export interface Schedule {
  date: string;
  slot: Slot;
}

export function minutesOf(time: string): number {
  const [hours, minutes] = time.split(':').map(Number);
  return hours * 60 + minutes;
}

/** Today's date and the minutes since midnight, in `timeZone`. */
export function localNow(now: Date, timeZone: string): { date: string; minutes: number } {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(now);
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '00';
  return {
    date: `${part('year')}-${part('month')}-${part('day')}`,
    minutes: Number(part('hour')) * 60 + Number(part('minute')),
  };
}

function daysBetween(from: string, to: string): number {
  return (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000;
}

/** A trip's length as a person reads it: `40 min`, `6 h 5 min`. */
function tripLength(seconds: number): string {
  const minutes = Math.ceil(seconds / 60);
  const hours = Math.floor(minutes / 60);
  if (hours === 0) return `${minutes} min`;
  return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`;
}

/**
 * Why a well-formed date and slot cannot be booked at `now`, or null when they can: the date
 * is before today, too far ahead, today with a window that has already closed, or one a trip
 * of `tripSeconds` (the route's estimate) leaving now would no longer reach before it closes.
 */
export function scheduleProblem(
  date: string,
  slot: Slot,
  now: Date,
  timeZone: string,
  tripSeconds = 0,
): { field: 'deliveryDate' | 'deliverySlot'; message: string } | null {
  const today = localNow(now, timeZone);
  const ahead = daysBetween(today.date, date);
  if (ahead < 0) {
    return {
      field: 'deliveryDate',
      message: `deliveryDate ${date} is in the past; today is ${today.date} (${timeZone})`,
    };
  }
  if (ahead > MAX_SCHEDULE_DAYS) {
    return {
      field: 'deliveryDate',
      message: `deliveryDate can be at most ${MAX_SCHEDULE_DAYS} days ahead (${today.date} + ${MAX_SCHEDULE_DAYS})`,
    };
  }
  if (ahead === 0 && slot.end <= today.minutes) {
    return {
      field: 'deliverySlot',
      message: `deliverySlot ${formatSlot(slot)} has already ended today (${timeZone}); choose a later slot or date`,
    };
  }
  if (zonedInstant(date, slot.end, timeZone).getTime() - tripSeconds * 1000 <= now.getTime()) {
    return {
      field: 'deliverySlot',
      message: `deliverySlot ${formatSlot(slot)} of ${date} can no longer be reached: the trip takes about ${tripLength(tripSeconds)}; choose a later slot or date`,
    };
  }
  return null;
}

/** True when the slot reaches outside opening hours ("HH:MM" each). */
export function isOffHours(slot: Slot, openingTime: string, closingTime: string): boolean {
  return slot.start < minutesOf(openingTime) || slot.end > minutesOf(closingTime);
}

/**
 * The instant `minutes` after midnight of `date` in `timeZone`. Across a daylight-saving
 * change it answers as clocks do: a wall time the change skips is read with the offset before
 * it (02:30 on a spring-forward night is 03:30 after it), a time it repeats is the first one.
 */
export function zonedInstant(date: string, minutes: number, timeZone: string): Date {
  const wall = Date.parse(`${date}T00:00:00Z`) + minutes * 60_000;
  const offsetAt = (instant: number) => {
    const local = localNow(new Date(instant), timeZone);
    return Date.parse(`${local.date}T00:00:00Z`) + local.minutes * 60_000 - instant;
  };
  const readsBack = (instant: number) => instant + offsetAt(instant) === wall;
  // Zones change offset at most once within a day of any instant: the offsets a day either side
  // are the only ones the wall time can have.
  const before = wall - offsetAt(wall - 86_400_000);
  const after = wall - offsetAt(wall + 86_400_000);
  const fitting = [before, after].filter(readsBack);
  return new Date(fitting.length > 0 ? Math.min(...fitting) : before);
}
