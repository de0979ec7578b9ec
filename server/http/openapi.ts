import type { Plugin, Server } from '@hapi/hapi';
import type Joi from 'joi';
import { loadPart } from '../load-part.ts';
import { documentedErrors, errorSchema } from './responses.ts';

type ToJsonSchema = (schema: Joi.Schema) => Record<string, unknown>;

/**
 * joi's schemas as OpenAPI's JSON Schema, by joi-to-json, which loads (with lodash, which it pulls in) at
 * the first GET /openapi.json rather than at every start: few processes are ever asked for the document.
 */
async function jsonSchemaConverter(): Promise<ToJsonSchema> {
  const { default: joiToJson } = await loadPart('joi-to-json', () => import('joi-to-json'));
  // A CommonJS module whose export is the function itself; its typings describe it as an ES module.
  const parse = joiToJson as unknown as typeof joiToJson.parse;
  return (schema) => parse(schema as never, 'open-api') as Record<string, unknown>;
}

interface RouteValidation {
  params?: Joi.Schema;
  query?: Joi.Schema;
  payload?: Joi.Schema;
}

/**
 * Builds an OpenAPI 3.0 document from the routes tagged `api`: their descriptions, their joi request
 * schemas and the response schemas they declare. Generated, so it cannot drift from the code.
 */
export function buildOpenApi(
  server: Server,
  info: { title: string; version: string },
  toJsonSchema: ToJsonSchema,
): object {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of server.table()) {
    const settings = route.settings;
    if (!settings.tags?.includes('api')) continue;
    const validate = settings.validate as RouteValidation;
    const auth = settings.auth as { strategies?: string[] } | false | undefined;
    const operation: Record<string, unknown> = {
      summary: settings.description,
      tags: settings.tags.filter((tag) => tag !== 'api'),
      parameters: [
        ...parameters(toJsonSchema, validate.params, 'path'),
        ...parameters(toJsonSchema, validate.query, 'query'),
      ],
      responses: responses(
        toJsonSchema,
        {
          ...(settings.response?.status as Record<number, Joi.Schema> | undefined),
          ...Object.fromEntries(documentedErrors(settings.plugins).map((code) => [code, errorSchema])),
        },
        (settings.plugins as { openapi?: SuccessExtras } | undefined)?.openapi,
      ),
    };
    if (validate.payload) {
      operation.requestBody = {
        required: true,
        content: { 'application/json': { schema: toJsonSchema(validate.payload) } },
      };
    }
    if (auth === false || !auth?.strategies?.length) operation.security = [];
    paths[route.path] ??= {};
    paths[route.path]![route.method] = operation;
  }
  return {
    openapi: '3.0.3',
    info,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key (twinbox_sk_...) or a JWT session.',
        },
      },
    },
    security: [{ bearer: [] }],
    paths,
  };
}

function parameters(
  toJsonSchema: ToJsonSchema,
  schema: Joi.Schema | undefined,
  location: 'path' | 'query',
): object[] {
  if (!schema) return [];
  const json = toJsonSchema(schema) as { properties?: Record<string, object>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name,
    in: location,
    required: location === 'path' || (json.required ?? []).includes(name),
    schema: property,
  }));
}

/** What a route that does not answer JSON, or answers with headers of note, says of its success. */
export interface SuccessExtras {
  contentType?: string;
  /** Header name → what it means. */
  headers?: Record<string, string>;
}

function responses(
  toJsonSchema: ToJsonSchema,
  status: Record<number, Joi.Schema> | undefined,
  extras: SuccessExtras = {},
): Record<string, object> {
  const result: Record<string, object> = {};
  for (const [code, schema] of Object.entries(status ?? {})) {
    const success = Number(code) < 400;
    const headers = success && extras.headers;
    result[code] = {
      description: success ? 'Success' : 'Error',
      ...(headers && {
        headers: Object.fromEntries(
          Object.entries(headers).map(([name, description]) => [
            name,
            { description, schema: { type: 'string' } },
          ]),
        ),
      }),
      content: {
        [(success && extras.contentType) || 'application/json']: { schema: toJsonSchema(schema) },
      },
    };
  }
  if (Object.keys(result).length === 0) result.default = { description: 'Response' };
  return result;
}

/** GET /openapi.json: this API as an OpenAPI 3 document, built from the routes registered by then. */
export const openApiRoute: Plugin<{ version: string }> = {
  name: 'twinbox-openapi',
  register(server, { version }) {
    let openApi: object | undefined;
    server.route({
      method: 'GET',
      path: '/openapi.json',
      options: { auth: false, description: 'This API as an OpenAPI 3 document' },
      // Built on first use: by then every plugin has registered its routes.
      handler: async () =>
        (openApi ??= buildOpenApi(server, { title: 'Twinbox API', version }, await jsonSchemaConverter())),
    });
  },
};
