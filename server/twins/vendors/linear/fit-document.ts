/**
 * Fits a GraphQL document written against Linear's full schema to the engine's smaller one.
 *
 * @linear/sdk sends generated documents that select every field of a type and declare variables of
 * types such as `IssueSortInput`; the engine's schema has a subset of Linear's fields and types, so it
 * rejects the whole document ("Cannot query field ..."). Linear's own answer to such a document would
 * carry those fields. Removed: fields, arguments and fragments the engine's schema lacks, variables of unknown
 * types (and arguments that use them), selections left empty, variables left unused, and input-object
 * keys the engine's input types lack. A document that does not parse is passed on unchanged, so the
 * engine answers it with its own GraphQL error. `shape.ts` then gives the answer Linear's shape.
 */
import {
  Kind,
  TypeInfo,
  buildClientSchema,
  getIntrospectionQuery,
  getNamedType,
  isInputObjectType,
  isListType,
  isNonNullType,
  parse,
  parseType,
  print,
  typeFromAST,
  visit,
  visitWithTypeInfo,
  type ASTNode,
  type DocumentNode,
  type GraphQLInputType,
  type GraphQLSchema,
  type IntrospectionQuery,
  type TypeNode,
} from 'graphql';

let engineSchema: Promise<GraphQLSchema> | undefined;

/** The engine's schema, read once per process through its own introspection (it is the same for all). */
export function linearEngineSchema(
  fetchGraphql: (body: string) => Promise<Response>,
): Promise<GraphQLSchema> {
  engineSchema ??= (async () => {
    const response = await fetchGraphql(JSON.stringify({ query: getIntrospectionQuery() }));
    const { data } = (await response.json()) as { data?: IntrospectionQuery };
    if (!data) throw new Error('linear engine: introspection failed');
    return buildClientSchema(data);
  })();
  engineSchema.catch(() => (engineSchema = undefined));
  return engineSchema;
}

function namedTypeOf(node: TypeNode): string {
  return node.kind === Kind.NAMED_TYPE ? node.name.value : namedTypeOf(node.type);
}

function variablesIn(node: ASTNode): string[] {
  const names: string[] = [];
  visit(node, { Variable: (v) => void names.push(v.name.value) });
  return names;
}

/** Drops keys an input type lacks, recursively (the engine refuses unknown input fields). */
function pruneInput(value: unknown, type: GraphQLInputType): unknown {
  if (value === null || value === undefined) return value;
  if (isNonNullType(type)) return pruneInput(value, type.ofType);
  if (isListType(type)) return Array.isArray(value) ? value.map((v) => pruneInput(v, type.ofType)) : value;
  if (isInputObjectType(type) && typeof value === 'object' && !Array.isArray(value)) {
    const fields = type.getFields();
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      const field = fields[key];
      if (field) out[key] = pruneInput(v, field.type);
    }
    return out;
  }
  return value;
}

export interface FittedRequest {
  query: string;
  variables: Record<string, unknown>;
  /** The document as the SDK sent it, against Linear's schema: what `shape.ts` shapes the answer to. */
  original: DocumentNode;
}

/** What fitting a document to the schema gives before its variables' values count (`fitShape`). */
interface FittedShape {
  original: DocumentNode;
  fitted: DocumentNode;
  /** The engine's type of each variable passed straight to an argument. */
  argumentTypes: Map<string, GraphQLInputType>;
  /** The variables of `fitted` still used. */
  used: Set<string>;
}

/** A document fitted for one pattern of null variables (`fitFinal`): printed, and its variables' types. */
interface FittedFinal {
  query: string;
  variableTypes: Array<[string, GraphQLInputType | undefined]>;
}

/**
 * Fitted documents by schema and query text (and, for the last steps, the variables left null): the SDK
 * sends the same few generated documents again and again, and parsing, fitting and printing one cost more
 * than the rest of the twin's work on a call. Bounded: a client that sends ever new documents starts the
 * cache over.
 */
const shapes = new WeakMap<GraphQLSchema, Map<string, FittedShape | null>>();
const finals = new WeakMap<FittedShape, Map<string, FittedFinal>>();
const CACHED_DOCUMENTS_MAX = 500;

function cached<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  if (map.has(key)) return map.get(key)!;
  if (map.size >= CACHED_DOCUMENTS_MAX) map.clear();
  const value = make();
  map.set(key, value);
  return value;
}

export function fitDocument(
  schema: GraphQLSchema,
  query: string,
  variables: Record<string, unknown> = {},
): FittedRequest | undefined {
  let bySchema = shapes.get(schema);
  if (!bySchema) shapes.set(schema, (bySchema = new Map()));
  const shape = cached(bySchema, query, () => fitShape(schema, query));
  if (!shape) return undefined;
  // Which variables whose engine type is non-null are left null: the last steps depend on that alone.
  let nulls = '';
  for (const [name, type] of shape.argumentTypes)
    if (isNonNullType(type) && variables[name] == null) nulls += `${name},`;
  let byNulls = finals.get(shape);
  if (!byNulls) finals.set(shape, (byNulls = new Map()));
  const final = cached(byNulls, nulls, () => fitFinal(schema, shape, variables));
  const fittedVariables: Record<string, unknown> = {};
  for (const [name, type] of final.variableTypes) {
    if (!(name in variables)) continue;
    fittedVariables[name] = type && getNamedType(type) ? pruneInput(variables[name], type) : variables[name];
  }
  return { query: final.query, variables: fittedVariables, original: shape.original };
}

