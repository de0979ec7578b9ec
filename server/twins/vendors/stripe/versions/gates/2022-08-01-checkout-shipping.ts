import { drop, restore, type VersionGate } from '../gate.ts';

/**
 * 2022-08-01 replaced Checkout's `shipping` and `shipping_rate` with `shipping_details` and
 * `shipping_cost`, removed products' `caption` and charges' `order`, and gave invoices
 * `rendering_options`.
 */
export const checkoutShipping: VersionGate = {
  version: '2022-08-01',
  change:
    'Checkout Sessions: shipping and shipping_rate replaced by shipping_details and shipping_cost; products: caption removed; charges: order removed',
  objects: {
    'checkout.session': (session) => {
      restore(session, { shipping: session.shipping_details ?? null, shipping_rate: null });
      drop(session, 'shipping_details');
    },
    product: (product) => restore(product, { caption: null }),
    charge: (charge) => restore(charge, { order: null }),
    invoice: (invoice) => drop(invoice, 'rendering_options'),
  },
};
