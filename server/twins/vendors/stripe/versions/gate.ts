/**
 * One change of Stripe's API between two versions, as the twin undoes it for requests in older versions.
 *
 * The store keeps every object in the current version's shape (the internal model). A gate names the
 * version that introduced a change and, per object type, how to give an object the shape it had before:
 * Stripe's own version gates work the same way, one transform per change, applied from the newest
 * release down to the version asked for.
 */
import type { StripeStore } from '../store.ts';
import type { StripeApiVersion } from './catalog.ts';

export type Shaped = Record<string, unknown>;

/** What a gate may read besides the object itself: other objects and their hidden parts. */
export interface RenderContext {
  store: StripeStore;
}

/** Rewrites `object` (a private copy) into the shape it had before the gate's version. */
export type Downgrade = (object: Shaped, context: RenderContext) => void;

export interface VersionGate {
  /** The release that made the change: requests in any older version get the older shape. */
  version: StripeApiVersion;
  /** What changed, in the words of Stripe's changelog. */
  change: string;
  /** By `object` type (`subscription`, `checkout.session`, ...). */
  objects: Record<string, Downgrade>;
}

/** Removes fields that the older version did not have. */
export function drop(object: Shaped, ...fields: string[]): void {
  for (const field of fields) delete object[field];
}

/** Adds fields the older version had and the current one removed, keeping any already there. */
export function restore(object: Shaped, fields: Shaped): void {
  for (const [field, value] of Object.entries(fields)) if (!(field in object)) object[field] = value;
}

/** An id, or the id of an expanded object, or null. */
export function idOf(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { id?: unknown }).id === 'string') {
    return (value as { id: string }).id;
  }
  return null;
}
