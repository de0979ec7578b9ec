/**
 * The Stripe API routes the twin serves, each a thin call into a resource family (resources/*.ts) over
 * the store.
 */
import type { FormObject } from './params.ts';
import { listCharges } from './resources/charges.ts';
import {
  createCheckoutSession,
  expireCheckoutSession,
  listCheckoutSessions,
  listLineItems,
  retrieveCheckoutSession,
} from './resources/checkout-sessions.ts';
import {
  createCustomer,
  deleteCustomer,
  listCustomers,
  searchCustomers,
  updateCustomer,
} from './resources/customers.ts';
import { listEvents } from './resources/events.ts';
import {
  createInvoiceItem,
  deleteInvoiceItem,
  listInvoiceItems,
  updateInvoiceItem,
} from './resources/invoice-items.ts';
import { listInvoiceLines } from './resources/invoice-lines.ts';
import {
  createInvoice,
  finalizeInvoice,
  listInvoices,
  payInvoice,
  updateInvoice,
  voidInvoice,
} from './resources/invoices.ts';
import {
  cancelPaymentIntent,
  capturePaymentIntent,
  confirmPaymentIntent,
  createPaymentIntent,
  listPaymentIntents,
  updatePaymentIntent,
} from './resources/payment-intents.ts';
import {
  attachPaymentMethod,
  createPaymentMethod,
  detachPaymentMethod,
  listCustomerPaymentMethods,
  listPaymentMethods,
} from './resources/payment-methods.ts';
import {
  createPrice,
  createProduct,
  listPrices,
  listProducts,
  updatePrice,
  updateProduct,
} from './resources/products.ts';
import { createRefund, listRefunds, updateRefund } from './resources/refunds.ts';
import { listSubscriptionItems } from './resources/subscription-items.ts';
import {
  cancelSubscription,
  createSubscription,
  listSubscriptions,
  updateSubscription,
} from './resources/subscriptions.ts';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  listWebhookEndpoints,
  updateWebhookEndpoint,
} from './resources/webhook-endpoints.ts';
import type { StripeStore } from './store.ts';
import type { StripeApiVersion } from './versions/catalog.ts';

/** What a route works with: the store, and where the hosted checkout page is reached (sessions' `url`). */
export interface StripeContext {
  store: StripeStore;
  /** The origin browsers reach the hosted page on, from outside the sandbox. */
  pageOrigin: () => string;
  /** The version the request is answered in (a webhook endpoint made without `api_version` is pinned to it). */
  apiVersion: StripeApiVersion;
}

export type Route = [
  method: string,
  pattern: RegExp,
  handler: (s: StripeContext, m: string[], body: FormObject, q: URLSearchParams, key?: string) => unknown,
];

const ID = '([^/]+)';
const path = (p: string) => new RegExp(`^${p.replace(/\{id\}/g, ID)}$`);

