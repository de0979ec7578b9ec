import { drop, idOf, restore, type VersionGate } from '../gate.ts';

/**
 * basil took the payment links off invoices (`payment_intent`, `charge`, `paid`, `paid_out_of_band`; an
 * invoice's payments became its `payments` list, its intent reachable through `confirmation_secret`), and
 * the `invoice` link off payment intents and charges. Before it, they are there, so
 * `expand[]=latest_invoice.payment_intent` works as older apps use it.
 */
export const invoicePayments: VersionGate = {
  version: '2025-03-31.basil',
  change:
    'Invoices: payment_intent, charge, paid and paid_out_of_band removed (payments and confirmation_secret instead); payment_intent.invoice and charge.invoice removed',
  objects: {
    invoice: (invoice, { store }) => {
      const id = idOf(invoice.id);
      const hidden = id ? store.peekHidden(id) : {};
      const intentId = typeof hidden.payment_intent === 'string' ? hidden.payment_intent : null;
      const intent = intentId ? store.lookup(intentId) : undefined;
      restore(invoice, {
        payment_intent: intent ? intent.id : null,
        charge: intent?.status === 'succeeded' ? (idOf(intent.latest_charge) ?? null) : null,
        paid: invoice.status === 'paid',
        paid_out_of_band: hidden.paid_out_of_band === true,
      });
      drop(invoice, 'payments', 'confirmation_secret', 'amount_overpaid');
    },
    payment_intent: (intent, { store }) => {
      const id = idOf(intent.id);
      const invoice = id ? store.peekHidden(id).invoice : undefined;
      restore(intent, { invoice: typeof invoice === 'string' ? invoice : null });
    },
    charge: (charge, { store }) => {
      const intentId = idOf(charge.payment_intent);
      const invoice = intentId ? store.peekHidden(intentId).invoice : undefined;
      restore(charge, { invoice: typeof invoice === 'string' ? invoice : null });
    },
  },
};
