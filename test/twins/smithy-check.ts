/**
 * AWS describes its services in Smithy, not OpenAPI (aws/api-models-aws, the models the AWS SDKs are generated
 * from). The AWS twin's models are `<service>.json` in `../shared/vendor-schemas/aws/` (not committed: see
 * `vendor-schema-dir.ts`), trimmed to the operations `source.json` lists and the shapes their outputs and errors
 * reach.
 *
 * `smithyCheck(client, service)` adds a middleware to an AWS SDK v3 client that checks every operation's output
 * (the SDK's parse of the XML answer, whose members carry the model's member names) against the model's output
 * shape: every member with `smithy.api#required` present, and every value of its shape's type (strings and
 * enums with their values, integers, booleans, timestamps as dates, blobs, lists, maps, structures). A modeled
 * error (e.g. S3's NoSuchKey) is checked against its error shape the same way. A failure rejects the call with
 * a VendorSchemaError, so the test fails on the line of the call.
 *
 *   npx tsx test/twins/smithy-check.ts trim <service> <full model .json> <source.json> <out .json>
 *
 * regenerates a trimmed model from the full one (documentation and examples traits dropped), keeping the
 * operations of `<service>` that `<source.json>` lists (e.g. `../shared/vendor-schemas/aws/source.json`).
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { checked, VendorSchemaError, type CheckResult } from './vendor-schema.ts';
import { readVendorSchemaJson } from './vendor-schema-dir.ts';

interface Shape {
  type: string;
  members?: Record<string, { target: string; traits?: Record<string, unknown> }>;
  member?: { target: string };
  key?: { target: string };
  value?: { target: string };
  input?: { target: string };
  output?: { target: string };
  errors?: Array<{ target: string }>;
  traits?: Record<string, unknown>;
}

interface Model {
  smithy: string;
  shapes: Record<string, Shape>;
}

const models = new Map<string, Model>();

function model(service: string): Model {
  let m = models.get(service);
  if (!m) {
    m = readVendorSchemaJson<Model>('aws', `${service}.json`);
    models.set(service, m);
  }
  return m;
}

const PRELUDE: Record<string, string> = {
  'smithy.api#String': 'string',
  'smithy.api#Boolean': 'boolean',
  'smithy.api#PrimitiveBoolean': 'boolean',
  'smithy.api#Integer': 'integer',
  'smithy.api#PrimitiveInteger': 'integer',
  'smithy.api#Long': 'long',
  'smithy.api#PrimitiveLong': 'long',
  'smithy.api#Timestamp': 'timestamp',
  'smithy.api#Blob': 'blob',
  'smithy.api#Unit': 'structure',
};

/** Errors in `value` against the shape `target` (an empty list when it conforms). */
export function checkShape(m: Model, target: string, value: unknown, at = '', depth = 0): string[] {
  if (value === undefined || value === null || depth > 20) return [];
  const shape: Shape = m.shapes[target] ?? { type: PRELUDE[target] ?? 'document' };
  const where = at || '(output)';
  const wrong = (what: string) => [`${where} must be ${what}, not ${JSON.stringify(value)?.slice(0, 60)}`];
  switch (shape.type) {
    case 'string':
      return typeof value === 'string' ? [] : wrong('a string');
    case 'enum': {
      if (typeof value !== 'string') return wrong('a string');
      const values = Object.values(shape.members ?? {}).map((mem) => mem.traits?.['smithy.api#enumValue']);
      return values.includes(value)
        ? []
        : [`${where} must be one of ${JSON.stringify(values)}, not "${value}"`];
    }
    case 'integer':
    case 'long':
    case 'short':
    case 'byte':
    case 'intEnum':
      return Number.isInteger(value) ? [] : wrong('an integer');
    case 'float':
    case 'double':
      return typeof value === 'number' ? [] : wrong('a number');
    case 'boolean':
      return typeof value === 'boolean' ? [] : wrong('a boolean');
    case 'timestamp':
      return value instanceof Date && !Number.isNaN(value.getTime()) ? [] : wrong('a timestamp');
    case 'blob':
      // A streaming payload reaches the caller as a stream, a small one as bytes.
      return typeof value === 'object' || typeof value === 'string' ? [] : wrong('a blob');
    case 'list':
      if (!Array.isArray(value)) return wrong('a list');
      return value.flatMap((v, i) => checkShape(m, shape.member!.target, v, `${at}/${i}`, depth + 1));
    case 'map':
      if (typeof value !== 'object') return wrong('a map');
      return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) =>
        checkShape(m, shape.value!.target, v, `${at}/${k}`, depth + 1),
      );
    case 'structure':
    case 'union': {
      if (typeof value !== 'object') return wrong('a structure');
      const record = value as Record<string, unknown>;
      return Object.entries(shape.members ?? {}).flatMap(([name, member]) => {
        const v = record[name];
        if (v === undefined && member.traits && 'smithy.api#required' in member.traits)
          return [`${at || '(output)'} must have required member '${name}'`];
        return checkShape(m, member.target, v, `${at}/${name}`, depth + 1);
      });
    }
    default:
      return [];
  }
}

