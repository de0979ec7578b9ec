import { restore, type Shaped, type VersionGate } from '../gate.ts';

/**
 * Fields basil removed that the twin has no use for and that were always empty in its answers: the
 * single `discount` (superseded by `discounts`), invoices' `tax`, `total_tax_amounts`, `quote`,
 * `application_fee_amount` and `transfer_data`, plans' and recurring prices' `aggregate_usage` and Checkout's
 * `shipping_details` (moved to `collected_information`). Older versions have them, empty.
 */
export const removedFields: VersionGate = {
  version: '2025-03-31.basil',
  change:
    'discount, invoice tax and total_tax_amounts, quote, application_fee_amount, transfer_data, plan aggregate_usage and Checkout shipping_details removed',
  objects: {
    subscription: (subscription) => restore(subscription, { discount: null }),
    customer: (customer) => restore(customer, { discount: null }),
    invoice: (invoice) =>
      restore(invoice, {
        application_fee_amount: null,
        discount: null,
        quote: null,
        tax: null,
        total_tax_amounts: [],
        transfer_data: null,
      }),
    plan: (plan) => restore(plan, { aggregate_usage: null }),
    price: (price) => {
      if (price.recurring && typeof price.recurring === 'object') {
        restore(price.recurring as Shaped, { aggregate_usage: null });
      }
    },
    'checkout.session': (session) => restore(session, { shipping_details: null }),
  },
};
