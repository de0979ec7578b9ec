/**
 * Subscription items (`/v1/subscription_items`): a price and quantity of a subscription, with the legacy
 * `plan` view of the price that Stripe still sends; the subscription embeds them as its `items` list.
 */
import { invalid } from '../errors.ts';
import {
  bool,
  int,
  mergeMetadata,
  metadata,
  missingParam,
  obj,
  str,
  type FormObject,
  type FormValue,
} from '../params.ts';
import { now, type StripeObject, type StripeStore } from '../store.ts';
import { resolvePrice } from './products.ts';

/** The legacy `plan` view of a price, which subscription items still carry. */
export function planOf(price: StripeObject) {
  const recurring = price.recurring as {
    interval: string;
    interval_count: number;
    usage_type: string;
  } | null;
  return {
    id: price.id,
    object: 'plan',
    active: price.active,
    amount: price.unit_amount,
    amount_decimal: price.unit_amount_decimal,
    billing_scheme: price.billing_scheme,
    created: price.created,
    currency: price.currency,
    interval: recurring?.interval ?? 'month',
    interval_count: recurring?.interval_count ?? 1,
    livemode: false,
    metadata: price.metadata,
    meter: null,
    nickname: price.nickname,
    product: price.product,
    tiers_mode: null,
    transform_usage: null,
    trial_period_days: null,
    usage_type: recurring?.usage_type ?? 'licensed',
  };
}

/** The subscription items a create or update asks for, as [price, quantity, metadata] checked. */
export function itemParams(store: StripeStore, items: FormValue[], currency?: string) {
  return items.map((raw, index) => {
    const item = obj(raw) ?? {};
    const param = `items[${index}]`;
    const price = resolvePrice(store, item.price ?? item.plan, item.price_data, param);
    if (price.type !== 'recurring') {
      throw invalid(
        'The price specified is set to `type=one_time` but this field only accepts prices with `type=recurring`.',
        `${param}[price]`,
      );
    }
    if (currency && price.currency !== currency) {
      throw invalid(
        `All prices on a subscription must have the same currency (${currency}); ${price.id} is ${String(price.currency)}.`,
        `${param}[price]`,
      );
    }
    currency ??= price.currency as string;
    return {
      item,
      price,
      quantity: int(item.quantity, `${param}[quantity]`, { min: 0 }) ?? 1,
      metadata: metadata(item.metadata),
    };
  });
}

export function insertSubscriptionItem(
  store: StripeStore,
  subscription: string,
  price: StripeObject,
  quantity: number,
  md: Record<string, string>,
  period: { start: number; end: number },
) {
  return store.insert('subscription_item', {
    billing_thresholds: null,
    current_period_end: period.end,
    current_period_start: period.start,
    current_trial: null,
    discounts: [],
    metadata: md,
    plan: planOf(price),
    price: structuredClone(price),
    quantity,
    subscription,
    tax_rates: [],
  });
}

export function subscriptionItems(store: StripeStore, subscription: string): StripeObject[] {
  return Object.values(store.state.objects)
    .filter(
      (e) => e.data.object === 'subscription_item' && !e.data.deleted && e.data.subscription === subscription,
    )
    .sort((a, b) => a.seq - b.seq)
    .map((e) => e.data);
}

/** Writes the subscription's embedded `items` list from its items. */
export function syncSubscriptionItems(store: StripeStore, id: string): StripeObject {
  const items = subscriptionItems(store, id);
  return store.update(id, {
    items: {
      object: 'list',
      data: structuredClone(items),
      has_more: false,
      total_count: items.length,
      url: `/v1/subscription_items?subscription=${id}`,
    },
  });
}

/** `items[n][id]` changes (price, quantity, metadata) or deletes (`deleted`) an item; without `id`, adds one. */
export function updateSubscriptionItems(
  store: StripeStore,
  subscription: string,
  rawItems: FormValue[],
  currency: string,
): void {
  const current = subscriptionItems(store, subscription);
  const period = {
    start: (current[0]?.current_period_start as number | undefined) ?? now(),
    end: (current[0]?.current_period_end as number | undefined) ?? now(),
  };
  rawItems.forEach((raw, index) => {
    const item = obj(raw) ?? {};
    const param = `items[${index}]`;
    const itemId = str(item.id);
    if (itemId) {
      const existing = store.find('subscription_item', itemId, `${param}[id]`);
      if (existing.subscription !== subscription) {
        throw invalid(`The subscription item ${itemId} belongs to another subscription.`, `${param}[id]`);
      }
      if (bool(item.deleted, `${param}[deleted]`)) {
        store.update(itemId, { deleted: true });
        return;
      }
      const changes: Record<string, unknown> = {};
      if (item.price !== undefined || item.price_data !== undefined) {
        const wanted: FormObject = {};
        if (item.price !== undefined) wanted.price = item.price;
        if (item.price_data !== undefined) wanted.price_data = item.price_data;
        const price = itemParams(store, [wanted], currency)[0]!.price;
        changes.price = structuredClone(price);
        changes.plan = planOf(price);
      }
      const quantity = int(item.quantity, `${param}[quantity]`, { min: 0 });
      if (quantity !== undefined) changes.quantity = quantity;
      if (item.metadata !== undefined) changes.metadata = mergeMetadata(existing.metadata, item.metadata);
      store.update(itemId, changes);
    } else {
      const [added] = itemParams(store, [item], currency);
      insertSubscriptionItem(store, subscription, added!.price, added!.quantity, added!.metadata, period);
    }
  });
  if (!subscriptionItems(store, subscription).length) {
    throw invalid('A subscription needs at least one item; cancel it instead.', 'items');
  }
}

export function listSubscriptionItems(store: StripeStore, q: URLSearchParams) {
  const subscription = q.get('subscription');
  if (!subscription) missingParam('subscription');
  store.find('subscription', subscription, 'subscription');
  return store.list('subscription_item', q, '/v1/subscription_items', (i) => i.subscription === subscription);
}
