import process from 'node:process';
import { setImmediate } from 'node:timers';

// Preloaded into a server by server-faults.test.ts: on SIGUSR2, a fault of the kind
// WAYBILL_TEST_FAULT names, left uncaught, as a bug of ours would leave one.
process.on('SIGUSR2', () => {
  if (process.env.WAYBILL_TEST_FAULT === 'exception') {
    setImmediate(() => {
      throw new Error('an exception left uncaught, for the test');
    });
  } else {
    void Promise.reject(new Error('a rejection left unhandled, for the test'));
  }
});
