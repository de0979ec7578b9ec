import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import type { TwinCatalog } from '../twins/catalog.ts';
import { documentedResponses } from '../http/responses.ts';
import { buildOpenApi } from '../http/openapi.ts';

const catalogSchema = Joi.object({
  twins: Joi.array()
    .items(
      Joi.object({
        name: Joi.string().required(),
        description: Joi.string().required(),
        env_vars: Joi.array().items(Joi.string()).required(),
        operations: Joi.array()
          .items(Joi.string())
          .required()
          .description('The vendor operations the twin serves, as its vendored API description names them'),
        schema_source: Joi.object({
          name: Joi.string().required(),
          version: Joi.string().allow(null).required(),
          url: Joi.string().allow(null).required(),
        })
          .allow(null)
          .required()
          .description("The vendor's API description the twin's answers are checked against")
          .label('TwinSchemaSource'),
      }).label('TwinCatalogEntry'),
    )
    .required(),
}).label('TwinCatalog');

/** Routes about the service itself: the twin catalog, the OpenAPI document, a health check. */
export const metaRoutes: Plugin<{ catalog: TwinCatalog; version: string }> = {
  name: 'twinbox-meta',
  register(server, { catalog, version }) {
    let openApi: object | undefined;
    server.route([
      {
        method: 'GET',
        path: '/twins',
        options: {
          description: 'The twin catalog: the names POST /sandboxes accepts in `twins`',
          tags: ['api', 'twins'],
          ...documentedResponses({ 200: catalogSchema }, 401),
        },
        handler: () => ({ twins: catalog.list() }),
      },
      {
        method: 'GET',
        path: '/openapi.json',
        options: { auth: false, description: 'This API as an OpenAPI 3 document' },
        // Built on first use: by then every plugin has registered its routes.
        handler: () => (openApi ??= buildOpenApi(server, { title: 'Twinbox API', version })),
      },
      {
        method: 'GET',
        path: '/healthz',
        options: { auth: false, description: 'Liveness: 200 while the server runs' },
        handler: () => ({ status: 'ok' }),
      },
    ]);
  },
};