export const ROUTES: Route[] = [
  ['POST', path('/v1/customers'), (s, _m, b, _q, key) => createCustomer(s.store, b, { idempotencyKey: key })],
  ['GET', path('/v1/customers'), (s, _m, _b, q) => listCustomers(s.store, q)],
  ['GET', path('/v1/customers/search'), (s, _m, _b, q) => searchCustomers(s.store, q)],
  ['GET', path('/v1/customers/{id}'), (s, m) => s.store.find('customer', m[1]!)],
  ['POST', path('/v1/customers/{id}'), (s, m, b) => updateCustomer(s.store, m[1]!, b)],
  ['DELETE', path('/v1/customers/{id}'), (s, m) => deleteCustomer(s.store, m[1]!)],
  [
    'GET',
    path('/v1/customers/{id}/payment_methods'),
    (s, m, _b, q) => listCustomerPaymentMethods(s.store, m[1]!, q),
  ],
  ['POST', path('/v1/products'), (s, _m, b) => createProduct(s.store, b)],
  ['GET', path('/v1/products'), (s, _m, _b, q) => listProducts(s.store, q)],
  ['GET', path('/v1/products/{id}'), (s, m) => s.store.find('product', m[1]!)],
  ['POST', path('/v1/products/{id}'), (s, m, b) => updateProduct(s.store, m[1]!, b)],
  ['POST', path('/v1/prices'), (s, _m, b) => createPrice(s.store, b)],
  ['GET', path('/v1/prices'), (s, _m, _b, q) => listPrices(s.store, q)],
  ['GET', path('/v1/prices/{id}'), (s, m) => s.store.find('price', m[1]!)],
  ['POST', path('/v1/prices/{id}'), (s, m, b) => updatePrice(s.store, m[1]!, b)],
  ['POST', path('/v1/payment_methods'), (s, _m, b) => createPaymentMethod(s.store, b)],
  ['GET', path('/v1/payment_methods'), (s, _m, _b, q) => listPaymentMethods(s.store, q)],
  ['GET', path('/v1/payment_methods/{id}'), (s, m) => s.store.find('payment_method', m[1]!)],
  ['POST', path('/v1/payment_methods/{id}/attach'), (s, m, b) => attachPaymentMethod(s.store, m[1]!, b)],
  ['POST', path('/v1/payment_methods/{id}/detach'), (s, m) => detachPaymentMethod(s.store, m[1]!)],
  ['POST', path('/v1/payment_intents'), (s, _m, b, _q, key) => createPaymentIntent(s.store, b, key)],
  ['GET', path('/v1/payment_intents'), (s, _m, _b, q) => listPaymentIntents(s.store, q)],
  ['GET', path('/v1/payment_intents/{id}'), (s, m) => s.store.find('payment_intent', m[1]!)],
  ['POST', path('/v1/payment_intents/{id}'), (s, m, b) => updatePaymentIntent(s.store, m[1]!, b)],
  [
    'POST',
    path('/v1/payment_intents/{id}/confirm'),
    (s, m, b, _q, key) => confirmPaymentIntent(s.store, m[1]!, b, key),
  ],
  ['POST', path('/v1/payment_intents/{id}/capture'), (s, m, b) => capturePaymentIntent(s.store, m[1]!, b)],
  ['POST', path('/v1/payment_intents/{id}/cancel'), (s, m, b) => cancelPaymentIntent(s.store, m[1]!, b)],
  ['GET', path('/v1/charges'), (s, _m, _b, q) => listCharges(s.store, q)],
  ['GET', path('/v1/charges/{id}'), (s, m) => s.store.find('charge', m[1]!)],
  ['POST', path('/v1/refunds'), (s, _m, b, _q, key) => createRefund(s.store, b, key)],
  ['GET', path('/v1/refunds'), (s, _m, _b, q) => listRefunds(s.store, q)],
  ['GET', path('/v1/refunds/{id}'), (s, m) => s.store.find('refund', m[1]!)],
  ['POST', path('/v1/refunds/{id}'), (s, m, b) => updateRefund(s.store, m[1]!, b)],
  ['POST', path('/v1/subscriptions'), (s, _m, b, _q, key) => createSubscription(s.store, b, key)],
  ['GET', path('/v1/subscriptions'), (s, _m, _b, q) => listSubscriptions(s.store, q)],
  ['GET', path('/v1/subscriptions/{id}'), (s, m) => s.store.find('subscription', m[1]!)],
  ['POST', path('/v1/subscriptions/{id}'), (s, m, b, _q, key) => updateSubscription(s.store, m[1]!, b, key)],
  [
    'DELETE',
    path('/v1/subscriptions/{id}'),
    (s, m, b, _q, key) => cancelSubscription(s.store, m[1]!, b, key),
  ],
  ['GET', path('/v1/subscription_items'), (s, _m, _b, q) => listSubscriptionItems(s.store, q)],
  ['GET', path('/v1/subscription_items/{id}'), (s, m) => s.store.find('subscription_item', m[1]!)],
  ['POST', path('/v1/invoices'), (s, _m, b, _q, key) => createInvoice(s.store, b, key)],
  ['GET', path('/v1/invoices'), (s, _m, _b, q) => listInvoices(s.store, q)],
  ['GET', path('/v1/invoices/{id}'), (s, m) => s.store.find('invoice', m[1]!)],
  ['POST', path('/v1/invoices/{id}'), (s, m, b) => updateInvoice(s.store, m[1]!, b)],
  ['GET', path('/v1/invoices/{id}/lines'), (s, m, _b, q) => listInvoiceLines(s.store, m[1]!, q)],
  ['POST', path('/v1/invoices/{id}/finalize'), (s, m, _b, _q, key) => finalizeInvoice(s.store, m[1]!, key)],
  ['POST', path('/v1/invoices/{id}/pay'), (s, m, b, _q, key) => payInvoice(s.store, m[1]!, b, key)],
  ['POST', path('/v1/invoices/{id}/void'), (s, m) => voidInvoice(s.store, m[1]!)],
  ['POST', path('/v1/invoiceitems'), (s, _m, b, _q, key) => createInvoiceItem(s.store, b, key)],
  ['GET', path('/v1/invoiceitems'), (s, _m, _b, q) => listInvoiceItems(s.store, q)],
  ['GET', path('/v1/invoiceitems/{id}'), (s, m) => s.store.find('invoiceitem', m[1]!)],
  ['POST', path('/v1/invoiceitems/{id}'), (s, m, b) => updateInvoiceItem(s.store, m[1]!, b)],
  ['DELETE', path('/v1/invoiceitems/{id}'), (s, m) => deleteInvoiceItem(s.store, m[1]!)],
  ['POST', path('/v1/checkout/sessions'), (s, _m, b) => createCheckoutSession(s.store, b, s.pageOrigin)],
  ['GET', path('/v1/checkout/sessions'), (s, _m, _b, q) => listCheckoutSessions(s.store, q)],
  ['GET', path('/v1/checkout/sessions/{id}'), (s, m) => retrieveCheckoutSession(s.store, m[1]!)],
  ['POST', path('/v1/checkout/sessions/{id}/expire'), (s, m) => expireCheckoutSession(s.store, m[1]!)],
  ['GET', path('/v1/checkout/sessions/{id}/line_items'), (s, m, _b, q) => listLineItems(s.store, m[1]!, q)],
  ['POST', path('/v1/webhook_endpoints'), (s, _m, b) => createWebhookEndpoint(s.store, b, s.apiVersion)],
  ['GET', path('/v1/webhook_endpoints'), (s, _m, _b, q) => listWebhookEndpoints(s.store, q)],
  ['GET', path('/v1/webhook_endpoints/{id}'), (s, m) => s.store.find('webhook_endpoint', m[1]!)],
  ['POST', path('/v1/webhook_endpoints/{id}'), (s, m, b) => updateWebhookEndpoint(s.store, m[1]!, b)],
  ['DELETE', path('/v1/webhook_endpoints/{id}'), (s, m) => deleteWebhookEndpoint(s.store, m[1]!)],
  ['GET', path('/v1/events'), (s, _m, _b, q) => listEvents(s.store, q)],
  ['GET', path('/v1/events/{id}'), (s, m) => s.store.find('event', m[1]!)],
];
