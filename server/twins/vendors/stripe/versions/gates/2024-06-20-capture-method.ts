import { idOf, type VersionGate } from '../gate.ts';

/**
 * 2024-06-20 made `automatic_async` the default `capture_method` of a payment intent. Before it, an
 * intent created without one captures `automatic`ally (an app that asked for `automatic_async` keeps it).
 */
export const captureMethodDefault: VersionGate = {
  version: '2024-06-20',
  change: 'Payment intents: capture_method defaults to automatic_async instead of automatic',
  objects: {
    payment_intent: (intent, { store }) => {
      const id = idOf(intent.id);
      const defaulted = id ? store.peekHidden(id).capture_method_defaulted === true : false;
      if (intent.capture_method === 'automatic_async' && defaulted) intent.capture_method = 'automatic';
    },
  },
};
