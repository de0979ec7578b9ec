/**
 * Input that becomes objects, parsed so it can never reach `Object.prototype`. A deployed app is
 * untrusted: a key like `__proto__` or `constructor[prototype]` in a body once polluted the prototype of
 * the whole Twinbox process. Every twin refuses these keys (in the vendor's 400 shape) wherever it turns
 * input into objects, and builds those objects without a prototype.
 */
import { TwinInputError } from '../contract.ts';

const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

export function isForbiddenKey(key: string): boolean {
  return FORBIDDEN.has(key);
}

/** `a[b][c]` → `['a', 'b', 'c']`: the names a bracketed form or query key turns into. */
export function keySegments(key: string): string[] {
  const [head, ...rest] = key.split('[');
  return [head ?? '', ...rest.map((p) => p.replace(/\]$/, ''))];
}

function forbiddenKeyError(key: string): TwinInputError {
  return new TwinInputError(400, `"${key}" is not an allowed key`, 'forbidden_key');
}

/** Throws TwinInputError (code `forbidden_key`) when a bracketed key names a prototype property. */
export function assertSafeFormKey(key: string): void {
  if (keySegments(key).some(isForbiddenKey)) throw forbiddenKeyError(key);
}

/**
 * JSON.parse that refuses `__proto__`, `constructor` and `prototype` keys at any depth. Malformed (or too
 * deeply nested) JSON is a TwinInputError with code `invalid_json`; a refused key has code `forbidden_key`.
 */
export function parseJsonSafe(text: string): unknown {
  let refused: string | undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text, (key, value: unknown) => {
      if (refused === undefined && isForbiddenKey(key)) refused = key;
      return value;
    });
  } catch {
    throw new TwinInputError(400, 'Problems parsing JSON', 'invalid_json');
  }
  if (refused !== undefined) throw forbiddenKeyError(refused);
  return parsed;
}

/** Throws TwinInputError when a value (e.g. a seed document given as an object) has a forbidden key. */
export function assertSafeKeys(value: unknown, label = 'input'): void {
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  while (stack.length) {
    const item = stack.pop();
    if (!item || typeof item !== 'object' || seen.has(item)) continue;
    seen.add(item);
    if (Array.isArray(item)) {
      stack.push(...item);
      continue;
    }
    for (const key of Reflect.ownKeys(item)) {
      if (typeof key === 'string' && isForbiddenKey(key)) {
        throw new TwinInputError(400, `${label}: "${key}" is not an allowed key`, 'forbidden_key');
      }
      stack.push((item as Record<string, unknown>)[key as string]);
    }
  }
}

/** A new object without a prototype, for objects built from input keys. */
export function bareObject<T = unknown>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** Reads a key only when it is the object's own (a lookup by input must never reach the prototype). */
export function ownValue<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Sets an own property even for keys like `__proto__` (plain assignment would call the setter). */
export function setOwn<T>(record: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(record, key, { value, writable: true, enumerable: true, configurable: true });
}

export interface ScreenOptions {
  /**
   * Also parse form field values that are JSON documents (Slack's `blocks`, `attachments`): the engine
   * parses them itself. Off for Stripe, whose values stay strings (e.g. JSON text kept in metadata).
   */
  jsonFormFields?: boolean;
}

const JSON_TYPE = /^application\/([\w.+-]+\+)?json\b/i;

/**
 * Checks a request's query and body before a twin sees them: throws TwinInputError for a forbidden key
 * anywhere (query keys, form keys, JSON keys at any depth, multipart field names) and for malformed JSON
 * declared as JSON. Bodies that are not declared JSON are still checked when they parse as JSON, because
 * the engine's handlers call `c.req.json()` whatever the content type.
 */
export async function screenRequest(
  search: URLSearchParams,
  body: Buffer,
  contentType: string,
  opts: ScreenOptions = {},
): Promise<void> {
  for (const key of search.keys()) assertSafeFormKey(key);
  if (body.length === 0) return;
  const type = contentType.toLowerCase();
  if (type.startsWith('application/x-www-form-urlencoded')) {
    for (const [key, value] of new URLSearchParams(body.toString('utf8'))) {
      assertSafeFormKey(key);
      if (opts.jsonFormFields) screenEmbeddedJson(value);
    }
    return;
  }
  if (type.startsWith('multipart/form-data')) {
    let form: FormData;
    try {
      form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
    } catch {
      throw new TwinInputError(400, 'malformed multipart body', 'invalid_form');
    }
    for (const [key, value] of form) {
      assertSafeFormKey(key);
      if (opts.jsonFormFields && typeof value === 'string') screenEmbeddedJson(value);
    }
    return;
  }
  const text = body.toString('utf8');
  if (JSON_TYPE.test(type)) {
    parseJsonSafe(text);
    return;
  }
  screenEmbeddedJson(text);
}

/** Text that parses as a JSON object or array must not carry forbidden keys; anything else is left alone. */
function screenEmbeddedJson(text: string): void {
  if (!/^\s*[[{]/.test(text)) return;
  try {
    parseJsonSafe(text);
  } catch (error) {
    if (error instanceof TwinInputError && error.code === 'forbidden_key') throw error;
  }
}
