/**
 * Converts Microsoft Graph's CSDL metadata (microsoftgraph/msgraph-metadata, clean_v10_metadata/cleanMetadata.xml,
 * the document Microsoft generates its openapi/v1.0/openapi.yaml from) into the OpenAPI the schema check reads,
 * for the Graph operations the Microsoft twin serves. The OpenAPI file Microsoft publishes is too large to be
 * fetched here (it is stored out of the repository's snapshot); the conversion follows what Microsoft's own
 * converter (OpenAPI.NET.OData) writes:
 *
 * - an entity or complex type is an object; its `BaseType` an `allOf` of the base and its own properties;
 * - `Edm.String` string, `Edm.Boolean` boolean, `Edm.Int32`/`Int64` integer, `Edm.Double` number,
 *   `Edm.DateTimeOffset` a date-time string, `Edm.Date` a date, `Edm.Guid` a uuid, `Edm.Binary` a string;
 * - `Nullable` (true unless it says false) is OpenAPI's `nullable`; `Collection(T)` an array of T;
 * - an enum type a string with its members' names;
 * - a collection answer `{value: [T], @odata.nextLink}`; errors `ODataError` (`{error: {code, message, ...}}`).
 *
 * Navigation properties are left out: Graph returns them only when `$expand` asks, which the twin does not serve.
 *
 *   npx tsx test/twins/vendor-schema-graph.ts <cleanMetadata.xml> <out.json>
 *
 * then `npx tsx test/twins/vendor-schema-trim.ts <out.json> <source.json> <out openapi.json>` keeps the
 * operations of Microsoft's `source.json` (`../shared/vendor-schemas/microsoft/`, see docs/twins.md).
 */
import { readFileSync, writeFileSync } from 'node:fs';

type Schema = Record<string, unknown>;

interface TypeDef {
  kind: 'EntityType' | 'ComplexType' | 'EnumType';
  name: string;
  base?: string;
  properties: Array<{ name: string; type: string; nullable: boolean }>;
  members: string[];
}

/** The element's attributes (CSDL writes one element a line, attributes in double quotes). */
function attributes(line: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of line.matchAll(/(\w+)="([^"]*)"/g)) out[m[1]!] = m[2]!;
  return out;
}

/** The types of the `microsoft.graph` schema (its alias is `graph`). */
export function parseCsdl(xml: string): Map<string, TypeDef> {
  const types = new Map<string, TypeDef>();
  let namespace = '';
  let current: TypeDef | undefined;
  for (const raw of xml.split('\n')) {
    const line = raw.trim();
    const schema = /^<Schema /.exec(line);
    if (schema) namespace = attributes(line).Namespace ?? '';
    if (namespace !== 'microsoft.graph') continue;
    const open = /^<(EntityType|ComplexType|EnumType) /.exec(line);
    if (open) {
      const a = attributes(line);
      current = {
        kind: open[1] as TypeDef['kind'],
        name: a.Name!,
        ...(a.BaseType ? { base: a.BaseType.replace(/^graph\./, '') } : {}),
        properties: [],
        members: [],
      };
      types.set(current.name, current);
      if (line.endsWith('/>')) current = undefined;
      continue;
    }
    if (/^<\/(EntityType|ComplexType|EnumType)>/.test(line)) current = undefined;
    else if (current && line.startsWith('<Property ')) {
      const a = attributes(line);
      current.properties.push({ name: a.Name!, type: a.Type!, nullable: a.Nullable !== 'false' });
    } else if (current && line.startsWith('<Member ')) current.members.push(attributes(line).Name!);
  }
  return types;
}

const ref = (name: string) => `#/components/schemas/microsoft.graph.${name}`;

const EDM: Record<string, Schema> = {
  'Edm.String': { type: 'string' },
  'Edm.Boolean': { type: 'boolean' },
  'Edm.Int16': { type: 'integer', format: 'int32' },
  'Edm.Int32': { type: 'integer', format: 'int32' },
  'Edm.Int64': { type: 'integer', format: 'int64' },
  'Edm.Byte': { type: 'integer' },
  'Edm.Double': { type: 'number' },
  'Edm.Single': { type: 'number' },
  'Edm.Decimal': { type: 'number' },
  'Edm.DateTimeOffset': { type: 'string', format: 'date-time' },
  'Edm.Date': { type: 'string', format: 'date' },
  'Edm.TimeOfDay': { type: 'string' },
  'Edm.Duration': { type: 'string' },
  'Edm.Guid': { type: 'string', format: 'uuid' },
  'Edm.Binary': { type: 'string' },
  'Edm.Stream': { type: 'string' },
};

