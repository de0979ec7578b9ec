import Boom from '@hapi/boom';
import type { Plugin, Request, ResponseObject, ResponseToolkit, ServerRoute } from '@hapi/hapi';
import { apiError, badRequest } from '../../errors.ts';
import type { AppLogReader } from '../../sandboxes/routes.ts';
import type { SandboxService } from '../../sandboxes/service.ts';
import type { SandboxRecord } from '../../store/records.ts';
import type { TwinAdminReach } from '../../twins/kit/admin-client.ts';
import type { FaultRule } from '../../twins/runtime/faults.ts';
import type { TimelineService } from '../../timeline/index.ts';
import { render } from '../respond.ts';
import type { SignedIn, WebSessions } from '../session.ts';
import { redirectBrowsersToDashboard } from './browser-redirect.ts';
import { DashboardService, readListQuery } from './service.ts';
import { TwinInspector, TwinUnavailable } from './twins.ts';
import { inspectorPage, requestRows, twinPath } from './views/inspector.ts';
import { listPage } from './views/list.ts';
import { entryHtml, timelinePage } from './views/timeline.ts';
import {
  EXTEND_CHOICES,
  deleteConfirmPage,
  sandboxDetails,
  sandboxHead,
  sandboxPage,
  sandboxPath,
  sandboxStatus,
  variablesPage,
} from './views/sandbox.ts';

export interface DashboardOptions {
  web: WebSessions;
  sandboxes: SandboxService;
  /** The deploy engine's logs; absent, the log shows nothing. */
  appLogs?: AppLogReader;
  /** A sandbox's twins, wherever it runs; absent (no deploy engine), the inspector says none is reachable. */
  twinReach?: TwinAdminReach;
  /** The sandbox timeline (server/timeline/); absent, the timeline tab says so. */
  timeline?: TimelineService;
}

/** Timeline entries the page starts with, and the most one live poll fetches. */
const TIMELINE_PAGE = 200;
const TIMELINE_POLL = 100;

/** Short confirmations after a form post (`?done=`), fixed texts: nothing a link can make the page say. */
const DONE: Record<string, string> = {
  extended: 'Extended: the new expiry is shown above.',
  deleted: 'Deleted: its app and twins are stopped.',
  reset: 'The twin is back to its seed.',
  fault: 'Fault added: matching requests now get it.',
  cleared: 'Faults cleared: every request is served normally.',
  redelivered: 'Redelivered: the new delivery is at the top.',
};

const page = { auth: false as const, plugins: { web: true } };
/** Endpoints the pages' script calls: errors stay JSON with `detail` (the script shows them). */
const data = { auth: false as const };

/**
 * The dashboard (docs/web.md): the list of sandboxes, a page per sandbox with its live status and log,
 * a twin inspector per twin and the timeline. Pages are server-rendered and escaped; every form carries
 * the session's form token; everything reads through the services the API uses, scoped to the owner.
 */
