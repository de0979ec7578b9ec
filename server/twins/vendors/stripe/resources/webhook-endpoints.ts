/**
 * `/v1/webhook_endpoints`: endpoints an app registers through the API. Each enabled endpoint gets the
 * events its `enabled_events` name (`*` for all), signed with its own `whsec_` secret, which Stripe shows
 * once, in the answer to the create call.
 */
import { randomToken } from '../../../runtime/secrets.ts';
import { invalid } from '../errors.ts';
import {
  arr,
  bool,
  mergeMetadata,
  metadata,
  missingParam,
  required,
  str,
  type FormObject,
} from '../params.ts';
import type { StripeStore } from '../store.ts';
import { servedVersion, type StripeApiVersion } from '../versions/catalog.ts';

const MAX_ENDPOINTS = 16;

export interface EndpointTarget {
  id: string;
  url: string;
  secret: string;
  events: string[];
  /** The version its events are rendered in. */
  apiVersion: StripeApiVersion | undefined;
}

function checkedUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return value;
  } catch {
    // refused below
  }
  throw invalid('Invalid URL: must be an absolute http or https URL.', 'url', 'url_invalid');
}

function events(value: FormObject[string] | undefined): string[] {
  const list = arr(value).filter((e): e is string => typeof e === 'string');
  if (!list.length) {
    missingParam('enabled_events');
  }
  for (const [i, e] of list.entries()) {
    if (e !== '*' && !/^[a-z_]+(\.[a-z_]+)+$/.test(e))
      throw invalid(`Invalid enabled_events[${i}]: ${e}`, `enabled_events[${i}]`);
  }
  return list;
}

/**
 * `api_version`: the version its events are rendered in, the one given or else the version of the
 * request that made it (so an app's SDK gets events in the version it pins).
 */
export function createWebhookEndpoint(store: StripeStore, b: FormObject, requestVersion: StripeApiVersion) {
  if (store.all('webhook_endpoint').length >= MAX_ENDPOINTS) {
    throw invalid(`You have reached the maximum of ${MAX_ENDPOINTS} test webhook endpoints.`);
  }
  const asked = str(b.api_version);
  const apiVersion = asked ? servedVersion(asked, 'api_version') : requestVersion;
  const secret = randomToken('whsec_');
  const endpoint = store.insert(
    'webhook_endpoint',
    {
      api_version: apiVersion,
      application: null,
      description: str(b.description) ?? null,
      enabled_events: events(b.enabled_events),
      metadata: metadata(b.metadata),
      status: 'enabled',
      url: checkedUrl(required(b.url, 'url')),
    },
    { secret },
  );
  return { ...endpoint, secret };
}

export function updateWebhookEndpoint(store: StripeStore, id: string, b: FormObject) {
  const endpoint = store.find('webhook_endpoint', id);
  const changes: Record<string, unknown> = {};
  if (b.url !== undefined) changes.url = checkedUrl(required(b.url, 'url'));
  if (b.enabled_events !== undefined) changes.enabled_events = events(b.enabled_events);
  if (str(b.description) !== undefined) changes.description = str(b.description) || null;
  if (b.metadata !== undefined) changes.metadata = mergeMetadata(endpoint.metadata, b.metadata);
  const disabled = bool(b.disabled, 'disabled');
  if (disabled !== undefined) changes.status = disabled ? 'disabled' : 'enabled';
  return store.update(id, changes);
}

export function deleteWebhookEndpoint(store: StripeStore, id: string) {
  store.find('webhook_endpoint', id);
  store.update(id, { deleted: true });
  return { id, object: 'webhook_endpoint', deleted: true };
}

export function listWebhookEndpoints(store: StripeStore, q: URLSearchParams) {
  return store.list('webhook_endpoint', q, '/v1/webhook_endpoints');
}

/** The enabled endpoints that want an event of this type, with their signing secrets. */
export function endpointTargets(store: StripeStore, type: string): EndpointTarget[] {
  return store
    .all('webhook_endpoint')
    .filter((e) => e.status === 'enabled')
    .filter((e) => (e.enabled_events as string[]).some((wanted) => wanted === '*' || wanted === type))
    .map((e) => ({
      id: e.id,
      url: String(e.url),
      secret: String(store.hidden(e.id).secret),
      events: e.enabled_events as string[],
      apiVersion: (e.api_version as StripeApiVersion | null) ?? undefined,
    }));
}
