/**
 * Stripe's documented test cards and the magic `pm_card_*` / `tok_*` ids, with the outcome a charge on
 * them has (https://docs.stripe.com/testing). Any other well-formed number succeeds.
 */
export interface CardOutcome {
  brand: string;
  funding: 'credit' | 'debit';
  decline?: { code: string; decline_code?: string; message: string };
}

const declined = (decline_code: string, message = 'Your card was declined.') => ({
  code: 'card_declined',
  decline_code,
  message,
});

export const TEST_CARDS: Record<string, CardOutcome> = {
  '4242424242424242': { brand: 'visa', funding: 'credit' },
  '4000056655665556': { brand: 'visa', funding: 'debit' },
  '5555555555554444': { brand: 'mastercard', funding: 'credit' },
  '378282246310005': { brand: 'amex', funding: 'credit' },
  '4000000000000002': { brand: 'visa', funding: 'credit', decline: declined('generic_decline') },
  '4000000000009995': {
    brand: 'visa',
    funding: 'credit',
    decline: declined('insufficient_funds', 'Your card has insufficient funds.'),
  },
  '4000000000009987': { brand: 'visa', funding: 'credit', decline: declined('lost_card') },
  '4000000000009979': { brand: 'visa', funding: 'credit', decline: declined('stolen_card') },
  '4000000000000069': {
    brand: 'visa',
    funding: 'credit',
    decline: { code: 'expired_card', message: 'Your card has expired.' },
  },
  '4000000000000127': {
    brand: 'visa',
    funding: 'credit',
    decline: { code: 'incorrect_cvc', message: "Your card's security code is incorrect." },
  },
  '4000000000000119': {
    brand: 'visa',
    funding: 'credit',
    decline: {
      code: 'processing_error',
      message: 'An error occurred while processing your card. Try again in a little bit.',
    },
  },
};

const MAGIC: Record<string, string> = {
  visa: '4242424242424242',
  visa_debit: '4000056655665556',
  mastercard: '5555555555554444',
  amex: '378282246310005',
  chargeDeclined: '4000000000000002',
  chargeDeclinedInsufficientFunds: '4000000000009995',
  chargeDeclinedLostCard: '4000000000009987',
  chargeDeclinedStolenCard: '4000000000009979',
  chargeDeclinedExpiredCard: '4000000000000069',
  chargeDeclinedIncorrectCvc: '4000000000000127',
  chargeDeclinedProcessingError: '4000000000000119',
};

/** The card number behind `pm_card_visa`, `tok_chargeDeclined`, ...; undefined for other ids. */
export function magicCardNumber(id: string): string | undefined {
  const m = /^(?:pm_card_|tok_)(.+)$/.exec(id);
  return m ? MAGIC[m[1]!] : undefined;
}

export function cardOutcome(number: string): CardOutcome | undefined {
  if (TEST_CARDS[number]) return TEST_CARDS[number];
  if (!/^\d{13,19}$/.test(number)) return undefined;
  const brand = number.startsWith('4')
    ? 'visa'
    : /^5[1-5]/.test(number)
      ? 'mastercard'
      : /^3[47]/.test(number)
        ? 'amex'
        : 'unknown';
  return { brand, funding: 'credit' };
}
