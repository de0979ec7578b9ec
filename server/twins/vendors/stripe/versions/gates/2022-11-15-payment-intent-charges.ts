import { drop, idOf, restore, type VersionGate } from '../gate.ts';

/**
 * 2022-11-15 removed a payment intent's `charges` list (its `latest_charge` took its place). Before it,
 * the intent lists every charge of its confirmation attempts, newest first, and has no `latest_charge`.
 */
export const paymentIntentCharges: VersionGate = {
  version: '2022-11-15',
  change: 'Payment intents: charges list removed, latest_charge added',
  objects: {
    payment_intent: (intent, { store }) => {
      const id = idOf(intent.id);
      const charges = id
        ? store
            .all('charge')
            .filter((c) => c.payment_intent === id)
            .reverse()
        : [];
      restore(intent, {
        charges: {
          object: 'list',
          data: charges.map((charge) => structuredClone(charge)),
          has_more: false,
          total_count: charges.length,
          url: `/v1/charges?payment_intent=${id ?? ''}`,
        },
      });
      drop(intent, 'latest_charge');
    },
  },
};
