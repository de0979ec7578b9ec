/**
 * Twin responses checked against the vendors' own API descriptions (issue 13).
 *
 * Each twin's vendor description is trimmed to what the twin serves (`openapi.json`, produced by
 * `vendor-schema-trim.ts` from the full description named in `source.json`); `vendor-schema-dir.ts` says where
 * it is read from (`../shared/vendor-schemas/<twin>/` for those taken from a vendor's repository).
 * `checkResponse` finds the operation a request hit and validates the response body against the schema the
 * vendor documents for that status. `vendorFetch` wraps `fetch` with that check; the SDK clients the twin
 * tests use (`githubClient`, `slackClient`, and any SDK given `vendorFetch`) send every call through it, so
 * a response with a missing required field or a wrong type fails the SDK call and with it the test.
 *
 * Set `VENDOR_SCHEMA_MODE=record` to record without failing (to measure a twin before fixing it) and
 * `VENDOR_SCHEMA_REPORT=<file>` to append one JSON line per checked response; `vendor-schema-report.ts`
 * sums such a file up.
 */
import { appendFileSync } from 'node:fs';
import { _, Ajv, type ValidateFunction, type ErrorObject } from 'ajv';
import standaloneModule from 'ajv/dist/standalone/index.js';
import addFormatsModule from 'ajv-formats';
import { Octokit } from '@octokit/rest';
import { WebClient, type WebClientOptions } from '@slack/web-api';
import { readVendorSchemaText, vendorSchemaDir } from './vendor-schema-dir.ts';
import { cacheEnabled, FORMATS_MODULE, ValidatorCache } from './vendor-schema-cache.ts';

export { vendorSchemaDir };

export type VendorTwin = string;

/** How a twin's vendor answers, beyond what its description says (kept in its `source.json`). */
export interface CheckRules {
  /** Prefix of every API path on the twin that the description's paths leave out (Slack: `/api`). */
  base_path?: string;
  /** Operations are named by path only: the vendor takes GET and POST alike (Slack's Web API). */
  any_method?: boolean;
  /** A JSON pointer to the schema of errors at a status the operation does not list (GitHub: basic-error). */
  error_schema?: string;
  /** A body with `ok: false` is checked against this response (Slack documents its errors as `default`). */
  ok_false_response?: string;
  /**
   * Answers the vendor documents once for its whole API rather than per operation (Slack's rate limit:
   * HTTP 429 with `{ok: false, error: "ratelimited"}`): status → the schema, and where it is documented.
   */
  status_responses?: Record<string, { schema: unknown; documented: string }>;
  /**
   * Errors the vendor answers from any method although the description lists them for some only (Slack's
   * `token_revoked`): a body `{ok: false, error}` with one of them is checked against this schema.
   */
  common_errors?: { schema: unknown; errors: string[]; documented: string };
  /** Paths outside the API description (OAuth web pages, archive downloads): not checked, and counted as such. */
  unchecked_paths?: string[];
}

export interface VendorSource {
  vendor: string;
  check?: CheckRules;
  deviations?: Deviation[];
  operations: string[];
  [key: string]: unknown;
}

export interface CheckInput {
  method: string;
  /** A concrete path (`/repos/octocat/shop`, query allowed) or a template (`/repos/{owner}/{repo}`). */
  path: string;
  status: number;
  /** Parsed JSON, a string for other bodies, undefined for an empty body. */
  body: unknown;
  /** The client followed a redirect: the body is the target's, only the redirect itself is checked. */
  redirected?: boolean;
}

export interface CheckResult {
  twin: string;
  /** `GET /repos/{owner}/{repo}` (Slack: `/chat.postMessage`), or undefined when no operation matched. */
  operation?: string;
  status: number;
  /** The response the twin gave was a success (2xx, and for Slack `ok: true`). */
  success: boolean;
  valid: boolean;
  /** The request was to a path listed in `unchecked_paths`. */
  unchecked?: boolean;
  errors: string[];
}

export class VendorSchemaError extends Error {
  override name = 'VendorSchemaError';
  constructor(readonly result: CheckResult) {
    super(
      `${result.twin} ${result.operation ?? '(unknown operation)'} → ${result.status}: the response does not ` +
        `match the vendor's description:\n  ${result.errors.join('\n  ')}`,
    );
  }
}

