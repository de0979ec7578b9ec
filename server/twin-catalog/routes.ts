import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import type { TwinCatalog } from '../twins/catalog.ts';
import { documentedResponses } from '../http/responses.ts';

const catalogSchema = Joi.object({
  twins: Joi.array()
    .items(
      Joi.object({
        name: Joi.string().required(),
        description: Joi.string().required(),
        env_vars: Joi.array().items(Joi.string()).required(),
        hosts: Joi.array()
          .items(Joi.string())
          .required()
          .description(
            "The vendor's host names that reach this twin from inside a sandbox (`*` is one DNS label)",
          ),
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

/** GET /twins: the twin catalog, the names `POST /sandboxes` accepts in `twins` (docs/api.md). */
export const twinCatalogRoutes: Plugin<{ catalog: TwinCatalog }> = {
  name: 'twinbox-twin-catalog',
  register(server, { catalog }) {
    server.route({
      method: 'GET',
      path: '/twins',
      options: {
        description: 'The twin catalog: the names POST /sandboxes accepts in `twins`',
        tags: ['api', 'twins'],
        ...documentedResponses({ 200: catalogSchema }, 401),
      },
      handler: () => ({ twins: catalog.list() }),
    });
  },
};