function typeSchema(type: string, nullable: boolean, used: Set<string>): Schema {
  const collection = /^Collection\((.+)\)$/.exec(type);
  if (collection) return { type: 'array', items: typeSchema(collection[1]!, false, used) };
  const edm = EDM[type];
  if (edm) return nullable ? { ...edm, nullable: true } : { ...edm };
  const name = type.replace(/^graph\./, '').replace(/^microsoft\.graph\./, '');
  if (name.includes('.')) return nullable ? { type: 'object', nullable: true } : { type: 'object' };
  used.add(name);
  return nullable
    ? { anyOf: [{ $ref: ref(name) }, { type: 'object', nullable: true }] }
    : { $ref: ref(name) };
}

/** OpenAPI component schemas of every type in the graph (references resolved by the trim step). */
export function componentsOf(types: Map<string, TypeDef>): Record<string, Schema> {
  const out: Record<string, Schema> = {};
  for (const t of types.values()) {
    const used = new Set<string>();
    if (t.kind === 'EnumType') {
      out[`microsoft.graph.${t.name}`] = { type: 'string', enum: t.members };
      continue;
    }
    const own: Schema = {
      type: 'object',
      properties: Object.fromEntries(t.properties.map((p) => [p.name, typeSchema(p.type, p.nullable, used)])),
    };
    out[`microsoft.graph.${t.name}`] = t.base ? { allOf: [{ $ref: ref(t.base) }, own] } : own;
  }
  return out;
}

/** The error body of every Graph operation, as Microsoft's converter writes it for the published OpenAPI. */
const ERRORS: Record<string, Schema> = {
  'microsoft.graph.ODataErrors.ODataError': {
    type: 'object',
    required: ['error'],
    properties: { error: { $ref: '#/components/schemas/microsoft.graph.ODataErrors.MainError' } },
  },
  'microsoft.graph.ODataErrors.MainError': {
    type: 'object',
    required: ['code', 'message'],
    properties: {
      code: { type: 'string' },
      message: { type: 'string' },
      target: { type: 'string', nullable: true },
      details: {
        type: 'array',
        items: { $ref: '#/components/schemas/microsoft.graph.ODataErrors.ErrorDetails' },
      },
      innerError: { $ref: '#/components/schemas/microsoft.graph.ODataErrors.InnerError' },
    },
  },
  'microsoft.graph.ODataErrors.ErrorDetails': {
    type: 'object',
    required: ['code', 'message'],
    properties: {
      code: { type: 'string' },
      message: { type: 'string' },
      target: { type: 'string', nullable: true },
    },
  },
  'microsoft.graph.ODataErrors.InnerError': {
    type: 'object',
    properties: {
      'request-id': { type: 'string', nullable: true },
      'client-request-id': { type: 'string', nullable: true },
      date: { type: 'string', format: 'date-time', nullable: true },
    },
  },
};

const errorResponses = {
  '4XX': { $ref: '#/components/responses/error' },
  '5XX': { $ref: '#/components/responses/error' },
};

const json = (schema: Schema) => ({ content: { 'application/json': { schema } } });

/**
 * The Microsoft identity platform's token and discovery endpoints, which no machine-readable description
 * covers: written from Microsoft's reference pages (named in source.json, `identity_platform`).
 */
const IDENTITY_PATHS = {
  '/oauth2/v2.0/token': {
    post: {
      operationId: 'identity.token',
      responses: {
        '200': json({ $ref: '#/components/schemas/identity.TokenResponse' }),
        '4XX': json({ $ref: '#/components/schemas/identity.ErrorResponse' }),
      },
    },
  },
  '/{tenant}/v2.0/.well-known/openid-configuration': {
    get: {
      operationId: 'identity.openidConfiguration',
      responses: { '200': json({ $ref: '#/components/schemas/identity.OpenIDProviderMetadata' }) },
    },
  },
  '/discovery/v2.0/keys': {
    get: {
      operationId: 'identity.keys',
      responses: { '200': json({ $ref: '#/components/schemas/identity.JWKSet' }) },
    },
  },
};