export const dashboardRoutes: Plugin<DashboardOptions> = {
  name: 'twinbox-dashboard',
  register(server, options) {
    const { web } = options;
    const dashboard = new DashboardService(options.sandboxes, options.appLogs);
    const inspector = new TwinInspector(options.twinReach);
    redirectBrowsersToDashboard(server);

    const id = (request: Request) => String(request.params.id);
    const twinOf = (request: Request) => String(request.params.twin);
    const form = (request: Request) => (request.payload ?? {}) as Record<string, unknown>;
    const done = (request: Request) => {
      const key = (request.query as Record<string, unknown>).done;
      return typeof key === 'string' ? DONE[key] : undefined;
    };
    const signedInGet = (request: Request, h: ResponseToolkit) => web.require(request, h);
    /** A form post: another site's is refused; a signed-out visitor goes to sign in, then to `back`. */
    const signedInPost = (request: Request, h: ResponseToolkit, back: string) =>
      web.requireForm(request, h, back);
    /** The script's calls: a signed-out visitor gets a 401 it can show, not a sign-in page. */
    const signedInData = async (request: Request): Promise<SignedIn> => {
      const signedIn = await web.current(request);
      if (!signedIn)
        throw apiError(401, 'You are signed out. Reload the page to sign in again.', 'signed_out');
      return signedIn;
    };
    const isSignedIn = (who: SignedIn | ResponseObject): who is SignedIn => 'account' in who;
    /** A 4xx from a form's action is shown on the page it came from, with its reason. */
    const reasonOf = (error: unknown): { status: number; message: string } => {
      if (Boom.isBoom(error) && error.output.statusCode < 500) {
        return { status: error.output.statusCode, message: error.message };
      }
      throw error;
    };
    const textParam = (value: unknown): string | undefined =>
      typeof value === 'string' && value !== '' ? value.slice(0, 2000) : undefined;
    const intParam = (value: unknown, name: string, min = 0): number | undefined => {
      if (value === undefined || value === '') return undefined;
      const text = String(value);
      const n = /^\d{1,15}$/.test(text) ? Number(text) : NaN;
      if (!Number.isSafeInteger(n) || n < min)
        throw badRequest(`"${name}" must be a whole number of at least ${min}.`);
      return n;
    };

    const showSandbox = async (
      h: ResponseToolkit,
      signedIn: SignedIn,
      sandbox: SandboxRecord,
      extra: { notice?: string; error?: string } = {},
      code = 200,
    ) => render(h, sandboxPage({ signedIn, sandbox, log: await dashboard.logTail(sandbox), ...extra }), code);

    const showInspector = async (
      h: ResponseToolkit,
      signedIn: SignedIn,
      sandbox: SandboxRecord,
      twin: string,
      extra: { before?: number; notice?: string; error?: string } = {},
      code = 200,
    ) => {
      inspector.checkTwin(sandbox, twin);
      try {
        const data = await inspector.read(sandbox, twin, extra.before);
        return render(h, inspectorPage({ signedIn, sandbox, twin, data, ...extra }), code);
      } catch (error) {
        if (!(error instanceof TwinUnavailable)) throw error;
        return render(
          h,
          inspectorPage({ signedIn, sandbox, twin, unavailable: error.message, ...extra }),
          code,
        );
      }
    };

    /** Runs a twin action from a form, then shows the inspector with what happened. */
    const twinAction = async (
      request: Request,
      h: ResponseToolkit,
      action: (sandbox: SandboxRecord, twin: string) => Promise<unknown>,
      doneKey: string,
    ) => {
      const twin = twinOf(request);
      const signedIn = await signedInPost(request, h, twinPath(id(request), twin));
      if (!isSignedIn(signedIn)) return signedIn;
      const sandbox = await dashboard.get(signedIn.account, id(request));
      inspector.checkTwin(sandbox, twin);
      try {
        await action(sandbox, twin);
      } catch (error) {
        if (error instanceof TwinUnavailable) {
          return showInspector(h, signedIn, sandbox, twin, { error: error.message }, 409);
        }
        const { status, message } = reasonOf(error);
        return showInspector(h, signedIn, sandbox, twin, { error: message }, status);
      }
      return h.redirect(`${twinPath(sandbox.id, twin)}?done=${doneKey}`);
    };

    const routes: ServerRoute[] = [
      {
        method: 'GET',
        path: '/dashboard',
        options: page,
        async handler(request, h) {
          const signedIn = await signedInGet(request, h);
          if (!isSignedIn(signedIn)) return signedIn;
          const { filter, error } = readListQuery(request.query as Record<string, unknown>);
          if (error)
            return render(h, listPage({ signedIn, sandboxes: [], filter, nextCursor: null, error }), 400);
          const result = await dashboard.list(signedIn.account, filter);
          return render(
            h,
            listPage({ signedIn, sandboxes: result.sandboxes, filter, nextCursor: result.next_cursor }),
          );
        },
      },
      {
        method: 'GET',
        path: '/dashboard/sandboxes/{id}',
        options: page,
        async handler(request, h) {
          const signedIn = await signedInGet(request, h);
          if (!isSignedIn(signedIn)) return signedIn;
          const sandbox = await dashboard.get(signedIn.account, id(request));
          return showSandbox(h, signedIn, sandbox, { notice: done(request) });
        },
      },
      {
        method: 'GET',
        path: '/dashboard/sandboxes/{id}/live',
        options: data,
        async handler(request, h) {
          const signedIn = await signedInData(request);
          const query = request.query as Record<string, unknown>;
          const offset = intParam(query.offset, 'offset') ?? 0;
          const sandbox = await dashboard.get(signedIn.account, id(request));
          const changed = query.since !== sandbox.updated_at;
          const log = await dashboard.logAfter(sandbox, offset);
          return h
            .response({
              status: sandbox.status,
              updated_at: sandbox.updated_at,
              ...(changed
                ? {
                    head: sandboxHead(sandbox).text,
                    status_html: sandboxStatus(sandbox, signedIn).text,
                    details: sandboxDetails(sandbox, signedIn).text,
                  }
                : {}),
              log: { text: log.text, start: log.start, end: log.end, complete: log.complete },
            })
            .header('Cache-Control', 'no-store');
        },
      },
      {
        method: 'POST',
        path: '/dashboard/sandboxes/{id}/variables',
        options: page,
        async handler(request, h) {
          const signedIn = await signedInPost(request, h, sandboxPath(id(request)));
          if (!isSignedIn(signedIn)) return signedIn;
          const sandbox = await dashboard.get(signedIn.account, id(request));
          if (/\bapplication\/json\b/.test(String(request.headers.accept ?? ''))) {
            return h.response({ env_vars: sandbox.env_vars }).header('Cache-Control', 'no-store');
          }
          return render(h, variablesPage(signedIn, sandbox));
        },
      },
      {
        method: 'POST',
        path: '/dashboard/sandboxes/{id}/extend',
        options: page,
        async handler(request, h) {
          const signedIn = await signedInPost(request, h, sandboxPath(id(request)));
          if (!isSignedIn(signedIn)) return signedIn;
          const minutes = intParam(form(request).minutes, 'minutes', 1) ?? 30;
          if (!EXTEND_CHOICES.includes(minutes)) {
            throw badRequest(`Extend by one of ${EXTEND_CHOICES.join(', ')} minutes.`);
          }
          try {
            await dashboard.extend(signedIn.account, id(request), minutes);
          } catch (error) {
            const { status, message } = reasonOf(error);
            if (status === 404) throw error;
            const sandbox = await dashboard.get(signedIn.account, id(request));
            return showSandbox(h, signedIn, sandbox, { error: message }, status);
          }
          return h.redirect(`${sandboxPath(id(request))}?done=extended`);
        },
      },
      {
        method: 'GET',
        path: '/dashboard/sandboxes/{id}/delete',
        options: page,
        async handler(request, h) {
          const signedIn = await signedInGet(request, h);
          if (!isSignedIn(signedIn)) return signedIn;
          return render(h, deleteConfirmPage(signedIn, await dashboard.get(signedIn.account, id(request))));
        },
      },
      {
        method: 'POST',
        path: '/dashboard/sandboxes/{id}/delete',
        options: page,
        async handler(request, h) {
          const signedIn = await signedInPost(request, h, sandboxPath(id(request)));
          if (!isSignedIn(signedIn)) return signedIn;
          await dashboard.delete(signedIn.account, id(request));
          return h.redirect(`${sandboxPath(id(request))}?done=deleted`);
        },
      },
      {
        method: 'GET',
        path: '/dashboard/sandboxes/{id}/twins/{twin}',
        options: page,
        async handler(request, h) {
          const signedIn = await signedInGet(request, h);
          if (!isSignedIn(signedIn)) return signedIn;
          const before = intParam((request.query as Record<string, unknown>).before, 'before', 1);
          const sandbox = await dashboard.get(signedIn.account, id(request));
          return showInspector(h, signedIn, sandbox, twinOf(request), { before, notice: done(request) });
        },
      },
      {
        method: 'GET',
        path: '/dashboard/sandboxes/{id}/twins/{twin}/requests',
        options: data,
        async handler(request, h) {
          const signedIn = await signedInData(request);
          const after = intParam((request.query as Record<string, unknown>).after, 'after') ?? 0;
          const sandbox = await dashboard.get(signedIn.account, id(request));
          try {
            const result = await inspector.requestsAfter(sandbox, twinOf(request), after);
            return h
              .response({
                rows: requestRows(result.entries).map((row) => row.text),
                last_id: result.lastId,
                has_more: result.hasMore,
              })
              .header('Cache-Control', 'no-store');
          } catch (error) {
            if (error instanceof TwinUnavailable) throw apiError(409, error.message, 'twin_not_running');
            throw error;
          }
        },
      },
      {
        method: 'POST',
        path: '/dashboard/sandboxes/{id}/twins/{twin}/reset',
        options: page,
        handler: (request, h) => twinAction(request, h, (s, twin) => inspector.reset(s, twin), 'reset'),
      },
      {
        method: 'POST',
        path: '/dashboard/sandboxes/{id}/twins/{twin}/faults',
        options: page,
        handler: (request, h) =>
          twinAction(request, h, (s, twin) => inspector.addFault(s, twin, faultRule(form(request))), 'fault'),
      },
      {
        method: 'POST',
        path: '/dashboard/sandboxes/{id}/twins/{twin}/faults/clear',
        options: page,
        handler: (request, h) =>
          twinAction(request, h, (s, twin) => inspector.clearFaults(s, twin), 'cleared'),
      },
      {
        method: 'POST',
        path: '/dashboard/sandboxes/{id}/twins/{twin}/deliveries/{delivery}/redeliver',
        options: page,
        handler: (request, h) =>
          twinAction(
            request,
            h,
            (s, twin) => inspector.redeliver(s, twin, intParam(request.params.delivery, 'delivery', 1) ?? 0),
            'redelivered',
          ),
      },
      {
        method: 'GET',
        path: '/dashboard/sandboxes/{id}/timeline',
        options: page,
        async handler(request, h) {
          const signedIn = await signedInGet(request, h);
          if (!isSignedIn(signedIn)) return signedIn;
          const sandbox = await dashboard.get(signedIn.account, id(request));
          const cursor = textParam((request.query as Record<string, unknown>).cursor);
          const result = options.timeline
            ? await options.timeline.page(signedIn.account, sandbox.id, { limit: TIMELINE_PAGE, cursor })
            : { entries: [], next_cursor: '', notes: ['The timeline is not kept by this Twinbox.'] };
          return render(
            h,
            timelinePage({
              signedIn,
              sandbox,
              entries: result.entries,
              nextCursor: result.next_cursor,
              notes: result.notes,
              pageSize: TIMELINE_PAGE,
              fromCursor: cursor !== undefined,
            }),
          );
        },
      },
      {
        method: 'GET',
        path: '/dashboard/sandboxes/{id}/timeline/entries',
        options: data,
        async handler(request, h) {
          const signedIn = await signedInData(request);
          if (!options.timeline)
            throw apiError(404, 'The timeline is not kept by this Twinbox.', 'not_found');
          const cursor = textParam((request.query as Record<string, unknown>).cursor);
          const result = await options.timeline.page(signedIn.account, id(request), {
            limit: TIMELINE_POLL,
            cursor,
          });
          return h
            .response({
              entries: result.entries.map((entry) => ({
                id: entry.id,
                ...(entry.caused_by ? { caused_by: entry.caused_by } : {}),
                html: entryHtml(entry),
              })),
              next_cursor: result.next_cursor,
              notes: result.notes,
            })
            .header('Cache-Control', 'no-store');
        },
      },
    ];
    server.route(routes);

    /** The fault form's fields as the admin API's rule; the twin validates the rule itself. */
    function faultRule(fields: Record<string, unknown>): Omit<FaultRule, 'id'> {
      const text = (name: string) =>
        typeof fields[name] === 'string' ? (fields[name] as string).trim() : '';
      const rule: Omit<FaultRule, 'id'> = {};
      const kind = text('kind') || 'status';
      if (kind === 'status') rule.status = intParam(text('status'), 'status', 400) ?? 503;
      else if (kind === 'rate_limit') rule.rate_limit = true;
      else if (kind !== 'latency') throw badRequest('"kind" must be status, rate_limit or latency.');
      const latency = intParam(text('latency_ms'), 'latency_ms');
      if (latency !== undefined) rule.latency_ms = latency;
      if (kind === 'latency' && latency === undefined)
        throw badRequest('A delay-only fault needs a delay in ms.');
      const count = intParam(text('count'), 'count', 1);
      if (count !== undefined) rule.count = count;
      const method = text('method').toUpperCase();
      if (method) rule.method = method;
      const prefix = text('path_prefix');
      if (prefix) rule.path_prefix = prefix;
      return rule;
    }
  },
};
