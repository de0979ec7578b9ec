/**
 * Stripe's search query language (https://docs.stripe.com/search#search-query-language), the part the
 * customer search takes: clauses `field:value` (exact, case-insensitive), `field~value` (substring, at
 * least 3 characters), `field>n` / `<` / `>=` / `<=` (numbers), `-` before a clause to negate it,
 * `metadata['key']:'value'`, and clauses joined by spaces or `AND`, or by `OR` (not both in one query,
 * as on Stripe). String values are quoted ('single' or "double"); `null` matches a field that has no value.
 */
import { ownValue } from '../../runtime/safe-json.ts';
import { StripeError } from './errors.ts';

export interface SearchClause {
  field: string;
  /** For `metadata['key']`. */
  key?: string;
  op: ':' | '~' | '>' | '<' | '>=' | '<=';
  value: string | number | null;
  negated: boolean;
}

export interface SearchQuery {
  clauses: SearchClause[];
  join: 'AND' | 'OR';
}

const MAX_CLAUSES = 10;

function refuse(detail: string): never {
  throw new StripeError(400, {
    type: 'invalid_request_error',
    message: `Invalid search query: ${detail}. See https://docs.stripe.com/search#search-query-language.`,
    param: 'query',
  });
}

/** Parses a query for the given searchable fields; a malformed query is Stripe's 400 on `query`. */
export function parseSearchQuery(text: string, fields: readonly string[]): SearchQuery {
  let i = 0;
  const clauses: SearchClause[] = [];
  const joins = new Set<'AND' | 'OR'>();
  const skipSpace = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const quoted = (): string => {
    const quote = text[i];
    if (quote !== "'" && quote !== '"') refuse(`expected a quoted value at position ${i}`);
    let out = '';
    i++;
    while (i < text.length && text[i] !== quote) {
      // A backslash escapes the quote character (`'O\'Brien'`).
      if (text[i] === '\\' && i + 1 < text.length) i++;
      out += text[i++];
    }
    if (i >= text.length) refuse('a quoted value is not closed');
    i++;
    return out;
  };
  skipSpace();
  if (i >= text.length) refuse('the query is empty');
  while (i < text.length) {
    if (clauses.length) {
      const word = /^(AND|OR)(?=\s)/i.exec(text.slice(i));
      if (word) {
        joins.add(word[1]!.toUpperCase() as 'AND' | 'OR');
        i += word[1]!.length;
        skipSpace();
      } else joins.add('AND');
    }
    const negated = text[i] === '-';
    if (negated) i++;
    const name = /^[a-z_]+/.exec(text.slice(i))?.[0];
    if (!name) refuse(`expected a field name at position ${i}`);
    i += name.length;
    if (!fields.includes(name))
      refuse(`the field \`${name}\` is not supported; use one of ${fields.join(', ')}`);
    let key: string | undefined;
    if (name === 'metadata') {
      if (text[i] !== '[') refuse("metadata takes a key: metadata['key']");
      i++;
      key = quoted();
      if (text[i] !== ']') refuse('expected ] after the metadata key');
      i++;
    }
    const op = /^(>=|<=|:|~|>|<)/.exec(text.slice(i))?.[1] as SearchClause['op'] | undefined;
    if (!op) refuse(`expected :, ~, >, <, >= or <= after ${name}`);
    i += op.length;
    let value: SearchClause['value'];
    if (text[i] === "'" || text[i] === '"') value = quoted();
    else {
      const bare = /^[^\s]+/.exec(text.slice(i))?.[0] ?? '';
      i += bare.length;
      if (bare === 'null') value = null;
      else if (/^-?\d+(\.\d+)?$/.test(bare)) value = Number(bare);
      else refuse(`the value of ${name} must be quoted`);
    }
    if (op === '~' && (typeof value !== 'string' || value.length < 3)) {
      refuse('substring matching (~) needs a quoted value of at least 3 characters');
    }
    if (op !== ':' && op !== '~' && typeof value !== 'number') {
      refuse(`${op} compares numbers: ${name}${op}${String(value)}`);
    }
    clauses.push({ field: name, ...(key !== undefined ? { key } : {}), op, value, negated });
    if (clauses.length > MAX_CLAUSES) refuse(`at most ${MAX_CLAUSES} clauses`);
    const before = i;
    skipSpace();
    if (i === before && i < text.length) refuse(`expected a space after the clause ending at position ${i}`);
  }
  if (joins.size > 1) refuse('AND and OR cannot be combined in one query');
  return { clauses, join: joins.has('OR') ? 'OR' : 'AND' };
}

function matchClause(clause: SearchClause, object: Record<string, unknown>): boolean {
  const raw =
    clause.field === 'metadata'
      ? ownValue((object.metadata ?? {}) as Record<string, unknown>, clause.key!)
      : object[clause.field];
  const actual = raw === undefined ? null : raw;
  const { op, value } = clause;
  if (value === null) return actual === null || actual === '';
  if (op === ':') {
    if (typeof value === 'number') return typeof actual === 'number' && actual === value;
    return typeof actual === 'string' && actual.toLowerCase() === value.toLowerCase();
  }
  if (op === '~')
    return typeof actual === 'string' && actual.toLowerCase().includes(String(value).toLowerCase());
  if (typeof actual !== 'number' || typeof value !== 'number') return false;
  return op === '>'
    ? actual > value
    : op === '<'
      ? actual < value
      : op === '>='
        ? actual >= value
        : actual <= value;
}

export function matchesSearch(query: SearchQuery, object: Record<string, unknown>): boolean {
  const results = query.clauses.map((c) => matchClause(c, object) !== c.negated);
  return query.join === 'AND' ? results.every(Boolean) : results.some(Boolean);
}