const IDENTITY_SCHEMAS: Record<string, Schema> = {
  'identity.TokenResponse': {
    type: 'object',
    required: ['token_type', 'expires_in', 'access_token'],
    properties: {
      token_type: { type: 'string', enum: ['Bearer'] },
      scope: { type: 'string' },
      expires_in: { type: 'integer' },
      ext_expires_in: { type: 'integer' },
      access_token: { type: 'string' },
      refresh_token: { type: 'string' },
      id_token: { type: 'string' },
    },
  },
  'identity.ErrorResponse': {
    type: 'object',
    required: ['error', 'error_description'],
    properties: {
      error: { type: 'string' },
      error_description: { type: 'string' },
      error_codes: { type: 'array', items: { type: 'integer' } },
      timestamp: { type: 'string' },
      trace_id: { type: 'string' },
      correlation_id: { type: 'string' },
    },
  },
  'identity.OpenIDProviderMetadata': {
    type: 'object',
    required: [
      'issuer',
      'authorization_endpoint',
      'token_endpoint',
      'jwks_uri',
      'response_types_supported',
      'subject_types_supported',
      'id_token_signing_alg_values_supported',
    ],
    properties: {
      issuer: { type: 'string', format: 'uri' },
      authorization_endpoint: { type: 'string', format: 'uri' },
      token_endpoint: { type: 'string', format: 'uri' },
      jwks_uri: { type: 'string', format: 'uri' },
      userinfo_endpoint: { type: 'string', format: 'uri' },
      end_session_endpoint: { type: 'string', format: 'uri' },
      response_types_supported: { type: 'array', items: { type: 'string' } },
      response_modes_supported: { type: 'array', items: { type: 'string' } },
      subject_types_supported: { type: 'array', items: { type: 'string' } },
      id_token_signing_alg_values_supported: { type: 'array', items: { type: 'string' } },
      scopes_supported: { type: 'array', items: { type: 'string' } },
      token_endpoint_auth_methods_supported: { type: 'array', items: { type: 'string' } },
      claims_supported: { type: 'array', items: { type: 'string' } },
      tenant_region_scope: { type: 'string', nullable: true },
    },
  },
  'identity.JWKSet': {
    type: 'object',
    required: ['keys'],
    properties: {
      keys: {
        type: 'array',
        items: {
          type: 'object',
          required: ['kty', 'kid'],
          properties: {
            kty: { type: 'string' },
            use: { type: 'string' },
            kid: { type: 'string' },
            n: { type: 'string' },
            e: { type: 'string' },
            x5c: { type: 'array', items: { type: 'string' } },
            alg: { type: 'string' },
          },
        },
      },
    },
  },
};

function main(): void {
  const [input, output] = process.argv.slice(2);
  if (!input || !output) {
    console.error('usage: tsx test/twins/vendor-schema-graph.ts <cleanMetadata.xml> <out.json>');
    process.exit(2);
  }
  const types = parseCsdl(readFileSync(input, 'utf8'));
  if (!types.has('user')) throw new Error(`${input}: no microsoft.graph.user entity type`);
  const schemas: Record<string, Schema> = {
    ...componentsOf(types),
    ...ERRORS,
    ...IDENTITY_SCHEMAS,
    'microsoft.graph.userCollectionResponse': {
      type: 'object',
      properties: {
        value: { type: 'array', items: { $ref: ref('user') } },
        '@odata.nextLink': { type: 'string', nullable: true },
        '@odata.count': { type: 'integer', nullable: true },
      },
    },
  };
  const user = json({ $ref: ref('user') });
  const doc = {
    openapi: '3.0.4',
    info: { title: 'Microsoft Graph v1.0 (converted from its CSDL metadata)', version: 'v1.0' },
    paths: {
      '/v1.0/users': {
        get: {
          operationId: 'users.user.ListUser',
          responses: {
            '200': json({ $ref: '#/components/schemas/microsoft.graph.userCollectionResponse' }),
            ...errorResponses,
          },
        },
      },
      '/v1.0/users/{user-id}': {
        get: { operationId: 'users.user.GetUser', responses: { '200': user, ...errorResponses } },
      },
      '/v1.0/me': { get: { operationId: 'me.user.GetUser', responses: { '200': user, ...errorResponses } } },
      ...IDENTITY_PATHS,
    },
    components: {
      schemas,
      responses: {
        error: json({ $ref: '#/components/schemas/microsoft.graph.ODataErrors.ODataError' }),
      },
    },
  };
  writeFileSync(output, JSON.stringify(doc));
  console.log(`${output}: ${types.size} types`);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) main();
