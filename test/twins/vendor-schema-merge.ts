/**
 * Joins a vendor's descriptions of several products into one document, for a twin that serves them all
 * under one base URL (Twilio: the 2010 API at `/`, Verify v2 at `/verify`, as its twin routes them).
 *
 *   npx tsx test/twins/vendor-schema-merge.ts <out.json> <description.json>[=<path prefix>] ...
 *
 * Paths get their product's prefix; components are joined by name (the vendor's names must not collide,
 * which is checked). `vendor-schema-trim.ts` then trims the joined document to the operations served.
 */
import { readFileSync, writeFileSync } from 'node:fs';

type Doc = { paths: Record<string, unknown>; components?: Record<string, Record<string, unknown>> } & Record<
  string,
  unknown
>;

const [out, ...inputs] = process.argv.slice(2);
if (!out || !inputs.length) {
  console.error('usage: tsx test/twins/vendor-schema-merge.ts <out.json> <description.json>[=<prefix>] ...');
  process.exit(2);
}
let merged: Doc | undefined;
for (const input of inputs) {
  const [file, prefix = ''] = input.split('=');
  const doc = JSON.parse(readFileSync(file!, 'utf8')) as Doc;
  merged ??= { ...doc, paths: {}, components: {} };
  for (const [path, item] of Object.entries(doc.paths)) merged.paths[`${prefix}${path}`] = item;
  for (const [kind, entries] of Object.entries(doc.components ?? {})) {
    const target = (merged.components![kind] ??= {});
    for (const [name, value] of Object.entries(entries)) {
      if (name in target && JSON.stringify(target[name]) !== JSON.stringify(value)) {
        throw new Error(`components.${kind}.${name} differs between the inputs`);
      }
      target[name] = value;
    }
  }
}
writeFileSync(out, JSON.stringify(merged));
console.log(`${out}: ${Object.keys(merged!.paths).length} paths from ${inputs.length} descriptions`);
