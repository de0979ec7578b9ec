/**
 * `/v1/webhook_endpoints`: endpoints an app registers through the API. Each enabled endpoint gets the
 * events its `enabled_events` name (`*` for all), signed with its own `whsec_` secret, which Stripe shows
 * once, in the answer to the create call.
 */
import {
  arr,
  bool,
  invalid,
  mergeMetadata,
  metadata,
  required,
  str,
  type StripeApi,
  type StripeObject,
} from './api.ts';
import type { FormObject } from './form.ts';
import { randomToken } from '../../runtime/secrets.ts';

const MAX_ENDPOINTS = 16;

export interface EndpointTarget {
  id: string;
  url: string;
  secret: string;
  events: string[];
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
    throw invalid('Missing required param: enabled_events.', 'enabled_events', 'parameter_missing');
  }
  for (const [i, e] of list.entries()) {
    if (e !== '*' && !/^[a-z_]+(\.[a-z_]+)+$/.test(e))
      throw invalid(`Invalid enabled_events[${i}]: ${e}`, `enabled_events[${i}]`);
  }
  return list;
}

export class StripeWebhookEndpoints {
  constructor(private readonly api: StripeApi) {}

  private all(): StripeObject[] {
    return Object.values(this.api.state.objects)
      .filter((e) => e.data.object === 'webhook_endpoint' && !e.data.deleted)
      .map((e) => e.data);
  }

  create(b: FormObject) {
    if (this.all().length >= MAX_ENDPOINTS) {
      throw invalid(`You have reached the maximum of ${MAX_ENDPOINTS} test webhook endpoints.`);
    }
    const secret = randomToken('whsec_');
    const endpoint = this.api.insert(
      'webhook_endpoint',
      {
        api_version: str(b.api_version) ?? null,
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

  update(id: string, b: FormObject) {
    const endpoint = this.api.find('webhook_endpoint', id);
    const changes: Record<string, unknown> = {};
    if (b.url !== undefined) changes.url = checkedUrl(required(b.url, 'url'));
    if (b.enabled_events !== undefined) changes.enabled_events = events(b.enabled_events);
    if (str(b.description) !== undefined) changes.description = str(b.description) || null;
    if (b.metadata !== undefined) changes.metadata = mergeMetadata(endpoint.metadata, b.metadata);
    const disabled = bool(b.disabled, 'disabled');
    if (disabled !== undefined) changes.status = disabled ? 'disabled' : 'enabled';
    return this.api.update(id, changes);
  }

  delete(id: string) {
    this.api.find('webhook_endpoint', id);
    this.api.update(id, { deleted: true });
    return { id, object: 'webhook_endpoint', deleted: true };
  }

  list(q: URLSearchParams) {
    return this.api.list('webhook_endpoint', q, '/v1/webhook_endpoints');
  }

  /** The enabled endpoints that want an event of this type, with their signing secrets. */
  targetsFor(type: string): EndpointTarget[] {
    return this.all()
      .filter((e) => e.status === 'enabled')
      .filter((e) => (e.enabled_events as string[]).some((wanted) => wanted === '*' || wanted === type))
      .map((e) => ({
        id: e.id,
        url: String(e.url),
        secret: String(this.api.hidden(e.id).secret),
        events: e.enabled_events as string[],
      }));
  }
}
