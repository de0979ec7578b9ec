import type { Plugin } from '@hapi/hapi';
import Joi from 'joi';
import { accountOf } from '../auth/bearer.ts';
import { validationFailAction } from '../errors.ts';
import { documentedResponses } from '../http/responses.ts';
import type { AppLogReader } from '../sandboxes/routes.ts';
import type { ListFilter, SandboxService, TwinsRequest } from '../sandboxes/service.ts';
import { EXTEND_DEFAULT_MINUTES, extendSandboxSchema } from '../sandboxes/validation.ts';
import { toTwinSetView, twinSetPageSchema, twinSetViewSchema } from './representation.ts';
import { createTwinSetSchema, listTwinSetsQuery, twinSetIdParam } from './validation.ts';

const MAX_CREATE_BODY_BYTES = 256 * 1024;

/**
 * Twins without an app (docs/api.md, "Twin sets"): for an app running on a laptop or in a CI job. A twin
 * set is a sandbox of kind `twins` (server/sandboxes/): the same lifecycle, pod, public URLs, TTL, quota
 * and restart as a sandbox's twins, and a resource of its own so that POST /sandboxes stays as specified.
 */
export const twinSetRoutes: Plugin<{ sandboxes: SandboxService; appLogs?: AppLogReader }> = {
  name: 'twinbox-twin-sets',
  register(server, { sandboxes, appLogs }) {
    const idOf = (params: Record<string, unknown>) => String(params.twin_set_id);
    server.route([
      {
        method: 'POST',
        path: '/twin-sets',
        options: {
          description: 'Start twins alone, with no repository or app: their public URLs and variables',
          tags: ['api', 'twin-sets'],
          payload: { maxBytes: MAX_CREATE_BODY_BYTES, allow: 'application/json' },
          validate: { payload: createTwinSetSchema, failAction: validationFailAction },
          ...documentedResponses({ 201: twinSetViewSchema }, 400, 401, 403, 413, 415),
        },
        async handler(request, h) {
          const set = await sandboxes.createTwinSet(accountOf(request), request.payload as TwinsRequest);
          return h.response(toTwinSetView(set)).code(201).location(`/twin-sets/${set.id}`);
        },
      },
      {
        method: 'GET',
        path: '/twin-sets',
        options: {
          description: "List the caller's twin sets, newest first",
          tags: ['api', 'twin-sets'],
          validate: { query: listTwinSetsQuery, failAction: validationFailAction },
          ...documentedResponses({ 200: twinSetPageSchema }, 400, 401),
        },
        async handler(request) {
          const filter = request.query as unknown as ListFilter;
          const page = await sandboxes.list(accountOf(request), filter, 'twins');
          return { twin_sets: page.sandboxes.map(toTwinSetView), next_cursor: page.next_cursor };
        },
      },
      {
        method: 'GET',
        path: '/twin-sets/{twin_set_id}',
        options: {
          description: 'Get a twin set: its status, twins and variables',
          tags: ['api', 'twin-sets'],
          validate: { params: twinSetIdParam, failAction: validationFailAction },
          ...documentedResponses({ 200: twinSetViewSchema }, 401, 404),
        },
        async handler(request) {
          return toTwinSetView(await sandboxes.get(accountOf(request), idOf(request.params), 'twins'));
        },
      },
      {
        method: 'GET',
        path: '/twin-sets/{twin_set_id}/logs',
        options: {
          description: "What starting a twin set's twins printed (text)",
          tags: ['api', 'twin-sets'],
          validate: { params: twinSetIdParam, failAction: validationFailAction },
          ...documentedResponses({ 200: Joi.string().allow('') }, 401, 404),
          response: { status: { 200: Joi.string().allow('') }, emptyStatusCode: 200 },
        },
        async handler(request, h) {
          const set = await sandboxes.get(accountOf(request), idOf(request.params), 'twins');
          const text = appLogs ? await appLogs.read(set.id) : '';
          return h.response(text).type('text/plain; charset=utf-8').header('Cache-Control', 'no-store');
        },
      },
      {
        method: 'POST',
        path: '/twin-sets/{twin_set_id}/extend',
        options: {
          description: "Add minutes to a live twin set's expiry, within the plan's lifetime cap",
          tags: ['api', 'twin-sets'],
          payload: { maxBytes: 1024, allow: 'application/json' },
          validate: {
            params: twinSetIdParam,
            payload: extendSandboxSchema,
            failAction: validationFailAction,
          },
          ...documentedResponses({ 200: twinSetViewSchema }, 400, 401, 403, 404, 409, 413, 415),
        },
        async handler(request) {
          const account = accountOf(request);
          const minutes = (request.payload as { minutes?: number } | null)?.minutes ?? EXTEND_DEFAULT_MINUTES;
          const set = await sandboxes.get(account, idOf(request.params), 'twins');
          return toTwinSetView(await sandboxes.extendRecord(account, set, minutes));
        },
      },
      {
        method: 'DELETE',
        path: '/twin-sets/{twin_set_id}',
        options: {
          description: 'Delete a twin set now: its twins stop; the record stays, status deleted',
          tags: ['api', 'twin-sets'],
          validate: { params: twinSetIdParam, failAction: validationFailAction },
          ...documentedResponses({ 200: twinSetViewSchema }, 401, 404),
        },
        async handler(request) {
          return toTwinSetView(await sandboxes.delete(accountOf(request), idOf(request.params), 'twins'));
        },
      },
    ]);
  },
};
