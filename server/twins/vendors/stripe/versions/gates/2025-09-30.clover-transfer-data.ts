import { restore, type VersionGate } from '../gate.ts';

/**
 * From clover a payment intent sends `transfer_data` only when it has one (Connect destination charges,
 * which the twin does not make); before it, the field is always there, null when unused.
 */
export const transferData: VersionGate = {
  version: '2025-09-30.clover',
  change: 'Payment intents: transfer_data sent only when set',
  objects: {
    payment_intent: (intent) => restore(intent, { transfer_data: null }),
  },
};
