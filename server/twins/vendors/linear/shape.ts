/**
 * Makes the engine's answer conform to Linear's schema, as @linear/sdk's own types declare it
 * (`sdk-schema/schema.graphql`, derived from the npm package by `sdk-schema/generate.ts`).
 *
 * `fit-document.ts` removes from @linear/sdk's documents the fields the engine lacks, and the engine answers some of
 * the fields it has with null where Linear's schema says non-null. The answer is run through graphql-js's
 * `execute` against that schema, with the SDK's original document and the engine's data as root value:
 * the resolver reads each response key, and where a value is missing it answers null for a nullable field
 * and, for a non-null one, an empty list, an object whose selected fields are filled the same way, or a value
 * of the scalar's type (see `synthesize`). The result is exactly the shape Linear's schema promises for the
 * document; the twin tests check it against Linear's own `schema.graphql` (`test/twins/linear-schema.ts`).
 * What is synthesized is listed in docs/twins.md (Linear).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import {
  buildSchema,
  execute,
  getNamedType,
  isEnumType,
  isListType,
  isNonNullType,
  type DocumentNode,
  type GraphQLFieldResolver,
  type GraphQLOutputType,
  type GraphQLSchema,
  type GraphQLTypeResolver,
} from 'graphql';

export class LinearSchemaMissingError extends Error {
  override name = 'LinearSchemaMissingError';
}

let linearSchema: GraphQLSchema | undefined;

/**
 * Linear's schema as @linear/sdk declares it, read once: beside this module, or from a build
 * (`build/server/twins/vendors/linear/`) in the source tree, which the build does not copy the SDL into.
 */
export function linearSdkSchema(): GraphQLSchema {
  if (linearSchema) return linearSchema;
  for (const base of ['./', '../../../../../server/twins/vendors/linear/']) {
    const file = new URL(`${base}sdk-schema/schema.graphql`, import.meta.url);
    if (existsSync(file)) return (linearSchema = buildSchema(readFileSync(file, 'utf8')));
  }
  throw new LinearSchemaMissingError('linear twin: sdk-schema/schema.graphql not found');
}

/** Linear's default colours of a workflow state by its type (its app's defaults for a new team). */
const STATE_COLORS: Record<string, string> = {
  triage: '#fc7840',
  backlog: '#bec2c8',
  unstarted: '#e2e2e2',
  started: '#f2c94c',
  completed: '#5e6ad2',
  canceled: '#95a2b3',
};

/** Linear's avatar background palette; a user's colour is picked by its id, so it stays the same. */
const AVATAR_COLORS = [
  '#4ea7fc',
  '#5e6ad2',
  '#26b5ce',
  '#4cb782',
  '#f2c94c',
  '#fc7840',
  '#eb5757',
  '#bb87fc',
];

function pickById(id: unknown, list: string[]): string {
  const digest = createHash('sha256')
    .update(String(id ?? ''))
    .digest();
  return list[digest[0]! % list.length]!;
}

/** A value for a non-null field the engine left out or answered with null. */
function synthesize(
  type: GraphQLOutputType,
  parent: string,
  field: string,
  source: Record<string, unknown>,
  baseUrl: string,
): unknown {
  if (isListType(type)) return [];
  const named = getNamedType(type);
  // Fields whose values follow from the rest of the object.
  if (field === 'reactionData') return []; // Linear answers the reactions of an entity as a JSON array.
  if (parent === 'User' && field === 'avatarBackgroundColor') return pickById(source.id, AVATAR_COLORS);
  if (parent === 'WorkflowState' && field === 'color')
    return STATE_COLORS[String(source.type)] ?? STATE_COLORS.backlog;
  if (field === 'inviteHash')
    return createHash('sha256').update(String(source.id)).digest('hex').slice(0, 32);
  if (parent === 'Issue' && field === 'branchName' && typeof source.identifier === 'string')
    return `${source.identifier}-${String(source.title ?? '')}`
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 60);
  if (field === 'url' && typeof source.id === 'string')
    return `${baseUrl}/${parent.toLowerCase()}/${source.id}`;
  if (isEnumType(named)) return named.getValues()[0]!.value;
  switch (named.name) {
    case 'Boolean':
      return false;
    case 'Int':
    case 'Float':
      return 0;
    case 'String':
      return '';
    case 'DateTime':
      return source.updatedAt ?? source.createdAt ?? new Date(0).toISOString();
    case 'JSON':
    case 'JSONObject':
      return {};
  }
  // An object: its selected fields are filled by the resolver in turn.
  return {};
}

const typeOf: GraphQLTypeResolver<unknown, unknown> = (value, _context, info, abstractType) => {
  const named = (value as { __typename?: unknown } | null)?.__typename;
  if (typeof named === 'string') return named;
  return info.schema.getPossibleTypes(abstractType)[0]?.name;
};

/**
 * The engine's `data` for `document` in the shape Linear's schema promises, or undefined when it cannot be
 * made so (the caller then answers the engine's data as it is).
 */
export async function conformAnswer(
  document: DocumentNode,
  variables: Record<string, unknown>,
  operationName: string | undefined,
  data: unknown,
  baseUrl: string,
): Promise<Record<string, unknown> | undefined> {
  const fill: GraphQLFieldResolver<unknown, unknown> = (source, _args, _context, info) => {
    const record = (source ?? {}) as Record<string, unknown>;
    const value = record[info.path.key];
    if (value !== undefined && value !== null) return value;
    if (!isNonNullType(info.returnType)) return null;
    return synthesize(info.returnType.ofType, info.parentType.name, info.fieldName, record, baseUrl);
  };
  const result = await execute({
    schema: linearSdkSchema(),
    document,
    rootValue: data,
    variableValues: variables,
    operationName,
    fieldResolver: fill,
    typeResolver: typeOf,
  });
  if (result.errors?.length || !result.data) return undefined;
  return result.data as Record<string, unknown>;
}
