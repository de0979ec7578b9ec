import type { Plugin } from '@hapi/hapi';
import Joi from 'joi';
import { accountOf } from '../auth/bearer.ts';
import { validationFailAction } from '../errors.ts';
import type { SuccessExtras } from '../http/openapi.ts';
import { documentedResponses } from '../http/responses.ts';
import type { CreateSandboxInput, ListFilter, SandboxService } from './service.ts';
import { ACTIVE_STATUSES } from './states.ts';
import {
  createSandboxSchema,
  EXTEND_DEFAULT_MINUTES,
  extendSandboxSchema,
  listSandboxesQuery,
  sandboxIdParam,
} from './validation.ts';
import { sandboxPageSchema, sandboxViewSchema, toSandboxView } from './representation.ts';

const logsQuery = Joi.object({
  offset: Joi.number()
    .integer()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .description(
      "Byte offset in the sandbox's output (X-Log-Offset of an earlier answer): only what came after it is sent",
    ),
});

const logsResponses = documentedResponses({ 200: Joi.string().allow('') }, 400, 401, 404);
const LOGS_SUCCESS: SuccessExtras = {
  contentType: 'text/plain',
  headers: {
    'X-Log-Start': 'Offset of the first byte sent: past `offset` when the bytes there are no longer kept.',
    'X-Log-Offset': 'Offset just past the last byte sent: pass it as `offset` to get only what comes next.',
    'X-Log-Complete': '`true` once the sandbox has ended and its log is closed: nothing more will come.',
  },
};

/** Bodies larger than this are refused with 413 before they are parsed. */
const MAX_CREATE_BODY_BYTES = 256 * 1024;

/**
 * Part of a sandbox's log from a byte offset on: `start` is the offset of the first byte of `text`
 * (past the asked one when those bytes are no longer kept), `end` the offset to ask from next, `open`
 * whether the log is still being written.
 */
export interface LogSlice {
  text: string;
  start: number;
  end: number;
  open: boolean;
}

/** Reads what a sandbox's app and its build printed (the deploy engine's log files). */
export interface AppLogReader {
  read(sandboxId: string): Promise<string>;
  /** From a byte offset on, for readers that follow the log (server/deploy/confinement/logs.ts). */
  slice(sandboxId: string, offset: number): Promise<LogSlice>;
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
            "The last output of a sandbox's install, build and app (text, at most 1 MiB by default), or " +
            'with `offset` what came after that byte offset',
          tags: ['api', 'sandboxes'],
          validate: { params: sandboxIdParam, query: logsQuery, failAction: validationFailAction },
          ...logsResponses,
          // An empty log is still a log (with its offsets): 200, not hapi's 204 for an empty body.
          response: { ...logsResponses.response, emptyStatusCode: 200 },
          plugins: { openapi: { ...logsResponses.plugins.openapi, ...LOGS_SUCCESS } },
        },
        async handler(request, h) {
          const sandbox = await sandboxes.get(accountOf(request), String(request.params.sandbox_id));
          const offset = (request.query as { offset?: number }).offset ?? 0;
          const slice: LogSlice = appLogs
            ? await appLogs.slice(sandbox.id, offset)
            : { text: '', start: 0, end: 0, open: false };
          // Polled by followers (CLI, web page): a cached answer would hide new lines.
          return h
            .response(slice.text)
            .type('text/plain; charset=utf-8')
            .header('Cache-Control', 'no-store')
            .header('X-Log-Start', String(slice.start))
            .header('X-Log-Offset', String(slice.end))
            .header('X-Log-Complete', String(!ACTIVE_STATUSES.has(sandbox.status) && !slice.open));
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
