import { openServiceDatabase, type Isolation } from './stack';

/** Ends an operator token's life a second ago, as the account service stores it. */
export async function expireOperatorToken(iso: Isolation, tokenId: string): Promise<void> {
  const db = await openServiceDatabase(iso, 'account');
  try {
    await db
      .collection('operator_tokens')
      .updateOne({ tokenId }, { $set: { expiresAt: new Date(Date.now() - 1_000) } });
  } finally {
    await db.close();
  }
}
