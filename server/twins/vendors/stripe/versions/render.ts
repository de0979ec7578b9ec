/**
 * An answer in the version it was asked in: every Stripe object in it (nested, listed or expanded ones
 * too) gets, from the newest gate down to the version asked for, each gate's downgrade for its type.
 * An event's `data.object` is in the event's own `api_version` (the version it was rendered in when it
 * happened, as on Stripe), whatever version the event itself is read in.
 */
import type { StripeStore } from '../store.ts';
import { isBefore, isServedVersion, type StripeApiVersion } from './catalog.ts';
import type { RenderContext, Shaped, VersionGate } from './gate.ts';
import { checkoutShipping } from './gates/2022-08-01-checkout-shipping.ts';
import { paymentIntentCharges } from './gates/2022-11-15-payment-intent-charges.ts';
import { productAttributes } from './gates/2023-08-16-product-attributes.ts';
import { chargeRefunds } from './gates/2024-04-10-charge-refunds.ts';
import { productFeatures } from './gates/2024-04-10-product-features.ts';
import { captureMethodDefault } from './gates/2024-06-20-capture-method.ts';
import { invoiceParent } from './gates/2025-03-31.basil-invoice-parent.ts';
import { invoicePayments } from './gates/2025-03-31.basil-invoice-payments.ts';
import { removedFields } from './gates/2025-03-31.basil-removed-fields.ts';
import { subscriptionPeriods } from './gates/2025-03-31.basil-subscription-periods.ts';
import { transferData } from './gates/2025-09-30.clover-transfer-data.ts';
import { checkoutUiMode } from './gates/2026-03-25.dahlia-checkout-ui-mode.ts';

/** Newest first: a change is undone after every change made after it. */
export const VERSION_GATES: readonly VersionGate[] = [
  checkoutUiMode,
  transferData,
  subscriptionPeriods,
  invoicePayments,
  invoiceParent,
  removedFields,
  captureMethodDefault,
  productFeatures,
  chargeRefunds,
  productAttributes,
  paymentIntentCharges,
  checkoutShipping,
];

const MAX_DEPTH = 12;

/** Per version: whether no gate applies to it (the versions from the newest gate's on). */
const asStored = new Map<StripeApiVersion, boolean>();

/**
 * Whether an object other than an event is answered in `version` exactly as the store keeps it: no gate
 * lies between that version and the current one, so `renderIn` would copy it and change nothing (only an
 * event's `data` is walked in another version, its own).
 */
export function rendersAsStored(version: StripeApiVersion): boolean {
  let known = asStored.get(version);
  if (known === undefined) {
    known = !VERSION_GATES.some((gate) => isBefore(version, gate.version));
    asStored.set(version, known);
  }
  return known;
}

/** A copy of `body` (an object, a list, an error envelope) in `version`. */
export function renderIn(body: unknown, version: StripeApiVersion, store: StripeStore): unknown {
  // Even in the current version: an event's data may be in an older one.
  if (!body || typeof body !== 'object') return body;
  return walk(structuredClone(body), version, { store }, 0);
}

/** An event as sent to an endpoint pinned to `version`: its `api_version` and `data.object` in it. */
export function eventIn(event: Shaped, version: StripeApiVersion, store: StripeStore): Shaped {
  const copy = structuredClone(event);
  copy.api_version = version;
  return walk(copy, version, { store }, 0) as Shaped;
}

function walk(node: unknown, version: StripeApiVersion, context: RenderContext, depth: number): unknown {
  if (!node || typeof node !== 'object' || depth > MAX_DEPTH) return node;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) node[i] = walk(node[i], version, context, depth + 1);
    return node;
  }
  const object = node as Shaped;
  const type = object.object;
  if (typeof type === 'string') {
    for (const gate of VERSION_GATES) {
      if (!isBefore(version, gate.version)) break;
      gate.objects[type]?.(object, context);
    }
  }
  for (const [key, value] of Object.entries(object)) {
    if (type === 'event' && key === 'data') {
      const own = typeof object.api_version === 'string' ? object.api_version : '';
      object.data = walk(value, isServedVersion(own) ? own : version, context, depth + 1);
    } else object[key] = walk(value, version, context, depth + 1);
  }
  return object;
}
