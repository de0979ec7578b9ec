import type { Plugin } from '@hapi/hapi';
import Joi from 'joi';
import { accountOf } from '../auth/bearer.ts';
import { validationFailAction } from '../errors.ts';
import { documentedResponses } from '../http/responses.ts';
import type { CreateSandboxInput, ListFilter, SandboxService } from './service.ts';
import {
  createSandboxSchema,
  EXTEND_DEFAULT_MINUTES,
  extendSandboxSchema,
  listSandboxesQuery,
  sandboxIdParam,
} from './validation.ts';
import { sandboxPageSchema, sandboxViewSchema, toSandboxView } from './representation.ts';

/** Bodies larger than this are refused with 413 before they are parsed. */
const MAX_CREATE_BODY_BYTES = 256 * 1024;

/** Reads what a sandbox's app and its build printed (the deploy engine's log files). */
export interface AppLogReader {
  read(sandboxId: string): Promise<string>;
}

export const sandboxRoutes: Plugin<{ sandboxes: SandboxService; appLogs?: AppLogReader }> = {
  name: 'twinbox-sandboxes',
  register(server, { sandboxes, appLogs }) {
    server.route([
      {
        method: 'POST',
        path: '/sandboxes',
        options: {
          description: 'Create a sandbox for a branch or pull request',
          tags: ['api', 'sandboxes'],
          payload: { maxBytes: MAX_CREATE_BODY_BYTES, allow: 'application/json' },
          validate: { payload: createSandboxSchema, failAction: validationFailAction },
          ...documentedResponses({ 201: sandboxViewSchema }, 400, 401, 403, 413, 415),
        },
        async handler(request, h) {
          const sandbox = await sandboxes.create(accountOf(request), request.payload as CreateSandboxInput);
          return h.response(toSandboxView(sandbox)).code(201).location(`/sandboxes/${sandbox.id}`);
        },
      },
      {
        method: 'GET',
        path: '/sandboxes',
        options: {
          description: "List the caller's sandboxes, newest first",
          tags: ['api', 'sandboxes'],
          validate: { query: listSandboxesQuery, failAction: validationFailAction },
          ...documentedResponses({ 200: sandboxPageSchema }, 400, 401),
        },
        async handler(request) {
          const page = await sandboxes.list(accountOf(request), request.query as unknown as ListFilter);
          return { sandboxes: page.sandboxes.map(toSandboxView), next_cursor: page.next_cursor };
        },
      },
      {
        method: 'GET',
        path: '/sandboxes/{sandbox_id}',
        options: {
          description: 'Get a sandbox: its status, app URL, twins and variables',
          tags: ['api', 'sandboxes'],
          validate: { params: sandboxIdParam, failAction: validationFailAction },
          ...documentedResponses({ 200: sandboxViewSchema }, 401, 404),
        },
        async handler(request) {
          return toSandboxView(await sandboxes.get(accountOf(request), String(request.params.sandbox_id)));
        },
      },
      {
        method: 'GET',
        path: '/sandboxes/{sandbox_id}/logs',
        options: {
          description:
            "The last output of a sandbox's install, build and app (text, at most 1 MiB by default)",
          tags: ['api', 'sandboxes'],
          validate: { params: sandboxIdParam, failAction: validationFailAction },
          ...documentedResponses({ 200: Joi.string().allow('') }, 401, 404),
        },
        async handler(request, h) {
          const sandbox = await sandboxes.get(accountOf(request), String(request.params.sandbox_id));
          const text = appLogs ? await appLogs.read(sandbox.id) : '';
          return h.response(text).type('text/plain; charset=utf-8');
        },
      },
      {
        method: 'POST',
        path: '/sandboxes/{sandbox_id}/extend',
        options: {
          description:
            "Add minutes to a queued, building or ready sandbox's expiry, within the plan's lifetime cap",
          tags: ['api', 'sandboxes'],
          payload: { maxBytes: 1024, allow: 'application/json' },
          validate: {
            params: sandboxIdParam,
            payload: extendSandboxSchema,
            failAction: validationFailAction,
          },
          ...documentedResponses({ 200: sandboxViewSchema }, 400, 401, 403, 404, 409, 413, 415),
        },
        async handler(request) {
          const minutes = (request.payload as { minutes?: number } | null)?.minutes ?? EXTEND_DEFAULT_MINUTES;
          const id = String(request.params.sandbox_id);
          const sandbox = await sandboxes.extend(accountOf(request), id, minutes);
          return toSandboxView(sandbox);
        },
      },
      {
        method: 'DELETE',
        path: '/sandboxes/{sandbox_id}',
        options: {
          description: 'Delete a sandbox now: its app and twins stop; the record stays, status deleted',
          tags: ['api', 'sandboxes'],
          validate: { params: sandboxIdParam, failAction: validationFailAction },
          ...documentedResponses({ 200: sandboxViewSchema }, 401, 404),
        },
        async handler(request) {
          return toSandboxView(await sandboxes.delete(accountOf(request), String(request.params.sandbox_id)));
        },
      },
    ]);
  },
};