function operationShape(m: Model, service: string, operation: string): [string, Shape] | undefined {
  const id = Object.keys(m.shapes).find(
    (k) => k.endsWith(`#${operation}`) && m.shapes[k]!.type === 'operation',
  );
  return id ? [id, m.shapes[id]!] : undefined;
}

interface Middlewared {
  middlewareStack: {
    add(
      mw: (
        next: (args: unknown) => Promise<{ output: unknown }>,
        context: { commandName?: string },
      ) => (args: unknown) => Promise<{ output: unknown }>,
      options: { step: 'initialize'; name: string },
    ): void;
  };
}

/** Records the check as vendorFetch records its checks, and throws when it failed (unless recording only). */
function report(service: string, operation: string, status: number, errors: string[], known: boolean) {
  const result: CheckResult = {
    twin: 'aws',
    operation: `${service}:${operation}`,
    status,
    success: status > 0 && status < 300,
    valid: known && errors.length === 0,
    errors: known ? errors : [`${operation} is not an operation of the vendored ${service} model`],
  };
  checked.push(result);
  if (process.env.VENDOR_SCHEMA_REPORT)
    appendFileSync(process.env.VENDOR_SCHEMA_REPORT, `${JSON.stringify(result)}\n`);
  if (!result.valid && process.env.VENDOR_SCHEMA_MODE !== 'record') throw new VendorSchemaError(result);
}

/** Checks every output (and modeled error) of an AWS SDK v3 client against the service's vendored model. */
export function smithyCheck<T extends object>(client: T, service: 's3' | 'sts'): T {
  const m = model(service);
  (client as unknown as Middlewared).middlewareStack.add(
    (next, context) => async (args) => {
      const operation = (context.commandName ?? '').replace(/Command$/, '');
      const op = operationShape(m, service, operation);
      try {
        const out = await next(args);
        const errors = op?.[1].output ? checkShape(m, op[1].output.target, out.output) : [];
        report(service, operation, 200, errors, !!op);
        return out;
      } catch (error) {
        const e = error as { name?: string; $metadata?: { httpStatusCode?: number }; $fault?: string };
        // Only an SDK service error is an answer of the service (a VendorSchemaError passes through).
        if (!e.$fault) throw error;
        const status = e.$metadata?.httpStatusCode ?? 0;
        const modeled = op?.[1].errors?.find((x) => x.target.endsWith(`#${e.name}`));
        const errors = modeled ? checkShape(m, modeled.target, error) : [];
        report(service, operation, status, errors, !!op);
        throw error;
      }
    },
    { step: 'initialize', name: 'vendorSchemaCheck' },
  );
  return client;
}

