/**
 * Converts a Google API Discovery document (the machine-readable description Google publishes of its APIs,
 * what googleapis is generated from) into the OpenAPI the schema check reads, mechanically:
 *
 * - each method's `httpMethod` + `/` + `path` is an operation; its `response.$ref` the 200 body;
 * - a schema `$ref: "X"` is `#/components/schemas/X`; types and enums are kept;
 * - `format` `int64`/`uint64` on a string (Google's string-encoded 64-bit integers) becomes a digits
 *   `pattern`; `uint32` an integer of at least 0; `byte` stays (base64 text);
 * - errors are Google's JSON error body, which Discovery leaves out: written from Google's reference page
 *   (https://cloud.google.com/apis/design/errors#http_mapping) for every 4XX and 5XX.
 *
 * Google's OAuth 2.0 endpoints have no Discovery document; their shapes are written by hand from Google's
 * pages in `server/twins/vendors/google/vendor-schema/oauth.json` (the project's own work, so committed; its README
 * names the pages) and added as they are.
 *
 *   npx tsx test/twins/vendor-schema-discovery.ts <folder> <oauth.json> <out openapi.json>
 *
 * reads `<folder>/*.discovery.json` (`../shared/vendor-schemas/google/`: taken from a fetched repository, so
 * not in the repository, see `vendor-schema-dir.ts`) and `<oauth.json>`, and writes the output (e.g. into a
 * writable copy of that folder).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';

type Json = Record<string, unknown>;

interface Method {
  httpMethod: string;
  path: string;
  id: string;
  response?: { $ref: string };
}

interface Resource {
  methods?: Record<string, Method>;
  resources?: Record<string, Resource>;
}

function methodsOf(resource: Resource): Method[] {
  return [
    ...Object.values(resource.methods ?? {}),
    ...Object.values(resource.resources ?? {}).flatMap(methodsOf),
  ];
}

export function convertSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(convertSchema);
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node as Json)) {
    if (key === 'id' && typeof value === 'string') continue;
    if (key === '$ref' && typeof value === 'string') out.$ref = `#/components/schemas/${value}`;
    else if (key === 'properties')
      out.properties = Object.fromEntries(
        Object.entries(value as Json).map(([k, v]) => [k, convertSchema(v)]),
      );
    else out[key] = convertSchema(value);
  }
  if (out.type === 'string' && (out.format === 'int64' || out.format === 'uint64')) {
    out.pattern = out.format === 'int64' ? '^-?[0-9]+$' : '^[0-9]+$';
    delete out.format;
  }
  if (out.type === 'integer' && out.format === 'uint32') {
    out.minimum = 0;
    delete out.format;
  }
  return out;
}

const GOOGLE_ERROR = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'status'],
      properties: {
        code: { type: 'integer' },
        message: { type: 'string' },
        status: { type: 'string' },
        errors: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              message: { type: 'string' },
              domain: { type: 'string' },
              reason: { type: 'string' },
            },
          },
        },
        details: { type: 'array', items: { type: 'object' } },
      },
    },
  },
};

async function main(): Promise<void> {
  const [folder, oauthFile, out] = process.argv.slice(2);
  if (!folder || !oauthFile || !out) {
    console.error(
      'usage: tsx test/twins/vendor-schema-discovery.ts <folder> <oauth.json> <out openapi.json>',
    );
    process.exit(2);
  }
  const dir = `${join(folder)}/`;
  const paths: Json = {};
  const schemas: Json = { GoogleError: GOOGLE_ERROR };
  const error = { content: { 'application/json': { schema: { $ref: '#/components/schemas/GoogleError' } } } };
  const titles: string[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.discovery.json'))
    .sort()) {
    const doc = JSON.parse(readFileSync(`${dir}${file}`, 'utf8')) as Json & Resource & { schemas: Json };
    titles.push(String(doc.id));
    for (const m of methodsOf(doc)) {
      const item = (paths[`/${m.path}`] ??= {}) as Json;
      item[m.httpMethod.toLowerCase()] = {
        operationId: m.id,
        responses: {
          '200': m.response
            ? {
                content: {
                  'application/json': { schema: { $ref: `#/components/schemas/${m.response.$ref}` } },
                },
              }
            : { description: 'empty' },
          '204': { description: 'empty' },
          '4XX': error,
          '5XX': error,
        },
      };
    }
    for (const [name, schema] of Object.entries(doc.schemas)) {
      if (schemas[name]) throw new Error(`${file}: schema ${name} is in two documents`);
      schemas[name] = convertSchema(schema);
    }
  }
  const oauth = JSON.parse(readFileSync(oauthFile, 'utf8')) as { paths: Json; schemas: Json };
  Object.assign(paths, oauth.paths);
  Object.assign(schemas, oauth.schemas);
  const text = JSON.stringify({
    openapi: '3.0.3',
    info: { title: `Google APIs (${titles.join(', ')}) and Google's OAuth 2.0 endpoints`, version: 'v1' },
    paths,
    components: { schemas },
  });
  // The repository's own prettier settings, wherever the output goes.
  const style = await prettier.resolveConfig(fileURLToPath(import.meta.url));
  writeFileSync(out, await prettier.format(text, { ...style, filepath: out }));
  console.log(`${out}: ${Object.keys(paths).length} paths, ${Object.keys(schemas).length} schemas`);
}

if (process.argv[1]?.endsWith('vendor-schema-discovery.ts')) await main();
