/**
 * Writes Linear's GraphQL schema (linear/linear, `packages/sdk/src/schema.graphql`, at the commit `source.json`
 * names) trimmed to the types reachable from the root fields the twin serves (`source.json` `operations`), with
 * the fields `source.json` `sdk_additions` adds: the schema the Linear tests check answers against
 * (`linear-schema.ts`). It comes from a fetched repository, so it is not committed: it lives in
 * `../shared/vendor-schemas/linear/` (see `vendor-schema-dir.ts`).
 *
 *   npx tsx test/twins/linear-schema-trim.ts <full schema.graphql> <source.json> <out schema.graphql>
 *
 * e.g. after `git --git-dir=<mirror of linear/linear> show <commit>:packages/sdk/src/schema.graphql > full.graphql`.
 * Reachable: the root fields' argument and result types, and from each type reached its fields' types and
 * arguments, its interfaces and the members of its unions. An interface's implementations are kept only
 * where reached otherwise (Linear's `Node` is implemented by nearly every type). The additions are fields
 * @linear/sdk (a newer release than the schema's commit) selects; without them its documents do not validate.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import {
  GraphQLObjectType,
  GraphQLSchema,
  buildSchema,
  printSchema,
  type GraphQLFieldConfigMap,
} from 'graphql';

interface LinearSource {
  commit: string;
  operations: string[];
  sdk_additions: { sdl: string; why: string }[];
}

const [fullFile, sourceFile, out] = process.argv.slice(2);
if (!fullFile || !sourceFile || !out) {
  console.error(
    'usage: tsx test/twins/linear-schema-trim.ts <full schema.graphql> <source.json> <out schema.graphql>',
  );
  process.exit(2);
}
const source = JSON.parse(readFileSync(sourceFile, 'utf8')) as LinearSource;
const full = buildSchema(
  [readFileSync(fullFile, 'utf8'), ...source.sdk_additions.map((a) => a.sdl)].join('\n'),
);

/** The root type of an operation, keeping only the fields named in `operations` (`query issue`). */
function trimmedRoot(operation: 'query' | 'mutation', root: GraphQLObjectType | null | undefined) {
  if (!root) throw new Error(`the schema has no ${operation} type`);
  const wanted = source.operations
    .filter((o) => o.startsWith(`${operation} `))
    .map((o) => o.slice(operation.length + 1));
  const config = root.toConfig();
  const fields: GraphQLFieldConfigMap<unknown, unknown> = {};
  for (const name of wanted) {
    const field = config.fields[name];
    if (!field) throw new Error(`${operation} ${name}: not a field of Linear's ${root.name}`);
    fields[name] = field;
  }
  return new GraphQLObjectType({ ...config, fields });
}

// GraphQLSchema collects the types reachable from its roots (not the implementations of an interface).
const trimmed = new GraphQLSchema({
  query: trimmedRoot('query', full.getQueryType()),
  mutation: trimmedRoot('mutation', full.getMutationType()),
  directives: full.getDirectives(),
});
const header = [
  `# Linear's GraphQL schema: github.com/linear/linear packages/sdk/src/schema.graphql at ${source.commit},`,
  '# trimmed by trim.ts to the types reachable from the root fields in source.json `operations`, with',
  '# source.json `sdk_additions`. Do not edit by hand: run trim.ts.',
  '',
].join('\n');
// Formatted as the repository's format check wants it, wherever the output goes.
writeFileSync(
  out,
  await format(`${header}${printSchema(trimmed)}\n`, {
    ...(await resolveConfig(fileURLToPath(import.meta.url))),
    parser: 'graphql',
  }),
);
console.log(
  `${out}: ${Object.keys(trimmed.getTypeMap()).length} of ${Object.keys(full.getTypeMap()).length} types`,
);
