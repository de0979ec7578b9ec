/**
 * Parses Stripe's form encoding (`metadata[plan]=pro`, `expand[0]=customer`, `card[token]=tok_visa`) into
 * nested objects; arrays come out as arrays. Values stay strings: handlers coerce the fields they read.
 *
 * The input is an untrusted app's: objects are built without a prototype, keys that name prototype
 * properties are refused, and nesting and array indices are bounded, so no body can reach
 * `Object.prototype`, allocate a huge sparse array or overflow the stack.
 */
import { isForbiddenKey, keySegments } from '../../runtime/safe-json.ts';

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
