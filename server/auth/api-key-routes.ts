import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { BEARER, SESSION, accountOf, bearerToken } from './bearer.ts';
import type { ApiKeys } from './api-keys.ts';
import { badRequest, notFound, validationFailAction } from '../errors.ts';
import { documentedResponses } from '../http/responses.ts';

export const publicApiKeySchema = Joi.object({
  id: Joi.string().required(),
  name: Joi.string().required(),
  prefix: Joi.string().required(),
  created_at: Joi.string().isoDate().required(),
  last_used_at: Joi.string().isoDate().allow(null).required(),
  revoked_at: Joi.string().isoDate().allow(null).required(),
}).label('ApiKey');

/**
 * API key management. Session (JWT) only: a leaked key must not be able to mint more keys or revoke
 * the owner's, so an API key here is 401.
 */
export const apiKeyRoutes: Plugin<{ apiKeys: ApiKeys }> = {
  name: 'twinbox-api-keys',
  register(server, { apiKeys }) {
    const options = { auth: { strategy: SESSION }, tags: ['api', 'api-keys'] };
    server.route([
      {
        method: 'POST',
        path: '/api-keys',
        options: {
          ...options,
          description: 'Create an API key; the key is in this response only',
          validate: {
            payload: Joi.object({ name: Joi.string().trim().min(1).max(100) }).allow(null),
            failAction: validationFailAction,
          },
          ...documentedResponses(
            { 201: publicApiKeySchema.keys({ key: Joi.string().required() }).label('NewApiKeyWithSecret') },
            400,
            401,
            403,
          ),
        },
        async handler(request, h) {
          const name = (request.payload as { name?: string } | null)?.name ?? 'default';
          const { record, key } = await apiKeys.issue(accountOf(request).id, name);
          const { id, prefix, created_at, last_used_at, revoked_at } = record;
          return h
            .response({ id, name, prefix, created_at, last_used_at, revoked_at, key })
            .code(201)
            .header('Cache-Control', 'no-store');
        },
      },
      {
        method: 'GET',
        path: '/api-keys',
        options: {
          ...options,
          description: "List the account's API keys (never the keys themselves)",
          ...documentedResponses(
            { 200: Joi.object({ api_keys: Joi.array().items(publicApiKeySchema) }) },
            401,
          ),
        },
        async handler(request) {
          return { api_keys: await apiKeys.list(accountOf(request).id) };
        },
      },
      {
        // A key may revoke itself, and only itself: a thief holding it can do no more than end it.
        method: 'DELETE',
        path: '/api-keys/current',
        options: {
          auth: { strategy: BEARER },
          tags: ['api', 'api-keys'],
          description: 'Revoke the API key this request is made with (signing out, e.g. `twinbox logout`)',
          ...documentedResponses({ 200: publicApiKeySchema }, 400, 401),
        },
        async handler(request) {
          if (request.auth.credentials.user!.tokenType !== 'api_key') {
            throw badRequest(
              'This request is signed in with a session, not an API key: revoke a key by its id with DELETE /api-keys/{id}.',
            );
          }
          const revoked = await apiKeys.revokeKey(bearerToken(request));
          if (!revoked) throw notFound('This API key is unknown.');
          return revoked;
        },
      },
      {
        method: 'DELETE',
        path: '/api-keys/{id}',
        options: {
          ...options,
          description: 'Revoke an API key; it stops working on the next request',
          validate: {
            params: Joi.object({ id: Joi.string().max(100).required() }),
            failAction: validationFailAction,
          },
          ...documentedResponses({ 204: Joi.any() }, 401, 404),
        },
        async handler(request, h) {
          const id = String(request.params.id);
          if (!(await apiKeys.revoke(accountOf(request).id, id))) throw notFound(`No API key ${id}.`);
          return h.response().code(204);
        },
      },
    ]);
  },
};
