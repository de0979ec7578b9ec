import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { accountOf } from '../auth/bearer.ts';
import { validationFailAction } from '../errors.ts';
import { documentedResponses } from '../http/responses.ts';
import type { CreateScenarioInput, ScenarioService } from './service.ts';

const scenarioSchema = Joi.object({
  id: Joi.string().required(),
  kind: Joi.string().valid('preset', 'saved').required(),
  name: Joi.string().required(),
  description: Joi.string().allow(null).required(),
  twins: Joi.array().items(Joi.string()).required(),
  seed: Joi.object().required().description('Seed documents keyed by twin name (docs/twins.md, "Seeds").'),
  promises: Joi.object().allow(null).required(),
  notes: Joi.array().items(Joi.string()).required(),
  created_at: Joi.string().isoDate().allow(null).required(),
}).label('Scenario');

const idParam = Joi.object({ scenario_id: Joi.string().max(100).required() });

export const scenarioRoutes: Plugin<{ scenarios: ScenarioService }> = {
  name: 'twinbox-scenarios',
  register(server, { scenarios }) {
    server.route([
      {
        method: 'GET',
        path: '/scenarios',
        options: {
          description: "The presets shipped with Twinbox, then the caller's saved scenarios",
          tags: ['api', 'scenarios'],
          ...documentedResponses(
            {
              200: Joi.object({ scenarios: Joi.array().items(scenarioSchema).required() }).label(
                'ScenarioList',
              ),
            },
            401,
          ),
        },
        handler: async (request) => ({ scenarios: await scenarios.list(accountOf(request)) }),
      },
      {
        method: 'POST',
        path: '/scenarios',
        options: {
          description: 'Save a scenario: a seed document, or a prompt the planner turns into one',
          tags: ['api', 'scenarios'],
          validate: {
            payload: Joi.object({
              name: Joi.string().min(1).max(200).required(),
              twins: Joi.array().items(Joi.string().max(64)).unique().max(20),
              seed: Joi.object().pattern(Joi.string(), Joi.object()),
              prompt: Joi.string().min(1).max(4000),
            }).options({ convert: false }),
            failAction: validationFailAction,
          },
          ...documentedResponses({ 201: scenarioSchema }, 400, 401),
        },
        async handler(request, h) {
          const created = await scenarios.create(accountOf(request), request.payload as CreateScenarioInput);
          return h.response(created).code(201).location(`/scenarios/${created.id}`);
        },
      },
      {
        method: 'GET',
        path: '/scenarios/{scenario_id}',
        options: {
          description: 'A preset, or one of the caller’s saved scenarios',
          tags: ['api', 'scenarios'],
          validate: { params: idParam, failAction: validationFailAction },
          ...documentedResponses({ 200: scenarioSchema }, 401, 404),
        },
        handler: async (request) => scenarios.get(accountOf(request), String(request.params.scenario_id)),
      },
      {
        method: 'DELETE',
        path: '/scenarios/{scenario_id}',
        options: {
          description: 'Delete one of the caller’s saved scenarios',
          tags: ['api', 'scenarios'],
          validate: { params: idParam, failAction: validationFailAction },
          ...documentedResponses({}, 400, 401, 404),
        },
        async handler(request, h) {
          await scenarios.delete(accountOf(request), String(request.params.scenario_id));
          return h.response().code(204);
        },
      },
    ]);
  },
};
