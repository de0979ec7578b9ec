import { drop, idOf, restore, type VersionGate } from '../gate.ts';
import { subscriptionItems } from '../../resources/subscription-items.ts';

/**
 * basil moved the billing period from the subscription to its items. Before it, a subscription has
 * `current_period_start`/`current_period_end` (one period for all its items, which the twin bills
 * together) and its items have none.
 */
export const subscriptionPeriods: VersionGate = {
  version: '2025-03-31.basil',
  change: 'Subscriptions: current_period_start and current_period_end moved to the subscription items',
  objects: {
    subscription: (subscription, { store }) => {
      const listed = (subscription.items as { data?: Array<Record<string, unknown>> } | undefined)?.data;
      const id = idOf(subscription.id);
      const first = listed?.[0] ?? (id ? subscriptionItems(store, id)[0] : undefined);
      restore(subscription, {
        current_period_start: first?.current_period_start ?? subscription.start_date,
        current_period_end: first?.current_period_end ?? subscription.start_date,
      });
    },
    subscription_item: (item) => drop(item, 'current_period_start', 'current_period_end'),
  },
};
