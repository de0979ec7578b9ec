/**
 * Linear twin answers checked against Linear's own GraphQL schema (issue 13).
 *
 * `../shared/vendor-schemas/linear/schema.graphql` is Linear's SDL (linear/linear, trimmed by
 * `linear-schema-trim.ts` to the types the served root fields reach; not committed, see `vendor-schema-dir.ts`).
 * The twin shapes its answers to the schema @linear/sdk declares (`server/twins/vendors/linear/sdk-schema/`), so this
 * checks that one against Linear's own. Each request @linear/sdk sends is checked with graphql-js itself:
 * the document must validate against the schema, and the answer's `data` is run back through `execute` with
 * the data as root value and a resolver that reads each response key. graphql-js then reports a null in a
 * non-null field and a value its scalar or enum cannot serialize; the resolver adds the checks graphql-js
 * coerces past (a number where a String or ID is due, a string where an Int, Float or Boolean is).
 * @linear/sdk calls the global `fetch` and takes no other, so `checkLinearFetch` swaps the global for the
 * length of a test file, as `vendor-hooks.ts` does for resend-node.
 */
import {
  GraphQLError,
  Kind,
  buildSchema,
  execute,
  getNamedType,
  parse,
  validate,
  type DocumentNode,
  type GraphQLFieldResolver,
  type GraphQLSchema,
  type GraphQLTypeResolver,
} from 'graphql';
import { readVendorSchemaText } from './vendor-schema-dir.ts';

let cached: GraphQLSchema | undefined;

/** Linear's own schema, built once per process (a missing file throws VendorSchemaMissingError). */
export function linearSchema(): GraphQLSchema {
  cached ??= buildSchema(readVendorSchemaText('linear', 'schema.graphql'));
  return cached;
}

export class LinearSchemaError extends Error {
  constructor(
    readonly operation: string,
    readonly problems: string[],
  ) {
    super(`Linear schema: ${operation}: ${problems.join('; ')}`);
    this.name = 'LinearSchemaError';
  }
}

const typeOfLeaf: Record<string, string> = {
  String: 'string',
  ID: 'string',
  Int: 'number',
  Float: 'number',
  Boolean: 'boolean',
};

/** Reads the answer's value at the response key, and refuses a built-in scalar of the wrong JS type. */
const readKey: GraphQLFieldResolver<unknown, unknown> = (source, _args, _context, info) => {
  const value =
    source && typeof source === 'object' ? (source as Record<string, unknown>)[info.path.key] : undefined;
  const expected = typeOfLeaf[getNamedType(info.returnType).name];
  const check = (v: unknown) => {
    if (v !== null && v !== undefined && expected && typeof v !== expected)
      throw new GraphQLError(`${getNamedType(info.returnType).name} expected, got ${JSON.stringify(v)}`);
  };
  if (Array.isArray(value)) value.forEach(check);
  else check(value);
  return value;
};

/** An answer names its concrete type by `__typename`; a document that asks none gets the only possible one. */
const typeOf: GraphQLTypeResolver<unknown, unknown> = (value, _context, info, abstractType) => {
  const named = (value as { __typename?: unknown } | null)?.__typename;
  if (typeof named === 'string') return named;
  const possible = info.schema.getPossibleTypes(abstractType);
  return possible.length === 1 ? possible[0]!.name : undefined;
};

export interface LinearRequest {
  query: string;
  variables?: Record<string, unknown>;
  operationName?: string;
}

/** The root fields a document selects (`issue`, `issueCreate`): what it calls of Linear's API. */
export function rootFields(document: DocumentNode): string[] {
  const names: string[] = [];
  for (const def of document.definitions)
    if (def.kind === Kind.OPERATION_DEFINITION)
      for (const selection of def.selectionSet.selections)
        if (selection.kind === Kind.FIELD) names.push(`${def.operation} ${selection.name.value}`);
  return names;
}

/** Every problem of one request and its answer's `data` against Linear's schema (none: it conforms). */
export async function checkLinearAnswer(request: LinearRequest, data: unknown): Promise<string[]> {
  const schema = linearSchema();
  let document: DocumentNode;
  try {
    document = parse(request.query);
  } catch (error) {
    return [`the query does not parse: ${(error as Error).message}`];
  }
  const invalid = validate(schema, document);
  if (invalid.length) return invalid.map((e) => `query: ${e.message}`);
  if (data === null || data === undefined) return [];
  const result = await execute({
    schema,
    document,
    rootValue: data,
    variableValues: request.variables ?? {},
    operationName: request.operationName,
    fieldResolver: readKey,
    typeResolver: typeOf,
  });
  return (result.errors ?? []).map((e) => `${e.path?.join('.') ?? ''}: ${e.message}`);
}

/** Root fields (`query issue`) whose answers were checked, across the test file. */
export const checkedOperations = new Set<string>();

/**
 * Sends every GraphQL request (a JSON `POST .../graphql` with a `query`) through the check until the test
 * ends: a request the schema refuses, or an answer with `data` that does not conform, throws
 * `LinearSchemaError` out of the SDK call. A body that is not such JSON (a test's malformed probe) goes
 * through unchecked. `send` is what sends the requests (the global `fetch` as it was).
 */
export function checkLinearFetch(
  t: { teardown(fn: () => void): void },
  send: typeof globalThis.fetch = globalThis.fetch,
): void {
  const original = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const request = new Request(input, init);
    if (request.method !== 'POST' || !new URL(request.url).pathname.endsWith('/graphql'))
      return send(request);
    let body: LinearRequest;
    try {
      body = (await request.clone().json()) as LinearRequest;
    } catch {
      return send(request);
    }
    if (typeof body?.query !== 'string') return send(request);
    const response = await send(request);
    const answer = (await response.clone().json()) as { data?: unknown };
    const problems = await checkLinearAnswer(body, answer.data);
    if (problems.length) throw new LinearSchemaError(body.operationName ?? 'anonymous', problems);
    for (const name of rootFields(parse(body.query))) checkedOperations.add(name);
    return response;
  };
  t.teardown(() => {
    globalThis.fetch = original;
  });
}
