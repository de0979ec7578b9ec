/**
 * Parses Stripe's form encoding (`metadata[plan]=pro`, `expand[0]=customer`, `card[token]=tok_visa`) into
 * nested objects; arrays come out as arrays. Values stay strings: handlers coerce the fields they read.
 */
export type FormValue = string | FormObject | FormValue[];
export interface FormObject {
  [key: string]: FormValue;
}

export function parseForm(text: string): FormObject {
  const root: FormObject = {};
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const [head, ...rest] = rawKey.split('[');
    const path = [head ?? '', ...rest.map((p) => p.replace(/\]$/, ''))];
    let node: FormObject = root;
    for (let i = 0; i < path.length - 1; i++) {
      const key = path[i]!;
      const nextKey = path[i + 1]!;
      const existing = node[key];
      if (existing === undefined || typeof existing === 'string') {
        node[key] = /^\d*$/.test(nextKey) ? ([] as unknown as FormObject) : {};
      }
      node = node[key] as FormObject;
    }
    const last = path[path.length - 1]!;
    if (Array.isArray(node) && last === '') (node as unknown as FormValue[]).push(value);
    else node[last] = value;
  }
  return compact(root) as FormObject;
}

/** Sparse arrays (from `expand[3]=` without 0..2) become dense. */
function compact(value: FormValue): FormValue {
  if (Array.isArray(value)) return value.filter((v) => v !== undefined).map(compact);
  if (typeof value === 'object') {
    const out: FormObject = {};
    for (const [k, v] of Object.entries(value)) out[k] = compact(v);
    return out;
  }
  return value;
}
