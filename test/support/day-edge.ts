/** The calendar day (YYYY-MM-DD) a moment falls on in a time zone. */
function dayIn(timeZone: string): (ms: number) => string {
  const format = new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  });
  return (ms) => format.format(ms);
}

/**
 * Waits, when a day ends in `timeZone` within the next `marginMs`, until it has: a test whose
 * servers count or word things by the day (a day's upload bytes, "today is …") then runs
 * within one day, whatever the hour it is run at. The wait is at most `marginMs` and a tenth
 * of a second: give the hook or test that calls this that much more time.
 */
export async function clearOfDayEnd(marginMs: number, timeZone = 'UTC'): Promise<void> {
  const day = dayIn(timeZone);
  const now = Date.now();
  if (day(now) === day(now + marginMs)) return;
  // The first millisecond of the next day, found by halving (time zones may move by the hour).
  let [before, after] = [now, now + marginMs];
  while (after - before > 1) {
    const middle = Math.floor((before + after) / 2);
    if (day(middle) === day(now)) before = middle;
    else after = middle;
  }
  await new Promise((resolve) => setTimeout(resolve, after - Date.now() + 100));
}