/** The document parsed and fitted to the schema, as far as that goes without the variables' values. */
function fitShape(schema: GraphQLSchema, query: string): FittedShape | null {
  let doc: DocumentNode;
  try {
    doc = parse(query);
  } catch {
    return null;
  }
  // Fragments on types the engine lacks, and variables whose types it lacks, go first: what uses them
  // goes with them.
  const droppedFragments = new Set<string>();
  const droppedVariables = new Set<string>();
  for (const def of doc.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION && !schema.getType(def.typeCondition.name.value))
      droppedFragments.add(def.name.value);
    if (def.kind === Kind.OPERATION_DEFINITION)
      for (const v of def.variableDefinitions ?? [])
        if (!schema.getType(namedTypeOf(v.type))) droppedVariables.add(v.variable.name.value);
  }
  // A variable passed straight to an argument is declared with the engine's type for it: Linear declares
  // `comment(id: String)` where the engine requires `String!`, `orderBy: PaginationOrderBy` where it has String.
  const argumentTypes = new Map<string, GraphQLInputType>();
  const typeInfo = new TypeInfo(schema);
  const emptySelection = (node: { selectionSet?: { selections: readonly unknown[] } }) =>
    node.selectionSet !== undefined && node.selectionSet.selections.length === 0;
  const fitted = visit(
    doc,
    visitWithTypeInfo(typeInfo, {
      FragmentDefinition: (node) => (droppedFragments.has(node.name.value) ? null : undefined),
      FragmentSpread: (node) => (droppedFragments.has(node.name.value) ? null : undefined),
      InlineFragment: {
        enter: (node) =>
          node.typeCondition && !schema.getType(node.typeCondition.name.value) ? null : undefined,
        leave: (node) => (emptySelection(node) ? null : undefined),
      },
      VariableDefinition: (node) => (droppedVariables.has(node.variable.name.value) ? null : undefined),
      Argument: (node) => {
        const argument = typeInfo.getArgument();
        if (!argument) return null;
        if (node.value.kind === Kind.VARIABLE) argumentTypes.set(node.value.name.value, argument.type);
        return variablesIn(node).some((v) => droppedVariables.has(v)) ? null : undefined;
      },
      Field: {
        enter: (node) => (node.name.value !== '__typename' && !typeInfo.getFieldDef() ? null : undefined),
        leave: (node) => (emptySelection(node) ? null : undefined),
      },
    }),
  );
  // Variables no argument uses any more would make the document invalid.
  const used = new Set(
    fitted.definitions.flatMap((def) =>
      def.kind === Kind.OPERATION_DEFINITION
        ? [def.selectionSet, ...(def.directives ?? [])].flatMap(variablesIn)
        : variablesIn(def),
    ),
  );
  return { original: doc, fitted, argumentTypes, used };
}

/**
 * The fitted document with its variables declared with the engine's types (a non-null one made nullable
 * where the value is null), without the fragments no longer spread, printed.
 */
function fitFinal(
  schema: GraphQLSchema,
  { fitted, argumentTypes, used }: FittedShape,
  variables: Record<string, unknown>,
): FittedFinal {
  let final = visit(fitted, {
    VariableDefinition: (node) => {
      const name = node.variable.name.value;
      if (!used.has(name)) return null;
      const expected = argumentTypes.get(name);
      if (!expected) return undefined;
      const type = variables[name] == null && isNonNullType(expected) ? expected.ofType : expected;
      return { ...node, type: parseType(String(type)) };
    },
  });
  // Fragments only removed fields spread are unused now, which is invalid too (they may spread others).
  for (;;) {
    const spread = new Set<string>();
    visit(final, { FragmentSpread: (node) => void spread.add(node.name.value) });
    const unused = final.definitions.filter(
      (def) => def.kind === Kind.FRAGMENT_DEFINITION && !spread.has(def.name.value),
    );
    if (unused.length === 0) break;
    final = { ...final, definitions: final.definitions.filter((def) => !unused.includes(def)) };
  }
  const variableTypes: FittedFinal['variableTypes'] = [];
  for (const def of final.definitions) {
    if (def.kind !== Kind.OPERATION_DEFINITION) continue;
    for (const v of def.variableDefinitions ?? []) {
      variableTypes.push([
        v.variable.name.value,
        typeFromAST(schema, v.type as never) as GraphQLInputType | undefined,
      ]);
    }
  }
  return { query: print(final), variableTypes };
}