// ajv-formats and ajv's standalone module are CommonJS: under Node's ESM loader each function is the
// module's `default` export.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;
const standaloneCode = ((standaloneModule as unknown as { default?: unknown }).default ??
  standaloneModule) as (ajv: Ajv, refs: Record<string, string>) => string;

interface Operation {
  method: string;
  template: string;
  regex: RegExp;
  /** Literal segments first: `/pulls/{n}/merge` beats `/pulls/{n}/{x}`. */
  literals: number;
  /** JSON pointer of the operation object in the document. */
  pointer: string;
  responses: Record<string, unknown>;
}

interface Loaded {
  name: string;
  source: VendorSource;
  rules: CheckRules;
  doc: Record<string, unknown>;
  swagger2: boolean;
  operations: Operation[];
  ajv: Ajv;
  validators: Map<string, ValidateFunction>;
  /** Validators compiled by earlier test processes (vendor-schema-cache.ts). */
  cache: ValidatorCache;
}

const loaded = new Map<string, Loaded>();

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * The vendors' dialects are not quite JSON Schema; rewritten here so ajv reads them as the vendor meant:
 * - OpenAPI 3.0's `nullable: true` allows null beside the declared type (an `enum` then takes null too);
 * - a `format` whose documented `default` is "" also takes "" (GitHub's deployment status `target_url`,
 *   `log_url` and `environment_url` are "" when unset, and the description says so with that default);
 * - `swagger2`: Slack's generator writes a union as `items: [A, B]` on a schema that is not an array (an
 *   `anyOf` in JSON Schema, where `items` would check nothing); on an array it is the union of its items.
 * Every other keyword is kept as the vendor wrote it.
 */
export function toJsonSchema(node: unknown, options: { swagger2?: boolean } = {}): unknown {
  if (Array.isArray(node)) return node.map((n) => toJsonSchema(n, options));
  if (!node || typeof node !== 'object') return node;
  let out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    // `example(s)` are sample data, not schemas: copied untouched (a sample may well hold `nullable`).
    out[key] = key === 'example' || key === 'examples' ? value : toJsonSchema(value, options);
  }
  if (options.swagger2 && Array.isArray(out.items)) {
    const union = out.items;
    if (out.type === 'array') out.items = { anyOf: union };
    else {
      delete out.items;
      out = Object.keys(out).length ? { allOf: [out, { anyOf: union }] } : { anyOf: union };
    }
  }
  if (typeof out.format === 'string' && out.default === '') {
    out = { anyOf: [{ type: 'string', maxLength: 0 }, out] };
  }
  if (out.nullable === true) {
    delete out.nullable;
    if (typeof out.type === 'string') {
      out.type = [out.type, 'null'];
      if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
      return out;
    }
    return { anyOf: [out, { type: 'null' }] };
  }
  if (out.nullable === false) delete out.nullable;
  return out;
}

/**
 * Where a vendor's description contradicts the vendor's own reference documentation (Slack's dates from
 * 2020), `source.json` lists a patch with the reason: `{pointer, value}` sets a schema node, `{pointer,
 * remove: true}` deletes one. Applied to the loaded copy only; the vendored file stays the vendor's.
 */
export interface Deviation {
  pointer: string;
  value?: unknown;
  remove?: boolean;
  why: string;
}