/**
 * The same check for what the AWS SDK for JavaScript v2 (`aws-sdk`) gives back, which has no middleware
 * stack: `output` is a call's resolved data, or `error` the AWSError it rejected with (its `code` names the
 * modeled error). v2 parses answers with the same models, so its members carry the same names. Throws a
 * VendorSchemaError when the answer breaks the model.
 */
export function checkSmithyAnswer(
  service: 's3' | 'sts',
  operation: string,
  answer: { output: unknown } | { error: { code?: string; statusCode?: number } },
): void {
  const m = model(service);
  const op = operationShape(m, service, operation);
  if ('output' in answer) {
    report(
      service,
      operation,
      200,
      op?.[1].output ? checkShape(m, op[1].output.target, answer.output) : [],
      !!op,
    );
    return;
  }
  const modeled = op?.[1].errors?.find((x) => x.target.endsWith(`#${answer.error.code}`));
  const errors = modeled ? checkShape(m, modeled.target, answer.error) : [];
  report(service, operation, answer.error.statusCode ?? 0, errors, !!op);
}

const DROPPED_TRAITS = new Set([
  'smithy.api#documentation',
  'smithy.api#examples',
  'smithy.api#externalDocumentation',
]);

function stripTraits(shape: Shape): Shape {
  const clean = (traits?: Record<string, unknown>) =>
    traits && Object.fromEntries(Object.entries(traits).filter(([k]) => !DROPPED_TRAITS.has(k)));
  const out: Shape = { ...shape, ...(shape.traits ? { traits: clean(shape.traits) } : {}) };
  if (shape.members) {
    out.members = Object.fromEntries(
      Object.entries(shape.members).map(([k, v]) => [
        k,
        { ...v, ...(v.traits ? { traits: clean(v.traits) } : {}) },
      ]),
    );
  }
  return out;
}

/** The operations `source.json` lists for `service`, their output and error shapes, and what those reach. */
async function trim(service: string, input: string, sourceFile: string, out: string): Promise<void> {
  const source = JSON.parse(readFileSync(sourceFile, 'utf8')) as { operations: string[] };
  const full = JSON.parse(readFileSync(input, 'utf8')) as Model;
  const kept: Record<string, Shape> = {};
  const pending: string[] = [];
  for (const name of source.operations.filter((o) => o.startsWith(`${service}:`))) {
    const op = operationShape(full, service, name.slice(service.length + 1));
    if (!op) throw new Error(`${name} is not in ${input}`);
    kept[op[0]] = {
      type: 'operation',
      ...(op[1].output ? { output: op[1].output } : {}),
      errors: op[1].errors ?? [],
    };
    if (op[1].output) pending.push(op[1].output.target);
    for (const e of op[1].errors ?? []) pending.push(e.target);
  }
  while (pending.length) {
    const id = pending.pop()!;
    if (kept[id] || !full.shapes[id]) continue;
    const shape = stripTraits(full.shapes[id]!);
    kept[id] = shape;
    for (const ref of [shape.member, shape.key, shape.value, ...Object.values(shape.members ?? {})])
      if (ref && shape.type !== 'enum') pending.push(ref.target);
  }
  const text = JSON.stringify({ smithy: full.smithy, shapes: kept });
  // The repository's own prettier settings, wherever the output goes.
  const style = await prettier.resolveConfig(fileURLToPath(import.meta.url));
  writeFileSync(out, await prettier.format(text, { ...style, filepath: out }));
  console.log(`${out}: ${Object.keys(kept).length} shapes`);
}

if (process.argv[1]?.endsWith('smithy-check.ts') && process.argv[2] === 'trim') {
  const [service, input, sourceFile, out] = process.argv.slice(3);
  if (!service || !input || !sourceFile || !out) {
    console.error(
      'usage: tsx test/twins/smithy-check.ts trim <service> <full model .json> <source.json> <out .json>',
    );
    process.exit(2);
  }
  await trim(service, input, sourceFile, out);
}
