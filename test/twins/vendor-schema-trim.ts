/**
 * Regenerates a twin's trimmed API description from the vendor's full one, trimmed to the operations the
 * twin serves (the `operations` of its `source.json`) and the components they reference.
 *
 *   npx tsx test/twins/vendor-schema-trim.ts <full description .json> <source.json> <out openapi.json>
 *
 * e.g. `node_modules/@octokit/openapi/generated/api.github.com.json server/twins/vendors/github/vendor-schema/source.json
 * server/twins/vendors/github/vendor-schema/openapi.json`, or for Slack the `web-api/slack_web_openapi_v2.json` of
 * slackapi/slack-api-specs into a writable copy of `../shared/vendor-schemas/slack/` (a description from a
 * fetched repository is never written into the repository). It writes the output, and `source.json` beside the
 * output with the SHA-256 of the input and the day it ran; where the input came from (package and version, or
 * repository and commit, and their dates) is kept in `source.json` by hand.
 *
 * What is dropped is documentation only: descriptions, examples, `externalDocs`, request parameters and
 * bodies, response headers. Every schema keyword of the kept responses stays as the vendor wrote it.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import type { VendorSource } from './vendor-schema.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Keys that only document; dropped from kept operations and components (never from `properties` maps). */
const DOC_KEYS = new Set([
  'description',
  'example',
  'examples',
  'x-examples',
  'externalDocs',
  'summary',
  'tags',
]);
/** Maps whose keys are names chosen by the vendor, not keywords: nothing in them is dropped by name. */
const NAME_MAPS = new Set(['properties', 'patternProperties', 'definitions', 'schemas', 'responses']);

function strip(node: Json, parentKey?: string): Json {
  if (Array.isArray(node)) return node.map((n) => strip(n));
  if (!node || typeof node !== 'object') return node;
  const out: { [key: string]: Json } = {};
  const isNameMap = parentKey !== undefined && NAME_MAPS.has(parentKey);
  for (const [key, value] of Object.entries(node)) {
    if (!isNameMap && (DOC_KEYS.has(key) || key.startsWith('x-github') || key === 'x-octokit')) continue;
    if (!isNameMap && key === 'headers') continue;
    out[key] = strip(value, isNameMap ? undefined : key);
  }
  return out;
}

function refsIn(node: Json, found: Set<string>): void {
  if (Array.isArray(node)) node.forEach((n) => refsIn(n, found));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/')) found.add(value);
      else refsIn(value, found);
    }
  }
}

function at(doc: Json, pointer: string): Json | undefined {
  return pointer
    .replace(/^#\//, '')
    .split('/')
    .reduce<Json | undefined>((n, part) => {
      if (!n || typeof n !== 'object' || Array.isArray(n)) return undefined;
      return n[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    }, doc);
}

function put(doc: { [key: string]: Json }, pointer: string, value: Json): void {
  const parts = pointer.replace(/^#\//, '').split('/');
  let node = doc;
  for (const part of parts.slice(0, -1)) {
    node[part] ??= {};
    node = node[part] as { [key: string]: Json };
  }
  node[parts.at(-1)!] = value;
}

async function main(): Promise<void> {
  const [input, sourceFile, out] = process.argv.slice(2);
  if (!input || !sourceFile || !out) {
    console.error(
      'usage: tsx test/twins/vendor-schema-trim.ts <full description .json> <source.json> <out openapi.json>',
    );
    process.exit(2);
  }
  const source = JSON.parse(readFileSync(sourceFile, 'utf8')) as VendorSource;
  const text = readFileSync(input);
  const full = JSON.parse(text.toString('utf8')) as { [key: string]: Json };
  const paths = full.paths as { [path: string]: { [method: string]: Json } };
  const swagger2 = typeof full.swagger === 'string';

  const trimmed: { [key: string]: Json } = swagger2
    ? { swagger: full.swagger!, info: full.info!, basePath: full.basePath ?? '/', paths: {} }
    : { openapi: full.openapi!, info: full.info!, paths: {} };
  const missing: string[] = [];
  const pending = new Set<string>();
  for (const name of source.operations) {
    // `METHOD /path`, or a bare path when the vendor takes any method (Slack): every method it lists.
    const [first, second] = name.split(' ');
    const path = second ?? first!;
    const methods = second ? [first!.toLowerCase()] : Object.keys(paths[path] ?? {});
    for (const method of methods) {
      const op = paths[path]?.[method] as { [key: string]: Json } | undefined;
      if (!op) {
        missing.push(name);
        continue;
      }
      const kept = strip({ operationId: op.operationId ?? null, responses: op.responses! });
      refsIn(kept, pending);
      const item = ((trimmed.paths as { [key: string]: Json })[path] ??= {}) as { [key: string]: Json };
      item[method] = kept;
    }
    if (!methods.length) missing.push(name);
  }
  if (missing.length) {
    console.error(`not in ${input}: ${missing.join(', ')}`);
    process.exit(1);
  }
  // The components the kept responses reference, and theirs, transitively.
  const done = new Set<string>();
  while (pending.size) {
    const [ref] = pending;
    pending.delete(ref!);
    if (done.has(ref!)) continue;
    done.add(ref!);
    const target = at(full, ref!);
    if (target === undefined) throw new Error(`unresolved ${ref} in ${input}`);
    const component = strip(target);
    put(trimmed, ref!, component);
    refsIn(component, pending);
  }

  // The repository's own prettier settings (wherever the output goes), as `npm run format:check` wants them.
  const style = { ...(await prettier.resolveConfig(fileURLToPath(import.meta.url))), filepath: out };
  const formatted = await prettier.format(JSON.stringify(trimmed), style);
  writeFileSync(out, formatted);
  const updated = {
    ...source,
    sha256: createHash('sha256').update(text).digest('hex'),
    trimmed_on: new Date().toISOString().slice(0, 10),
  };
  const sourceOut = join(dirname(out), 'source.json');
  writeFileSync(sourceOut, await prettier.format(JSON.stringify(updated), { ...style, filepath: sourceOut }));
  console.log(
    `${out}: ${source.operations.length} operations, ${done.size} components, ${formatted.length} bytes`,
  );
}

await main();