function applyDeviations(doc: Record<string, unknown>, deviations: Deviation[], twin: string): void {
  for (const d of deviations) {
    const parts = d.pointer
      .replace(/^#\//, '')
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = parts.pop()!;
    let node = doc as Record<string, unknown> | undefined;
    for (const part of parts) node = node?.[part] as Record<string, unknown> | undefined;
    if (!node || typeof node !== 'object' || !d.why) {
      throw new Error(`${twin} deviation ${d.pointer}: no such node, or no reason given`);
    }
    if (d.remove) {
      if (!(last in node)) throw new Error(`${twin} deviation ${d.pointer}: nothing to remove`);
      delete node[last];
    } else node[last] = d.value;
  }
}

function load(twin: string): Loaded {
  const cached = loaded.get(twin);
  if (cached) return cached;
  // A missing file throws VendorSchemaMissingError, naming it: the check fails, it is never skipped.
  const sourceText = readVendorSchemaText(twin, 'source.json');
  const rawText = readVendorSchemaText(twin, 'openapi.json');
  const source = JSON.parse(sourceText) as VendorSource;
  const raw = JSON.parse(rawText) as Record<string, unknown>;
  const swagger2 = typeof raw.swagger === 'string';
  applyDeviations(raw, source.deviations ?? [], twin);
  const doc = toJsonSchema(raw, { swagger2 }) as Record<string, unknown>;
  // Kept in the document so their $refs resolve like the vendor's own.
  doc['x-twinbox-status-responses'] = toJsonSchema(source.check?.status_responses ?? {}, { swagger2 });
  doc['x-twinbox-common-errors'] = toJsonSchema(source.check?.common_errors?.schema ?? {}, { swagger2 });
  // The vendors' documents carry OpenAPI-only keywords (`example`, `discriminator`, `x-github`, ...), which
  // strict mode refuses; they are annotations, so strict is off. Types, required fields, enums, formats,
  // `additionalProperties: false` and the combinators are all enforced.
  // `optimize: false`: ajv's optimising passes over the code it generates (dropping unused names) took half
  // of each compile, and a description's responses are compiled in every test process that checks them
  // (the twins' tests spent most of their CPU there). The checks are the same; only the code is longer.
  const ajv = new Ajv({
    strict: false,
    allErrors: true,
    validateSchema: false,
    verbose: true,
    // `source` and `formats`: each validator can be written out as a module of its own, which later test
    // processes load instead of compiling (vendor-schema-cache.ts); its formats are this instance's.
    code: { optimize: false, source: true, formats: _`require(${FORMATS_MODULE})` },
  });
  addFormats(ajv);
  // Formats the descriptions use that JSON Schema does not define.
  ajv.addFormat('url', ajv.formats.uri as never);
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
  });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  for (const free of ['double', 'float', 'binary', 'byte', 'timestamp', 'repo.nwo', 'unix-time', 'decimal']) {
    ajv.addFormat(free, true);
  }
  ajv.addSchema(doc, `vendor:${twin}`);
  const operations: Operation[] = [];
  const paths = (doc.paths ?? {}) as Record<string, Record<string, { responses?: Record<string, unknown> }>>;
  for (const [template, item] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!op || typeof op !== 'object' || !op.responses) continue;
      const segments = template.split('/');
      // A parameter may fill a segment or part of one (Twilio's `/Messages/{Sid}.json`).
      const regex = new RegExp(
        `^${segments
          .map((s) =>
            s
              .split(/\{[^}]+\}/)
              .map(escapeRegex)
              .join('[^/]+'),
          )
          .join('/')}$`,
      );
      operations.push({
        method: method.toUpperCase(),
        template,
        regex,
        literals: segments.filter((s) => s && !s.startsWith('{')).length,
        pointer: `/paths/${escapePointer(template)}/${method}`,
        responses: op.responses,
      });
    }
  }
  operations.sort((a, b) => b.literals - a.literals || a.template.length - b.template.length);
  const entry: Loaded = {
    name: twin,
    source,
    rules: source.check ?? {},
    doc,
    swagger2,
    operations,
    ajv,
    validators: new Map(),
    cache: new ValidatorCache(twin, [sourceText, rawText], ajv.formats),
  };
  loaded.set(twin, entry);
  // Every documented response's validator: from the module an earlier process stored, or compiled now and
  // stored for the next (vendor-schema-cache.ts). Others (a status the description does not list) are
  // compiled when asked for.
  const stored = entry.cache.read();
  if (stored) {
    for (const [pointer, fn] of stored) entry.validators.set(pointer, fn);
  } else if (cacheEnabled()) {
    const refs: Record<string, string> = {};
    for (const pointer of documentedSchemas(entry)) {
      const id = `response:${pointer}`;
      ajv.addSchema({ $ref: `vendor:${twin}#${pointer}` }, id);
      try {
        entry.validators.set(pointer, ajv.getSchema(id)!);
      } catch {
        // Not stored: compiled again when a response needs it, and failing that check with ajv's error.
        continue;
      }
      refs[pointer] = id;
    }
    entry.cache.write(standaloneCode(ajv, refs));
  }
  return entry;
}

