/** Scheduled deliveries: a calendar date and a time window, read in the tariff's time zone. */

export const SLOT_PATTERN = /^([01]\d|2[0-3]):([0-5]\d) ?- ?([01]\d|2[0-3]):([0-5]\d)$/;
export const DATE_PATTERN = /^\d{4}-\d{2}-\d{2}$/;
/** How far ahead a delivery may be booked; tariffs change, and a quote should still hold. */
export const MAX_SCHEDULE_DAYS = 30;

/** Minutes after midnight. */
export interface Slot {
  start: number;
  end: number;
}

/** When a SCHEDULED delivery is to arrive. */
export interface Schedule {
  date: string;
  slot: Slot;
}

export function minutesOf(time: string): number {
  const [hours, minutes] = time.split(':').map(Number);
  return hours * 60 + minutes;
}

/** "09:00 - 12:00" → {start: 540, end: 720}; null when malformed or not forward. */
export function parseSlot(text: string): Slot | null {
  const match = SLOT_PATTERN.exec(text.trim());
  if (!match) return null;
  const start = Number(match[1]) * 60 + Number(match[2]);
  const end = Number(match[3]) * 60 + Number(match[4]);
  return start < end ? { start, end } : null;
}

/** The canonical spelling, "09:00 - 12:00". */
export function formatSlot(slot: Slot): string {
  const hhmm = (m: number) =>
    `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
  return `${hhmm(slot.start)} - ${hhmm(slot.end)}`;
}

/** A real calendar date in `YYYY-MM-DD` (no 2026-02-30). */
export function isCalendarDate(text: string): boolean {
  if (!DATE_PATTERN.test(text)) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text;
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

/**
 * Why a well-formed date and slot cannot be booked at `now`, or null when they can: the date
 * is before today, too far ahead, or today with a window that has already closed.
 */
export function scheduleProblem(
  date: string,
  slot: Slot,
  now: Date,
  timeZone: string,
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
  return null;
}

/** True when the slot reaches outside opening hours ("HH:MM" each). */
export function isOffHours(slot: Slot, openingTime: string, closingTime: string): boolean {
  return slot.start < minutesOf(openingTime) || slot.end > minutesOf(closingTime);
}
