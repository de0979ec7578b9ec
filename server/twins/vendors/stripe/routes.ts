/** The Stripe API routes the twin serves, each a thin call into the simulator. */
import type { StripeApi } from './api.ts';
import type { StripeBilling } from './billing.ts';
import type { StripeCheckout } from './checkout.ts';
import type { FormObject } from './form.ts';
import type { StripeWebhookEndpoints } from './webhook-endpoints.ts';

export interface StripeServices {
  api: StripeApi;
  billing: StripeBilling;
  checkout: StripeCheckout;
  endpoints: StripeWebhookEndpoints;
}

export type Route = [
  method: string,
  pattern: RegExp,
  handler: (s: StripeServices, m: string[], body: FormObject, q: URLSearchParams, key?: string) => unknown,
];

const ID = '([^/]+)';
const path = (p: string) => new RegExp(`^${p.replace(/\{id\}/g, ID)}$`);

export const ROUTES: Route[] = [
  ['POST', path('/v1/customers'), (s, _m, b, _q, key) => s.api.createCustomer(b, { idempotencyKey: key })],
  ['GET', path('/v1/customers'), (s, _m, _b, q) => s.api.listCustomers(q)],
  ['GET', path('/v1/customers/search'), (s, _m, _b, q) => s.api.searchCustomers(q)],
  ['GET', path('/v1/customers/{id}'), (s, m) => s.api.get('customer', m[1]!)],
  ['POST', path('/v1/customers/{id}'), (s, m, b) => s.api.updateCustomer(m[1]!, b)],
  ['DELETE', path('/v1/customers/{id}'), (s, m) => s.api.deleteCustomer(m[1]!)],
  [
    'GET',
    path('/v1/customers/{id}/payment_methods'),
    (s, m, _b, q) => (
      s.api.get('customer', m[1]!),
      s.api.list('payment_method', q, `/v1/customers/${m[1]}/payment_methods`, (p) => p.customer === m[1])
    ),
  ],
  ['POST', path('/v1/products'), (s, _m, b) => s.api.createProduct(b)],
  [
    'GET',
    path('/v1/products'),
    (s, _m, _b, q) =>
      s.api.list(
        'product',
        q,
        '/v1/products',
        (p) => !q.get('active') || String(p.active) === q.get('active'),
      ),
  ],
  ['GET', path('/v1/products/{id}'), (s, m) => s.api.get('product', m[1]!)],
  ['POST', path('/v1/products/{id}'), (s, m, b) => s.api.updateProduct(m[1]!, b)],
  ['POST', path('/v1/prices'), (s, _m, b) => s.api.createPrice(b)],
  ['GET', path('/v1/prices'), (s, _m, _b, q) => s.api.listPrices(q)],
  ['GET', path('/v1/prices/{id}'), (s, m) => s.api.get('price', m[1]!)],
  ['POST', path('/v1/prices/{id}'), (s, m, b) => s.api.updatePrice(m[1]!, b)],
  ['POST', path('/v1/payment_methods'), (s, _m, b) => s.api.createPaymentMethod(b)],
  [
    'GET',
    path('/v1/payment_methods'),
    (s, _m, _b, q) => {
      const customer = q.get('customer');
      if (customer) s.api.get('customer', customer);
      return s.api.list(
        'payment_method',
        q,
        '/v1/payment_methods',
        (p) => !customer || p.customer === customer,
      );
    },
  ],
  ['GET', path('/v1/payment_methods/{id}'), (s, m) => s.api.get('payment_method', m[1]!)],
  ['POST', path('/v1/payment_methods/{id}/attach'), (s, m, b) => s.api.attachPaymentMethod(m[1]!, b)],
  ['POST', path('/v1/payment_methods/{id}/detach'), (s, m) => s.api.detachPaymentMethod(m[1]!)],
  ['POST', path('/v1/payment_intents'), (s, _m, b, _q, key) => s.api.createPaymentIntent(b, key)],
  [
    'GET',
    path('/v1/payment_intents'),
    (s, _m, _b, q) =>
      s.api.list(
        'payment_intent',
        q,
        '/v1/payment_intents',
        (p) => !q.get('customer') || p.customer === q.get('customer'),
      ),
  ],
  ['GET', path('/v1/payment_intents/{id}'), (s, m) => s.api.get('payment_intent', m[1]!)],
  ['POST', path('/v1/payment_intents/{id}'), (s, m, b) => s.api.updatePaymentIntent(m[1]!, b)],
  [
    'POST',
    path('/v1/payment_intents/{id}/confirm'),
    (s, m, b, _q, key) => s.api.confirmPaymentIntent(m[1]!, b, key),
  ],
  ['POST', path('/v1/payment_intents/{id}/capture'), (s, m, b) => s.api.capturePaymentIntent(m[1]!, b)],
  ['POST', path('/v1/payment_intents/{id}/cancel'), (s, m, b) => s.api.cancelPaymentIntent(m[1]!, b)],
  ['GET', path('/v1/charges'), (s, _m, _b, q) => s.api.listCharges(q)],
  ['GET', path('/v1/charges/{id}'), (s, m) => s.api.get('charge', m[1]!)],
  ['POST', path('/v1/refunds'), (s, _m, b, _q, key) => s.api.createRefund(b, key)],
  ['GET', path('/v1/refunds'), (s, _m, _b, q) => s.api.listRefunds(q)],
  ['GET', path('/v1/refunds/{id}'), (s, m) => s.api.get('refund', m[1]!)],
  ['POST', path('/v1/refunds/{id}'), (s, m, b) => s.api.updateRefund(m[1]!, b)],
  ['POST', path('/v1/subscriptions'), (s, _m, b, _q, key) => s.billing.createSubscription(b, key)],
  ['GET', path('/v1/subscriptions'), (s, _m, _b, q) => s.billing.listSubscriptions(q)],
  ['GET', path('/v1/subscriptions/{id}'), (s, m) => s.api.get('subscription', m[1]!)],
  ['POST', path('/v1/subscriptions/{id}'), (s, m, b, _q, key) => s.billing.updateSubscription(m[1]!, b, key)],
  [
    'DELETE',
    path('/v1/subscriptions/{id}'),
    (s, m, b, _q, key) => s.billing.cancelSubscription(m[1]!, b, key),
  ],
  ['GET', path('/v1/subscription_items'), (s, _m, _b, q) => s.billing.listSubscriptionItems(q)],
  ['GET', path('/v1/subscription_items/{id}'), (s, m) => s.api.get('subscription_item', m[1]!)],
  ['POST', path('/v1/invoices'), (s, _m, b, _q, key) => s.billing.createInvoice(b, key)],
  ['GET', path('/v1/invoices'), (s, _m, _b, q) => s.billing.listInvoices(q)],
  ['GET', path('/v1/invoices/{id}'), (s, m) => s.api.get('invoice', m[1]!)],
  ['POST', path('/v1/invoices/{id}'), (s, m, b) => s.billing.updateInvoice(m[1]!, b)],
  ['GET', path('/v1/invoices/{id}/lines'), (s, m, _b, q) => s.billing.invoiceLines(m[1]!, q)],
  ['POST', path('/v1/invoices/{id}/finalize'), (s, m, _b, _q, key) => s.billing.finalizeInvoice(m[1]!, key)],
  ['POST', path('/v1/invoices/{id}/pay'), (s, m, b, _q, key) => s.billing.payInvoice(m[1]!, b, key)],
  ['POST', path('/v1/invoices/{id}/void'), (s, m) => s.billing.voidInvoice(m[1]!)],
  ['POST', path('/v1/invoiceitems'), (s, _m, b, _q, key) => s.billing.createInvoiceItem(b, key)],
  ['GET', path('/v1/invoiceitems'), (s, _m, _b, q) => s.billing.listInvoiceItems(q)],
  ['GET', path('/v1/invoiceitems/{id}'), (s, m) => s.api.get('invoiceitem', m[1]!)],
  ['POST', path('/v1/invoiceitems/{id}'), (s, m, b) => s.billing.updateInvoiceItem(m[1]!, b)],
  ['DELETE', path('/v1/invoiceitems/{id}'), (s, m) => s.billing.deleteInvoiceItem(m[1]!)],
  ['POST', path('/v1/checkout/sessions'), (s, _m, b) => s.checkout.create(b)],
  ['GET', path('/v1/checkout/sessions'), (s, _m, _b, q) => s.checkout.list(q)],
  ['GET', path('/v1/checkout/sessions/{id}'), (s, m) => s.checkout.retrieve(m[1]!)],
  ['POST', path('/v1/checkout/sessions/{id}/expire'), (s, m) => s.checkout.expire(m[1]!)],
  ['GET', path('/v1/checkout/sessions/{id}/line_items'), (s, m, _b, q) => s.checkout.lineItems(m[1]!, q)],
  ['POST', path('/v1/webhook_endpoints'), (s, _m, b) => s.endpoints.create(b)],
  ['GET', path('/v1/webhook_endpoints'), (s, _m, _b, q) => s.endpoints.list(q)],
  ['GET', path('/v1/webhook_endpoints/{id}'), (s, m) => s.api.get('webhook_endpoint', m[1]!)],
  ['POST', path('/v1/webhook_endpoints/{id}'), (s, m, b) => s.endpoints.update(m[1]!, b)],
  ['DELETE', path('/v1/webhook_endpoints/{id}'), (s, m) => s.endpoints.delete(m[1]!)],
  [
    'GET',
    path('/v1/events'),
    (s, _m, _b, q) => {
      // `type` may end in `*` (`customer.*`); `types[]` names several.
      const wanted = [q.get('type'), ...[...q].filter(([k]) => /^types\[\d*\]$/.test(k)).map(([, v]) => v)];
      const patterns = wanted.filter((w): w is string => !!w);
      const matches = (type: string) =>
        patterns.some((p) => (p.endsWith('*') ? type.startsWith(p.slice(0, -1)) : type === p));
      return s.api.list('event', q, '/v1/events', (e) => !patterns.length || matches(String(e.type)));
    },
  ],
  ['GET', path('/v1/events/{id}'), (s, m) => s.api.get('event', m[1]!)],
];