/** The pointer of every response schema the description documents, and of the answers `source.json` adds. */
function documentedSchemas(spec: Loaded): Set<string> {
  const pointers = new Set<string>();
  for (const op of spec.operations) {
    for (const key of Object.keys(op.responses)) {
      const pointer = schemaPointer(spec, op.responses[key], `${op.pointer}/responses/${escapePointer(key)}`);
      if (pointer) pointers.add(pointer);
    }
  }
  for (const status of Object.keys(spec.rules.status_responses ?? {})) {
    pointers.add(`/x-twinbox-status-responses/${status}/schema`);
  }
  if (spec.rules.common_errors) pointers.add('/x-twinbox-common-errors');
  if (spec.rules.error_schema) pointers.add(spec.rules.error_schema.replace(/^#/, ''));
  return pointers;
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Forgets every description loaded and validator made, as a new process would start (the cache's test). */
export function forgetVendorSchemas(): void {
  loaded.clear();
}

/** The operation `method path` names: a template as written in the description, or a concrete path. */
function findIn(spec: Loaded, method: string, rawPath: string): Operation | undefined {
  let path = rawPath.split('?')[0] ?? rawPath;
  const base = spec.rules.base_path ?? '';
  if (base && path.startsWith(`${base}/`)) path = path.slice(base.length);
  const m = method.toUpperCase();
  const sameMethod = (op: Operation) => spec.rules.any_method || op.method === m;
  const exact = spec.operations.find((op) => sameMethod(op) && op.template === path);
  if (exact) return exact;
  const matched = spec.operations.find((op) => sameMethod(op) && op.regex.test(path));
  if (matched) return matched;
  // A last parameter that holds slashes (`contents/{path}`, `compare/{basehead}`, `git/ref/{ref}`).
  return spec.operations.find((op) => {
    if (!sameMethod(op) || !/\{[^}]+\}$/.test(op.template)) return false;
    const prefix = op.template.replace(/\{[^}]+\}$/, '');
    const head = new RegExp(
      `^${prefix
        .split('/')
        .map((s) => (/^\{[^}]+\}$/.test(s) ? '[^/]+' : escapeRegex(s)))
        .join('/')}.+$`,
    );
    return head.test(path);
  });
}

/** The operation a request hits, as `METHOD template` (Slack: the method's path), or undefined. */
export function findOperation(twin: string, method: string, path: string): string | undefined {
  const spec = load(twin);
  const op = findIn(spec, method, path);
  return op && label(spec, op);
}

function label(spec: Loaded, op: Operation): string {
  return spec.rules.any_method ? op.template : `${op.method} ${op.template}`;
}

/** Follows a `$ref` to another part of the same document, returning the target and its pointer. */
function deref(spec: Loaded, node: unknown, pointer: string): { node: unknown; pointer: string } {
  let current = node;
  let at = pointer;
  for (let hops = 0; hops < 10; hops++) {
    const ref = (current as { $ref?: unknown } | undefined)?.$ref;
    if (typeof ref !== 'string' || !ref.startsWith('#/')) break;
    at = ref.slice(1);
    current = at
      .split('/')
      .slice(1)
      .reduce<unknown>(
        (n, part) =>
          (n as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')],
        spec.doc,
      );
  }
  return { node: current, pointer: at };
}

function validator(spec: Loaded, pointer: string): ValidateFunction {
  let fn = spec.validators.get(pointer);
  if (!fn) {
    fn = spec.ajv.compile({ $ref: `vendor:${spec.name}#${pointer}` });
    spec.validators.set(pointer, fn);
  }
  return fn;
}

function formatErrors(errors: ErrorObject[] | null | undefined): string[] {
  const seen = new Set<string>();
  for (const e of errors ?? []) {
    const where = e.instancePath || '(body)';
    const detail =
      e.keyword === 'additionalProperties'
        ? `has "${(e.params as { additionalProperty: string }).additionalProperty}", which the schema does not allow`
        : e.keyword === 'enum'
          ? `${e.message}: ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}, not ${JSON.stringify(e.data)}`
          : e.keyword === 'format' || e.keyword === 'type' || e.keyword === 'pattern'
            ? `${e.message}, not ${JSON.stringify(e.data)?.slice(0, 80)}`
            : e.message;
    seen.add(`${where} ${detail}`);
    if (seen.size >= 12) break;
  }
  return [...seen];
}

/** The JSON schema pointer documented for a response (`content` of OpenAPI 3, `schema` of Swagger 2). */
function schemaPointer(spec: Loaded, response: unknown, pointer: string): string | null | undefined {
  const r = deref(spec, response, pointer);
  const resp = r.node as { content?: Record<string, { schema?: unknown }>; schema?: unknown } | undefined;
  if (!resp) return undefined;
  if (spec.swagger2) return resp.schema ? `${r.pointer}/schema` : null;
  if (!resp.content) return null;
  const type = Object.keys(resp.content).find((t) => /json/i.test(t));
  if (!type) return null;
  return resp.content[type]?.schema ? `${r.pointer}/content/${escapePointer(type)}/schema` : null;
}

/**
 * Compiles the validator of every documented JSON response of `twin` now. A large description (Vercel's
 * project objects) takes seconds to compile, which would otherwise happen on the first call of each
 * operation, in the middle of a test, with the twin's server in the same process: its keep-alive sockets
 * time out while the event loop is blocked, and the SDK's next request meets ECONNRESET.
 */
export function compileVendorSchema(twin: string): void {
  const spec = load(twin);
  for (const pointer of documentedSchemas(spec)) validator(spec, pointer);
}

/** Checks one response against the twin's vendored description. Unknown operations are invalid. */
export function checkResponse(twin: string, input: CheckInput): CheckResult {
  const spec = load(twin);
  const path = input.path.split('?')[0] ?? input.path;
  const okFalse =
    !!input.body && typeof input.body === 'object' && (input.body as { ok?: unknown }).ok === false;
  const success = input.status >= 200 && input.status < 300 && !okFalse;
  const result = (
    valid: boolean,
    errors: string[],
    operation?: string,
    unchecked?: boolean,
  ): CheckResult => ({
    twin,
    ...(operation ? { operation } : {}),
    status: input.status,
    success,
    valid,
    ...(unchecked ? { unchecked } : {}),
    errors,
  });
  if (spec.rules.unchecked_paths?.some((prefix) => path.startsWith(prefix))) {
    return result(true, [], `${input.method.toUpperCase()} ${path}`, true);
  }
  const op = findIn(spec, input.method, path);
  if (!op) {
    return result(false, [
      `${input.method.toUpperCase()} ${path} is not an operation of the vendored ${spec.source.vendor} description ` +
        `(add it to ${vendorSchemaDir(twin)}source.json and run vendor-schema-trim.ts)`,
    ]);
  }
  const name = label(spec, op);
  // A followed redirect: the body belongs to where it led; the operation must document a redirect.
  if (input.redirected) {
    return Object.keys(op.responses).some((s) => /^3\d\d$/.test(s))
      ? result(true, [], name)
      : result(false, [`${name} answered a redirect, which its description does not document`], name);
  }
  const status = String(input.status);
  let pointer: string | null | undefined;
  const responseOf = (key: string) =>
    schemaPointer(spec, op.responses[key], `${op.pointer}/responses/${escapePointer(key)}`);
  const error = okFalse ? (input.body as { error?: unknown }).error : undefined;
  if (spec.rules.status_responses?.[status]) pointer = `/x-twinbox-status-responses/${status}/schema`;
  else if (typeof error === 'string' && spec.rules.common_errors?.errors.includes(error)) {
    pointer = '/x-twinbox-common-errors';
  } else if (okFalse && spec.rules.ok_false_response) pointer = responseOf(spec.rules.ok_false_response);
  else if (op.responses[status]) pointer = responseOf(status);
  else if (op.responses[`${status[0]}XX`]) pointer = responseOf(`${status[0]}XX`);
  else if (input.status >= 400 && spec.rules.error_schema)
    pointer = spec.rules.error_schema.replace(/^#/, '');
  else if (op.responses.default) pointer = responseOf('default');
  else {
    const listed = Object.keys(op.responses).join(', ');
    return result(false, [`status ${status} is not documented for ${name} (documented: ${listed})`], name);
  }
  if (pointer === undefined)
    return result(false, [`the ${status} response of ${name} cannot be resolved`], name);
  if (pointer === null) {
    const empty = input.body === undefined || input.body === '';
    const nonJson = typeof input.body === 'string';
    // Documented without a JSON body: nothing to check unless the twin sent JSON where none is described.
    return empty || nonJson || input.status >= 300
      ? result(true, [], name)
      : result(false, [`${name} documents no JSON body for ${status}, the twin sent one`], name);
  }
  if (input.body === undefined) return result(false, [`${name} → ${status} has an empty body`], name);
  const validate = validator(spec, pointer);
  return validate(input.body) ? result(true, [], name) : result(false, formatErrors(validate.errors), name);
}

/** Every check made in this process, in order (for tests and for the measurement report). */
export const checked: CheckResult[] = [];

function record(result: CheckResult): void {
  checked.push(result);
  const file = process.env.VENDOR_SCHEMA_REPORT;
  if (file) appendFileSync(file, `${JSON.stringify(result)}\n`);
}

const enforcing = () => process.env.VENDOR_SCHEMA_MODE !== 'record';

/** Checks a response and throws `VendorSchemaError` when it is invalid (unless recording only). */
export function assertVendorResponse(twin: string, input: CheckInput): CheckResult {
  const result = checkResponse(twin, input);
  record(result);
  if (!result.valid && enforcing()) throw new VendorSchemaError(result);
  return result;
}

type Fetch = typeof globalThis.fetch;

/**
 * A `fetch` that checks every response against `twin`'s vendored description before the caller sees it.
 * An invalid response rejects the call with `VendorSchemaError`, which the SDKs pass on (Octokit as the
 * `cause` of its 500 RequestError, @slack/web-api as `original`), so the test fails on the line of the call.
 */
export function vendorFetch(twin: string, inner: Fetch = globalThis.fetch): Fetch {
  load(twin);
  return async (input, init) => {
    // A Request given as input keeps its body: `new Request(request)` would take the body over, and the
    // call below would then send a used one (@vercel/sdk hands its fetcher Requests).
    const request = input instanceof Request ? input : new Request(input, init);
    const method = init?.method ?? request.method;
    const response = await inner(input, init);
    const contentType = response.headers.get('content-type') ?? '';
    const bytes = Buffer.from(await response.clone().arrayBuffer());
    let body: unknown = bytes.length ? bytes.toString('utf8') : undefined;
    if (bytes.length && /json/i.test(contentType)) {
      try {
        body = JSON.parse(bytes.toString('utf8'));
      } catch {
        // Not JSON although it says so: checked as text, which a JSON schema refuses.
      }
    }
    assertVendorResponse(twin, {
      method,
      path: new URL(request.url).pathname,
      status: response.status,
      body,
      redirected: response.redirected,
    });
    return response;
  };
}

/** Octokit (the GitHub twin's official SDK) with every response checked against GitHub's description. */
export function githubClient(options: { auth?: string; baseUrl: string | undefined }): Octokit {
  // Without a base URL Octokit would call api.github.com itself.
  if (!options.baseUrl) throw new Error("githubClient: the twin's baseUrl is missing");
  return new Octokit({ ...options, request: { fetch: vendorFetch('github') } });
}

/**
 * @slack/web-api's WebClient with every response checked against Slack's description. No retries (an
 * injected fault or a schema failure reaches the test as it is) and rate limits are rejected.
 */
export function slackClient(token: string | undefined, options: WebClientOptions): WebClient {
  return new WebClient(token, {
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    ...options,
    fetch: vendorFetch('slack') as unknown as WebClientOptions['fetch'],
  });
}

/** Whether an error an SDK raised carries a schema failure (see `vendorFetch`). */
export function schemaFailureOf(error: unknown): VendorSchemaError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    if (current instanceof VendorSchemaError) return current;
    const e = current as { cause?: unknown; original?: unknown };
    current = e.original ?? e.cause;
  }
  return undefined;
}
