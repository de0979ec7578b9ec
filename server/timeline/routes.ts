import type { Plugin } from '@hapi/hapi';
import Joi from 'joi';
import { accountOf } from '../auth/bearer.ts';
import { validationFailAction } from '../errors.ts';
import { documentedResponses } from '../http/responses.ts';
import { sandboxIdParam } from '../sandboxes/validation.ts';
import { twinSetIdParam } from '../twin-sets/validation.ts';
import type { SandboxKind } from '../store/records.ts';
import { TIMELINE_KINDS } from './entries.ts';
import { DEFAULT_LIMIT, MAX_LIMIT, type TimelineService } from './service.ts';

export const timelineEntrySchema = Joi.object({
  id: Joi.string().required().description('Stable within the sandbox; what `caused_by` names.'),
  at: Joi.string().isoDate().required().description('When it started (a state change: when it was made).'),
  kind: Joi.string()
    .valid(...TIMELINE_KINDS)
    .required(),
  source: Joi.string()
    .pattern(/^(app|twinbox|twin:[a-z0-9_-]+)$/)
    .required()
    .description('`app`, `twin:<name>` or `twinbox`.'),
  summary: Joi.string().allow('').required().description('One line for a person.'),
  status: Joi.number().integer().description('HTTP status of a request, twin call or webhook delivery.'),
  duration_ms: Joi.number().min(0),
  method: Joi.string(),
  path: Joi.string().description('Without the query string.'),
  request_id: Joi.string().description('The router request id of the app request this entry belongs to.'),
  caused_by: Joi.string().description('The id of the entry that caused this one.'),
  link: Joi.string()
    .valid('header', 'inferred', 'direct')
    .description(
      'How caused_by is known: `header` (the call carried the request id or trace), `inferred` (the only request in flight), `direct` (a state change of its call).',
    ),
  detail: Joi.object().unknown(true),
}).label('TimelineEntry');

export const timelinePageSchema = Joi.object({
  entries: Joi.array().items(timelineEntrySchema).required(),
  next_cursor: Joi.string()
    .required()
    .description('Always given, also at the end: ask with it again to get what happened since.'),
  notes: Joi.array()
    .items(Joi.string())
    .required()
    .description('Parts that could not be read this time (a twin not running yet, say).'),
}).label('TimelinePage');

const timelineQuery = Joi.object({
  limit: Joi.number().integer().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT),
  cursor: Joi.string().max(2000),
});

/** The two owners of a timeline: a sandbox, and a twin set (twins alone), each under its own path. */
const TIMELINE_OWNERS: {
  kind: SandboxKind;
  path: string;
  param: string;
  params: Joi.ObjectSchema;
  tag: string;
  description: string;
}[] = [
  {
    kind: 'twins',
    path: '/twin-sets/{twin_set_id}/timeline',
    param: 'twin_set_id',
    params: twinSetIdParam,
    tag: 'twin-sets',
    description:
      "A twin set's timeline, oldest first: its twins' calls, state changes and webhooks, and Twinbox's own events",
  },
  {
    kind: 'app',
    path: '/sandboxes/{sandbox_id}/timeline',
    param: 'sandbox_id',
    params: sandboxIdParam,
    tag: 'sandboxes',
    description:
      "A sandbox's timeline, oldest first: app requests, twin calls, state changes, webhooks and Twinbox's own events, cause and effect linked",
  },
];

export const timelineRoutes: Plugin<{ timeline: TimelineService }> = {
  name: 'twinbox-timeline',
  register(server, { timeline }) {
    for (const owner of TIMELINE_OWNERS)
      server.route({
        method: 'GET',
        path: owner.path,
        options: {
          description: owner.description,
          tags: ['api', owner.tag],
          validate: { params: owner.params, query: timelineQuery, failAction: validationFailAction },
          ...documentedResponses({ 200: timelinePageSchema }, 400, 401, 404),
        },
        async handler(request) {
          const { limit, cursor } = request.query as { limit: number; cursor?: string };
          const id = String(request.params[owner.param]);
          return timeline.page(accountOf(request), id, { limit, cursor }, owner.kind);
        },
      });
  },
};
