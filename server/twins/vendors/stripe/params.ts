/**
 * The parameters of a Stripe request: the form encoding parsed (`parseForm`), and the readers that check
 * one parameter each and refuse it as Stripe does (a 400 `invalid_request_error` naming the `param`).
 *
 * Parses Stripe's form encoding (`metadata[plan]=pro`, `expand[0]=customer`, `card[token]=tok_visa`) into
 * nested objects; arrays come out as arrays. Values stay strings: handlers coerce the fields they read.
 *
 * The input is an untrusted app's: objects are built without a prototype, keys that name prototype
 * properties are refused, and nesting and array indices are bounded, so no body can reach
 * `Object.prototype`, allocate a huge sparse array or overflow the stack.
 */
import { isForbiddenKey, keySegments, setOwn } from '../../runtime/safe-json.ts';
import { invalid } from './errors.ts';

export type FormValue = string | FormObject | FormValue[];
export interface FormObject {
  [key: string]: FormValue;
}

/** A key the form parser refuses; the Stripe twin answers it as Stripe does, a 400 `invalid_request_error`. */
export class FormError extends Error {
  constructor(
    message: string,
    readonly param: string,
  ) {
    super(message);
    this.name = 'FormError';
  }
}

const MAX_DEPTH = 16;
const MAX_INDEX = 10_000;

/** A node being built: its children by key, in the order first seen; `[]` appends. */
interface Branch {
  children: Map<string, Branch | string>;
  appended: number;
}

const branch = (): Branch => ({ children: new Map(), appended: 0 });
const isIndex = (key: string) => /^\d+$/.test(key);

export function parseForm(text: string): FormObject {
  const root = branch();
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const path = keySegments(rawKey);
    for (const segment of path) {
      if (isForbiddenKey(segment)) throw new FormError(`Received unknown parameter: ${rawKey}`, rawKey);
      if (isIndex(segment) && Number(segment) > MAX_INDEX) {
        throw new FormError(`Invalid array index in ${rawKey}: at most ${MAX_INDEX}`, rawKey);
      }
    }
    if (path.length > MAX_DEPTH) {
      throw new FormError(`Parameter ${rawKey} is nested more than ${MAX_DEPTH} levels deep`, rawKey);
    }
    let node = root;
    for (let i = 0; i < path.length - 1; i++) {
      const key = childKey(node, path[i]!);
      const existing = node.children.get(key);
      if (existing === undefined || typeof existing === 'string') {
        const created = branch();
        node.children.set(key, created);
        node = created;
      } else node = existing;
    }
    node.children.set(childKey(node, path[path.length - 1]!), value);
  }
  return finish(root, true) as FormObject;
}

/** `a[]=x&a[]=y`: each empty key is the next index. */
function childKey(node: Branch, segment: string): string {
  if (segment !== '') return segment;
  return `\0${node.appended++}`;
}

/** A branch whose keys are all indices (or appends) is an array, dense and in index order. */
function finish(node: Branch, root = false): FormValue {
  const keys = [...node.children.keys()];
  const isArray = !root && keys.length > 0 && keys.every((k) => isIndex(k) || k.startsWith('\0'));
  const value = (child: Branch | string): FormValue => (typeof child === 'string' ? child : finish(child));
  if (isArray) {
    const order = (k: string) => (k.startsWith('\0') ? MAX_INDEX + 1 + Number(k.slice(1)) : Number(k));
    return keys.sort((a, b) => order(a) - order(b)).map((k) => value(node.children.get(k)!));
  }
  const out = Object.create(null) as FormObject;
  for (const [key, child] of node.children) out[key.startsWith('\0') ? '' : key] = value(child);
  return out;
}

export const str = (v: FormValue | undefined): string | undefined => (typeof v === 'string' ? v : undefined);
export const obj = (v: FormValue | undefined): FormObject | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
/** A form array (`items[0][price]=...`), or an object keyed by index when the client sent gaps. */
export const arr = (v: FormValue | undefined): FormValue[] =>
  Array.isArray(v) ? v : v && typeof v === 'object' ? Object.values(v) : [];
/** Metadata as Stripe stores it: string values only, an empty string deletes the key on update. */
export const metadata = (v: FormValue | undefined): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(obj(v) ?? {})) if (typeof value === 'string') setOwn(out, k, value);
  return out;
};
export function mergeMetadata(current: unknown, v: FormValue | undefined): Record<string, string> {
  // `metadata=` (empty) clears all keys, as on Stripe.
  if (v === '') return {};
  const merged: Record<string, string> = { ...((current as Record<string, string> | null) ?? {}) };
  for (const [k, value] of Object.entries(metadata(v))) {
    if (value === '') delete merged[k];
    else setOwn(merged, k, value);
  }
  return merged;
}

export function bool(v: FormValue | undefined, param: string): boolean | undefined {
  if (v === undefined) return undefined;
  // stripe-python formats a Python bool with str(): `True`/`False`, which Stripe's v1 API reads too.
  if (v === 'true' || v === 'True') return true;
  if (v === 'false' || v === 'False') return false;
  throw invalid(`Invalid boolean: ${typeof v === 'string' ? v : 'a hash'}`, param);
}

export function int(
  v: FormValue | undefined,
  param: string,
  opts: { required?: boolean; min?: number } = {},
): number | undefined {
  if (v === undefined || v === '') {
    if (opts.required) missingParam(param);
    return undefined;
  }
  // Checked before Number(): a nested value (`amount[x]=1`) is a prototype-less object, not a number.
  const n = typeof v === 'string' ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < (opts.min ?? 0)) {
    const shown = typeof v === 'string' ? v : Array.isArray(v) ? 'an array' : 'a hash';
    throw invalid(`Invalid integer: ${shown}`, param, 'parameter_invalid_integer');
  }
  return n;
}

export function required(v: FormValue | undefined, param: string): string {
  const s = str(v);
  if (!s) missingParam(param);
  return s;
}

export function missingParam(param: string): never {
  throw invalid(`Missing required param: ${param}.`, param, 'parameter_missing');
}

export function oneOf<T extends string>(
  v: FormValue | undefined,
  param: string,
  allowed: readonly T[],
): T | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'string' && (allowed as readonly string[]).includes(v)) return v as T;
  throw invalid(
    `Invalid ${param}: must be one of ${allowed.join(', ')}`,
    param,
    'parameter_invalid_string_empty',
  );
}

export function currencyOf(v: FormValue | undefined, param = 'currency'): string {
  const c = required(v, param).toLowerCase();
  if (!/^[a-z]{3}$/.test(c)) throw invalid(`Invalid currency: ${c}.`, param);
  return c;
}

export function listLimit(query: URLSearchParams): number {
  const limitRaw = query.get('limit');
  const limit = limitRaw === null ? 10 : Number(limitRaw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw invalid('Invalid limit: must be an integer between 1 and 100.', 'limit');
  }
  return limit;
}
