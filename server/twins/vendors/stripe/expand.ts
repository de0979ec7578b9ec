/**
 * Stripe's `expand[]`: an id in a response is replaced by the object it names (`expand[]=customer`,
 * nested as `latest_invoice.payment_intent`, in lists as `data.customer`). Fields that are not ids but
 * are only sent when asked for (a checkout session's `line_items`) come from `computed`.
 */
import { StripeError } from './errors.ts';

const MAX_DEPTH = 4;
const MAX_PATHS = 20;

export type Computed = (object: Record<string, unknown>, field: string) => unknown;

/** The expand paths of a request: `expand[]=a`, `expand[0]=a` in the query, or an `expand` array in the form. */
export function expandPaths(query: URLSearchParams, form: Record<string, unknown>): string[] {
  const paths: string[] = [];
  for (const [key, value] of query) if (/^expand\[\d*\]$/.test(key)) paths.push(value);
  const fromForm = form.expand;
  if (Array.isArray(fromForm)) for (const p of fromForm) if (typeof p === 'string') paths.push(p);
  if (paths.length > MAX_PATHS) {
    throw new StripeError(400, {
      type: 'invalid_request_error',
      message: `You cannot expand more than ${MAX_PATHS} properties at once.`,
      param: 'expand',
    });
  }
  return paths;
}

function cannot(path: string): never {
  throw new StripeError(400, {
    type: 'invalid_request_error',
    message: `This property cannot be expanded (${path}).`,
    param: 'expand',
  });
}

/** A deep copy of `body` with every path expanded; `lookup` finds an object by id. */
export function expandResponse(
  body: unknown,
  paths: string[],
  lookup: (id: string) => Record<string, unknown> | undefined,
  computed: Computed,
): unknown {
  if (!paths.length || !body || typeof body !== 'object') return body;
  const out = structuredClone(body) as Record<string, unknown>;
  for (const path of paths) {
    const segments = path.split('.');
    if (segments.length > MAX_DEPTH + 1) {
      throw new StripeError(400, {
        type: 'invalid_request_error',
        message: `You cannot expand more than ${MAX_DEPTH} levels of a property (${path}).`,
        param: 'expand',
      });
    }
    expandAt(out, segments, path, lookup, computed);
  }
  return out;
}

function expandAt(
  node: Record<string, unknown>,
  segments: string[],
  path: string,
  lookup: (id: string) => Record<string, unknown> | undefined,
  computed: Computed,
): void {
  const [field, ...rest] = segments;
  if (!field) return;
  if (field === 'data' && node.object === 'list' && Array.isArray(node.data)) {
    for (const item of node.data) {
      if (item && typeof item === 'object')
        expandAt(item as Record<string, unknown>, rest, path, lookup, computed);
    }
    return;
  }
  if (!Object.hasOwn(node, field)) {
    const value = computed(node, field);
    if (value === undefined) cannot(path);
    node[field] = value;
  }
  let value = node[field];
  if (typeof value === 'number' || typeof value === 'boolean') cannot(path);
  if (typeof value === 'string') {
    const found = lookup(value);
    if (!found) cannot(path);
    value = structuredClone(found);
    node[field] = value;
  }
  if (value === null || !rest.length) return;
  if (Array.isArray(value)) {
    for (const item of value) {
      if (item && typeof item === 'object')
        expandAt(item as Record<string, unknown>, rest, path, lookup, computed);
    }
  } else if (typeof value === 'object') {
    expandAt(value as Record<string, unknown>, rest, path, lookup, computed);
  }
}
