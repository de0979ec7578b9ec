/** Events (`/v1/events`): what the store recorded for each change, as sent to webhooks. */
import type { StripeStore } from '../store.ts';

/** `type` may end in `*` (`customer.*`); `types[]` names several. */
export function listEvents(store: StripeStore, q: URLSearchParams) {
  const wanted = [q.get('type'), ...[...q].filter(([k]) => /^types\[\d*\]$/.test(k)).map(([, v]) => v)];
  const patterns = wanted.filter((w): w is string => !!w);
  const matches = (type: string) =>
    patterns.some((p) => (p.endsWith('*') ? type.startsWith(p.slice(0, -1)) : type === p));
  return store.list('event', q, '/v1/events', (e) => !patterns.length || matches(String(e.type)));
}
