import type { Logger } from 'moleculer';
import type { LedgerReport, LedgerStore } from '../../../services/payment/ledger-store';
import { createWalletAdminActions } from '../../../services/payment/wallet-admin';

/** A ledger whose verify answers when the test says, counting the scans it started. */
function gatedLedger() {
  const scans: { stopAt: number | undefined; answer: (report: LedgerReport) => void }[] = [];
  const ledger = {
    verify: (_max: number | undefined, stopAt?: number) =>
      new Promise<LedgerReport>((answer) => scans.push({ stopAt, answer })),
  } as unknown as LedgerStore;
  const actions = createWalletAdminActions(ledger, () => ({}) as Logger);
  const verify = (timeout?: number) =>
    (actions.verifyLedger as { handler: (ctx: unknown) => Promise<LedgerReport> }).handler({
      params: {},
      options: { timeout },
    });
  return { scans, verify };
}

const report = (entries: number): LedgerReport => ({
  clean: true,
  wallets: 1,
  cashAccounts: 0,
  entries,
  problemCount: 0,
  problems: [],
  checkedAt: '2026-12-05T17:00:00.000Z',
});

describe('GET /admin/ledger/verify in one replica', () => {
  it('shares one scan among the calls sent while it runs, and starts another after', async () => {
    const { scans, verify } = gatedLedger();
    const first = verify(15_000);
    const retries = [verify(15_000), verify(15_000)];
    expect(scans).toHaveLength(1);
    scans[0].answer(report(7));
    expect(await first).toEqual(report(7));
    expect(await Promise.all(retries)).toEqual([report(7), report(7)]);
    const later = verify(15_000);
    expect(scans).toHaveLength(2);
    scans[1].answer(report(8));
    expect(await later).toEqual(report(8));
  });

  it("stops its scan at the call's deadline, and reads it all for a call with none (the CLI's)", async () => {
    const { scans, verify } = gatedLedger();
    const before = Date.now();
    const held = verify(15_000);
    expect(scans[0].stopAt).toBeGreaterThanOrEqual(before + 15_000);
    expect(scans[0].stopAt).toBeLessThanOrEqual(Date.now() + 15_000);
    scans[0].answer(report(1));
    await held;
    const unheld = verify(undefined);
    expect(scans[1].stopAt).toBeUndefined();
    scans[1].answer(report(1));
    await unheld;
  });
});
