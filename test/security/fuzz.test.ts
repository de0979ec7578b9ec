/**
 * The fuzz test of issue 11: malformed input to every Twinbox route (every path of /openapi.json and
 * every route of the hapi table: web pages, GitHub sign-in, the App's webhooks, the operator API) and to
 * every endpoint of every twin (the vendor routes each serves, emulate's included, and the admin API).
 * Nothing may answer 500 or above; every 4xx from Twinbox (and from a twin's admin API) says what was
 * wrong in `detail`, or, on a web page, in its error box. Violations are collected and reported in one
 * assertion, with the route, the input and the answer.
 *
 * Inputs come from a seeded PRNG: the seed is printed, and FUZZ_SEED=<n> replays a run (or tries
 * another). FUZZ_DEBUG=1 prints the errors Twinbox logged meanwhile (the App failing on signed
 * deliveries of the wrong shape: logged, never answered as a 5xx, since the App answers 202 first).
 *
 * Bodyless 400/431 answers of Node's HTTP parser on a real connection are counted, not judged (no request
 * reached a route), and so are connections closed without an answer (a chunked upload over the cap).
 */
import t from 'tap';
import { createHmac, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { SignJWT } from 'jose';
import type { RequestRoute } from '@hapi/hapi';
import { githubWithApp, twinboxWithApp, WEBHOOK_SECRET } from '../app/rig.ts';
import { createUser, createSandbox } from '../helpers/twinbox.ts';
import { tempHost } from '../twins/helpers.ts';
import { githubTwin } from '../../server/twins/vendors/github/twin.ts';
import { slackTwin } from '../../server/twins/vendors/slack/twin.ts';
import type { TwinFactory } from '../../server/twins/contract.ts';
import type { TwinEntry } from '../../server/twins/runtime/host.ts';
import { ROUTES as STRIPE_ROUTES } from '../../server/twins/vendors/stripe/routes.ts';
import {
  badBodies,
  badHeaders,
  badQueries,
  badSegments,
  badValues,
  closeKeepAlive,
  fuzzSeed,
  hasDetail,
  pageStatesProblem,
  rawRequest,
  Rng,
  sendHttp,
  Violations,
  type Body,
  type RawResponse,
} from './fuzz-kit.ts';

const SEED = fuzzSeed();
const OPERATOR_TOKEN = 'fuzz-operator-token-0123456789abcdef-xyz';
const TWIN_ADMIN = 'fuzz-twin-admin-token';
/** Twinbox's own session secret, so the test can mint tokens that are valid but for the claims. */
const JWT_SECRET = 'fuzz-jwt-secret-0123456789abcdef-0123456789';
const started = Date.now();

t.comment(`fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED})`);
t.teardown(closeKeepAlive);

const sign = (payload: string | Buffer, secret = WEBHOOK_SECRET) =>
  `sha256=${createHmac('sha256', secret).update(payload).digest('hex')}`;

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Fills a hapi path template (`{name}`, `{name?}`, `{name*}`) with `params`. */
function fillHapi(template: string, params: Record<string, string>): string {
  return template.replace(/\{(\w+)[?*]?\d*\}/g, (_m, name: string) => params[name] ?? 'x');
}

function paramNames(template: string, pattern: RegExp): string[] {
  return [...template.matchAll(pattern)].map((m) => m[1]!);
}

/** A JSON body with one field replaced; the value keeps its type through JSON. */
function withField(sample: Record<string, unknown>, field: string, value: unknown): string {
  return JSON.stringify({ ...sample, [field]: value });
}

t.test('Twinbox: malformed input to every route', async (t) => {
  const rng = new Rng(SEED);
  const { gh, privateKey } = await githubWithApp(t);
  const rig = await twinboxWithApp(
    t,
    gh,
    privateKey,
    {
      GITHUB_CLIENT_ID: 'Iv1.fuzz',
      GITHUB_CLIENT_SECRET: 'fuzz-client-secret',
      TWINBOX_ADMIN_TOKEN: OPERATOR_TOKEN,
      TWINBOX_JWT_SECRET: JWT_SECRET,
      TWINBOX_AUTH_IP_LIMIT: '100000',
    },
    { deploy: false },
  );
  const tb = rig.tb;
  const port = Number(tb.server.info.port);
  const origin = new URL(rig.url).origin;

  // Credentials of every kind, and records the routes' parameters can name.
  const user = await createUser(tb, 'pro', 'fuzz-user@example.com');
  const bystander = await createUser(tb, 'free', 'fuzz-bystander@example.com');
  const session = await tb.sessions.issue(user.id);
  const throwaway = await tb.apiKeys.issue(user.id, 'throwaway');
  const revoked = await tb.apiKeys.issue(user.id, 'revoked');
  await tb.apiKeys.revoke(user.id, revoked.record.id);
  const sandbox = await createSandbox(tb, user.key, { repo: 'octocat/shop', branch: 'main' });
  t.equal(sandbox.status, 201, 'a sandbox to name');
  const scenario = await tb.server.inject({
    method: 'POST',
    url: '/scenarios',
    headers: { authorization: `Bearer ${user.key}` },
    payload: { name: 'fuzz', twins: ['github'], seed: { github: {} } },
  });
  t.equal(scenario.statusCode, 201, 'a saved scenario to name');
  const scenarioId = (JSON.parse(scenario.payload) as { id: string }).id;
  const unknownAccountSession = await tb.sessions.issue(randomUUID());
  // Tokens signed with this Twinbox's own secret whose claims are wrong, and others.
  const jwt = (
    claims: { sub?: string; iss?: string; aud?: string; exp?: number | string },
    { alg = 'HS256', secret = JWT_SECRET } = {},
  ) => {
    const token = new SignJWT({}).setProtectedHeader({ alg });
    if (claims.sub !== undefined) token.setSubject(claims.sub);
    token.setIssuer(claims.iss ?? 'twinbox').setAudience(claims.aud ?? 'twinbox-api');
    if (claims.exp !== undefined) token.setExpirationTime(claims.exp);
    return token.sign(new TextEncoder().encode(secret));
  };
  const foreignJwt = await jwt(
    { sub: user.id, exp: '1h' },
    { secret: 'not-the-secret-of-this-twinbox-000000' },
  );
  const expiredJwt = await jwt({ sub: user.id, exp: 1 });
  const crafted: Array<[string, string]> = [
    ['JWT signed elsewhere', foreignJwt],
    ['expired JWT', expiredJwt],
    ['JWT without exp', await jwt({ sub: user.id })],
    ['JWT without sub', await jwt({ exp: '1h' })],
    ['JWT for another audience', await jwt({ sub: user.id, aud: 'elsewhere', exp: '1h' })],
    ['JWT from another issuer', await jwt({ sub: user.id, iss: 'elsewhere', exp: '1h' })],
    ['JWT HS512', await jwt({ sub: user.id, exp: '1h' }, { alg: 'HS512' })],
    ['JWT sub __proto__', await jwt({ sub: '__proto__', exp: '1h' })],
    ['JWT sub constructor', await jwt({ sub: 'constructor', exp: '1h' })],
    ['JWT sub ""', await jwt({ sub: '', exp: '1h' })],
    ['JWT sub 10 KiB', await jwt({ sub: 'x'.repeat(10_000), exp: '1h' })],
  ];
  const noneJwt = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(
    JSON.stringify({ sub: user.id, iss: 'twinbox', aud: 'twinbox-api', exp: 9999999999 }),
  ).toString('base64url')}.`;

  const badAuth: Array<[string, string | undefined]> = [
    ['no Authorization', undefined],
    ['empty Authorization', ''],
    ['"Bearer"', 'Bearer'],
    ['"Bearer "', 'Bearer '],
    ['Basic', 'Basic dXNlcjpwYXNz'],
    ['10 KiB token', `Bearer ${'t'.repeat(10_000)}`],
    ['key with a bad checksum', `Bearer twinbox_sk_${'A'.repeat(39)}`],
    ['revoked key', `Bearer ${revoked.key}`],
    ...crafted.map(([label, token]): [string, string] => [label, `Bearer ${token}`]),
    ['JWT alg none', `Bearer ${noneJwt}`],
    ['JWT of no account', `Bearer ${unknownAccountSession}`],
    ['three words', 'Bearer a b'],
    ['Latin-1 bytes', 'Bearer \u00ff\u00fe'],
    ['operator token', `Bearer ${OPERATOR_TOKEN}`],
    ['API key', `Bearer ${user.key}`],
    ['session', `Bearer ${session}`],
  ];
  const badCookies = [
    'twinbox_session=garbage',
    `twinbox_session=${unknownAccountSession}`,
    `twinbox_session=${foreignJwt}`,
    ...crafted.slice(1).map(([, token]) => `twinbox_session=${token}`),
    'twinbox_session=',
    ';;;==;',
    'twinbox_session="unterminated',
    `twinbox_session=${session}; twinbox_session=other`,
    'twinbox_oauth=x; twinbox_oauth=y',
    `twinbox_session=${'c'.repeat(8000)}`,
    'twinbox_session=\u007f\u0001',
  ];
  const badOrigins = ['http://evil.example', 'null', '', 'not a url', `${origin}/`, 'http://127.0.0.1:1'];
  const headerSets = badHeaders();

  // Every route: the OpenAPI document's, and hapi's whole table (web pages, webhooks, ...).
  const openapi = JSON.parse((await tb.server.inject('/openapi.json')).payload) as {
    paths: Record<string, Record<string, { requestBody?: any; parameters?: any[] }>>;
  };
  const table = tb.server.table();
  const key = (method: string, path: string) => `${method.toUpperCase()} ${path}`;
  const tableKeys = new Set(table.map((r) => key(r.method, r.path)));
  for (const [path, ops] of Object.entries(openapi.paths)) {
    for (const method of Object.keys(ops)) {
      t.ok(tableKeys.has(key(method, path)), `${key(method, path)} of /openapi.json is a route`);
    }
  }
  for (const expected of [
    'GET /login',
    'GET /integrations',
    'GET /settings/api-keys',
    'GET /auth/github/callback',
    'POST /github/webhooks',
    'POST /admin/accounts',
  ]) {
    t.ok(tableKeys.has(expected), `${expected} is in the table`);
  }

  const violations = new Violations();
  const judge = (where: string, input: string, res: RawResponse, raw = false) => {
    violations.count(res.status);
    if (res.status >= 500) {
      violations.add({ where, input, status: res.status, body: res.body });
    } else if (res.status >= 400 && where.startsWith('HEAD ')) {
      // A HEAD answer never has a body (RFC 9110 §9.3.2): its status is all there is to judge.
    } else if (res.status >= 400) {
      const type = res.headers['content-type'] ?? '';
      if (/json/.test(type)) {
        if (!hasDetail(res.body)) violations.add({ where, input, status: res.status, body: res.body });
      } else if (/html/.test(type)) {
        if (!pageStatesProblem(res.body))
          violations.add({ where, input, status: res.status, body: res.body });
      } else if (raw && res.body === '' && !type) {
        // The HTTP parser's answer to bytes that are not HTTP: no request ever reached Twinbox.
        violations.parserAnswers += 1;
      } else {
        violations.add({ where, input, status: res.status, body: `(${type || 'no type'}) ${res.body}` });
      }
    } else if (res.status <= 0) {
      violations.closed += 1;
    }
  };

  let ipCounter = 0;
  const nextIp = () => {
    ipCounter += 1;
    return `10.9.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
  };
  const inject = async (
    where: string,
    input: string,
    method: string,
    url: string,
    headers: Record<string, string | undefined>,
    payload?: string | Buffer,
  ) => {
    const clean: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) if (v !== undefined) clean[k] = v;
    let res: RawResponse;
    try {
      const out = await tb.server.inject({ method, url, headers: clean, payload, remoteAddress: nextIp() });
      const h: Record<string, string> = {};
      for (const [k, v] of Object.entries(out.headers)) if (v !== undefined) h[k] = String(v);
      res = { status: out.statusCode, headers: h, body: decoded(out.rawPayload, h['content-encoding']) };
    } catch (error) {
      res = { status: 599, headers: {}, body: `inject threw: ${(error as Error).message}` };
    }
    judge(where, input, res);
  };

  interface RouteInfo {
    method: string;
    path: string;
    params: string[];
    /** The credential the route takes: API key/session (bearer), session, operator, browser cookie, none. */
    auth: 'bearer' | 'session' | 'admin' | 'cookie' | 'none';
    web: boolean;
    sample?: Record<string, unknown>;
    fields: string[];
  }

  const baselineParams = (path: string): Record<string, string> => ({
    sandbox_id: sandbox.body.sandbox_id as string,
    scenario_id: scenarioId,
    id: path.startsWith('/admin/') ? bystander.id : throwaway.record.id,
  });
  const samples: Record<string, Record<string, unknown>> = {
    'POST /sandboxes': {
      repo: 'octocat/shop',
      branch: 'main',
      twins: ['github'],
      ttl_minutes: 30,
      env: { A: '1' },
    },
    'POST /scenarios': { name: 'n', twins: ['github'], seed: { github: {} } },
    'POST /api-keys': { name: 'k' },
    'POST /admin/accounts': { email: 'new@example.com', plan: 'pro' },
    'PATCH /admin/accounts/{id}': { plan: 'pro' },
    'POST /admin/accounts/{id}/api-keys': { name: 'x' },
    'POST /auth/email/signup': { email: 'fuzz-signup@example.com' },
    'POST /auth/email-verification/request': { email: 'fuzz-user@example.com' },
    'POST /auth/email-verification/verify': { email: 'fuzz-user@example.com', code: '123456' },
    'POST /auth/email/login': { email: 'fuzz-user@example.com' },
    'POST /auth/email/login/verify': { email: 'fuzz-user@example.com', code: '123456' },
    'POST /login/email': { email: 'fuzz-user@example.com' },
    'POST /login/email/verify': { email: 'fuzz-user@example.com', code: '123456' },
    'POST /settings/api-keys': { name: 'k' },
  };

  const routes: RouteInfo[] = table
    .map((route: RequestRoute) => {
      const method = route.method.toUpperCase();
      const lookup = (tb.server.auth as unknown as { lookup(r: RequestRoute): unknown }).lookup(route) as
        { strategies?: string[] } | null | false;
      const strategies = lookup ? (lookup.strategies ?? []) : [];
      const web =
        Boolean((route.settings.plugins as Record<string, unknown> | undefined)?.web) ||
        (route.settings.tags ?? []).includes('browser');
      const auth: RouteInfo['auth'] = strategies.includes('twinbox-admin')
        ? 'admin'
        : strategies.includes('twinbox-session')
          ? 'session'
          : strategies.length
            ? 'bearer'
            : web
              ? 'cookie'
              : 'none';
      const op = openapi.paths[route.path]?.[route.method];
      const schema = op?.requestBody?.content?.['application/json']?.schema;
      const sample = samples[key(method, route.path)];
      const fields = [...new Set([...Object.keys(schema?.properties ?? {}), ...Object.keys(sample ?? {})])];
      return {
        method,
        path: route.path,
        params: paramNames(route.path, /\{(\w+)/g),
        auth,
        web,
        sample,
        fields,
      };
    })
    .sort((a, b) => key(a.method, a.path).localeCompare(key(b.method, b.path)));

  const goodAuth = (route: RouteInfo): Record<string, string | undefined> => {
    switch (route.auth) {
      case 'admin':
        return { authorization: `Bearer ${OPERATOR_TOKEN}` };
      case 'session':
        return { authorization: `Bearer ${session}` };
      case 'bearer':
        // A key that revokes itself would leave every later request of the run a 401: it gets its own key.
        if (route.method === 'DELETE' && route.path === '/api-keys/current')
          return { authorization: `Bearer ${rng.next() < 0.5 ? throwaway.key : session}` };
        return { authorization: `Bearer ${rng.next() < 0.5 ? user.key : session}` };
      case 'cookie':
        return { cookie: `twinbox_session=${session}` };
      default:
        return {};
    }
  };
  const goodBody = (route: RouteInfo): Body | undefined => {
    if (!BODY_METHODS.has(route.method) || route.path === '/github/webhooks') return undefined;
    if (route.web) {
      return {
        label: 'form',
        contentType: 'application/x-www-form-urlencoded',
        payload: new URLSearchParams((route.sample ?? {}) as Record<string, string>).toString(),
      };
    }
    return route.sample
      ? { label: 'sample', contentType: 'application/json', payload: JSON.stringify(route.sample) }
      : undefined;
  };
  const bodyHeaders = (body: Body | undefined) => ({
    ...(body?.contentType ? { 'content-type': body.contentType } : {}),
    ...(body?.headers ?? {}),
  });

  let part1 = 0;
  const segments = badSegments(rng);
  const queries = badQueries(rng);
  const bodies = badBodies(rng);
  const values = badValues(rng);

  for (const route of routes) {
    const where = key(route.method, route.path);
    const params = baselineParams(route.path);
    const url = (p = params, query = '') => fillHapi(route.path, p) + (query ? `?${query}` : '');
    const webOrigin = route.web && route.method === 'POST' ? { origin } : {};
    const base = () => ({ ...goodAuth(route), ...webOrigin });
    const good = goodBody(route);
    const send = (input: string, headers: Record<string, string | undefined>, u: string, body?: Body) => {
      part1 += 1;
      return inject(where, input, route.method, u, { ...headers, ...bodyHeaders(body) }, body?.payload);
    };

    // Credentials: wrong, missing, of the wrong kind; cookies for the browser routes.
    for (const [label, value] of badAuth) {
      await send(`Authorization: ${label}`, { ...base(), authorization: value }, url(), good);
    }
    if (route.web || route.auth === 'none') {
      for (const cookie of badCookies) {
        await send(`Cookie: ${cookie.slice(0, 60)}`, { ...base(), cookie }, url(), good);
      }
    }
    if (route.web && route.method === 'POST') {
      for (const o of badOrigins) await send(`Origin: ${o}`, { ...base(), origin: o }, url(), good);
    }
    for (const headers of headerSets) {
      await send(`header ${JSON.stringify(headers).slice(0, 60)}`, { ...base(), ...headers }, url(), good);
    }
    // Path parameters.
    for (const name of route.params) {
      for (const segment of segments) {
        await send(`{${name}} = ${segment.slice(0, 60)}`, base(), url({ ...params, [name]: segment }), good);
      }
    }
    // Query strings: all of them on reads, a sample elsewhere.
    for (const query of route.method === 'GET' ? queries : rng.sample(queries, 4)) {
      await send(`?${query.slice(0, 60)}`, base(), url(params, query), good);
    }
    // Bodies.
    if (BODY_METHODS.has(route.method) && route.path !== '/github/webhooks') {
      for (const body of bodies) await send(`body ${body.label}`, base(), url(), body);
      const sample = route.sample ?? {};
      for (const field of [...route.fields, 'unknown_field']) {
        for (const { label, value } of rng.sample(values, route.web ? 3 : 5)) {
          const payload = route.web
            ? formWith(sample, field, value)
            : { contentType: 'application/json', payload: withField(sample, field, value) };
          await send(`body .${field} = ${label}`, base(), url(), { label, ...payload });
        }
      }
      const json = JSON.stringify(sample);
      for (const [label, text] of [
        ['sample + __proto__', json.replace(/^\{/, '{"__proto__":{"x":1},')],
        ['sample + constructor.prototype', json.replace(/^\{/, '{"constructor":{"prototype":{"x":1}},')],
      ] as const) {
        await send(`body ${label}`, base(), url(), {
          label,
          contentType: 'application/json',
          payload: text.replace(',}', '}'),
        });
      }
    }
    // Random combinations of the above.
    for (let i = 0; i < 6; i++) {
      const [authLabel, authValue] =
        rng.next() < 0.5 ? ['valid', goodAuth(route).authorization] : rng.pick(badAuth);
      const p = { ...params };
      const parts = [`auth ${authLabel}`];
      for (const name of route.params) {
        if (rng.next() < 0.5) {
          p[name] = rng.pick(segments);
          parts.push(`{${name}}=${p[name]!.slice(0, 30)}`);
        }
      }
      const query = rng.next() < 0.5 ? rng.pick(queries) : '';
      if (query) parts.push(`?${query.slice(0, 30)}`);
      const body = BODY_METHODS.has(route.method) ? (rng.next() < 0.7 ? rng.pick(bodies) : good) : undefined;
      if (body) parts.push(`body ${body.label}`);
      const cookie = route.web && rng.next() < 0.5 ? rng.pick(badCookies) : undefined;
      if (cookie) parts.push(`cookie ${cookie.slice(0, 30)}`);
      await send(
        parts.join(', '),
        { ...base(), authorization: authValue, ...(cookie ? { cookie } : {}) },
        url(p, query),
        body,
      );
    }
  }

  // The App's webhooks: unsigned and signed garbage, bad headers, event payloads of the wrong shape.
  const hook = async (
    input: string,
    payload: string | Buffer,
    headers: Record<string, string | undefined>,
  ) => {
    part1 += 1;
    await inject('POST /github/webhooks', input, 'POST', '/github/webhooks', headers, payload);
  };
  const hookHeaders = (payload: string | Buffer, event = 'pull_request') => ({
    'content-type': 'application/json',
    'x-github-event': event,
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': sign(payload),
  });
  for (const body of bodies) {
    await hook(`unsigned ${body.label}`, body.payload, {
      ...hookHeaders(body.payload),
      'x-hub-signature-256': undefined,
      ...bodyHeaders(body),
    });
    await hook(`signed ${body.label}`, body.payload, { ...hookHeaders(body.payload), ...bodyHeaders(body) });
  }
  for (const signature of [
    '',
    'sha256=',
    'sha256=zz',
    `sha256=${'0'.repeat(64)}`,
    `sha1=${'0'.repeat(40)}`,
    sign('{}', 'wrong-secret-wrong-secret'),
    `sha256=${'a'.repeat(10_000)}`,
    'sha256=\u00ff',
  ]) {
    await hook(`X-Hub-Signature-256: ${signature.slice(0, 40)}`, '{}', {
      ...hookHeaders('{}'),
      'x-hub-signature-256': signature,
    });
  }
  for (const delivery of ['', 'x'.repeat(200), '../..', 'ünï', 'a b', '%00']) {
    await hook(`X-GitHub-Delivery: ${delivery.slice(0, 40)}`, '{}', {
      ...hookHeaders('{}'),
      'x-github-delivery': delivery,
    });
  }
  for (const event of ['', 'x'.repeat(5000), '__proto__', 'constructor', 'ünï']) {
    await hook(`X-GitHub-Event: ${event.slice(0, 40)}`, '{}', {
      ...hookHeaders('{}'),
      'x-github-event': event,
    });
  }
  const eventShapes: Array<[string, unknown]> = [
    ['pull_request', { action: 'opened' }],
    ['pull_request', { action: 'opened', pull_request: null, repository: 1, installation: 'x' }],
    [
      'pull_request',
      { action: 'closed', pull_request: { number: 'x', head: [] }, repository: { full_name: 5 } },
    ],
    [
      'pull_request',
      { action: 'synchronize', number: -1, pull_request: {}, repository: {}, installation: { id: 77 } },
    ],
    ['issue_comment', { action: 'created', comment: 1, issue: null }],
    [
      'issue_comment',
      { action: 'created', comment: { body: '/twinbox redeploy', user: null }, issue: { pull_request: {} } },
    ],
    ['installation', { action: 'created' }],
    ['installation', { action: 'deleted', installation: { id: '__proto__' }, repositories: 'x' }],
    ['installation_repositories', { action: 'added', repositories_added: [null] }],
    ['ping', {}],
    ['push', []],
    ['pull_request', JSON.parse('{"__proto__":{"polluted":true},"action":"opened"}')],
  ];
  for (const [event, shape] of eventShapes) {
    const payload = JSON.stringify(shape);
    await hook(`${event} ${payload.slice(0, 80)}`, payload, hookHeaders(payload, event));
  }
  // A repeated delivery.
  const again = hookHeaders('{}', 'ping');
  await hook('delivery once', '{}', again);
  await hook('the same delivery again', '{}', again);

  // Paths and methods that are no route at all.
  for (const [method, path] of [
    ['GET', '/nope'],
    ['PUT', '/sandboxes'],
    ['PATCH', '/login'],
    ['GET', '/%zz'],
    ['GET', '/..%2f..%2fetc%2fpasswd'],
    ['GET', `/${'x'.repeat(10_000)}`],
    ['OPTIONS', '/sandboxes'],
    ['HEAD', '/sandboxes'],
    ['TRACE', '/'],
  ] as const) {
    part1 += 1;
    await inject(`${method} ${path.slice(0, 60)}`, 'no such route', method, path, {
      authorization: `Bearer ${user.key}`,
    });
  }

  // A slice over real HTTP: what inject cannot send (raw request lines, framing, chunked uploads).
  let http = 0;
  const raw = async (input: string, bytes: string | Buffer) => {
    http += 1;
    let res: RawResponse;
    try {
      res = await rawRequest(port, bytes);
    } catch (error) {
      res = { status: 598, headers: {}, body: (error as Error).message };
    }
    judge('HTTP', input, res, true);
  };
  const line = (method: string, target: string, headers: string[] = [], body = '') =>
    Buffer.concat([
      Buffer.from(
        `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n${headers.join('\r\n')}${
          headers.length ? '\r\n' : ''
        }\r\n`,
        'latin1',
      ),
      Buffer.from(body, 'utf8'),
    ]);
  const authLine = `Authorization: Bearer ${user.key}`;
  const chunked = (size: number) => {
    const chunk = 'x'.repeat(16 * 1024);
    let out = '';
    for (let sent = 0; sent < size; sent += chunk.length)
      out += `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
    return `${out}0\r\n\r\n`;
  };
  await raw(
    'raw UTF-8 in the request line',
    Buffer.concat([Buffer.from('GET /sandboxes/'), Buffer.from('üñï', 'utf8'), line('', '').subarray(1)]),
  );
  await raw('%zz in the path', line('GET', '/sandboxes/%zz', [authLine]));
  await raw('dot segments', line('GET', '/../../etc/passwd', [authLine]));
  await raw('encoded dot segments', line('GET', '/sandboxes/%2e%2e/%2e%2e/openapi.json', [authLine]));
  await raw('bad percent in the query', line('GET', '/sandboxes?limit=%ff&%zz', [authLine]));
  await raw('absolute-form target', line('GET', 'http://evil.example/sandboxes', [authLine]));
  await raw('asterisk target', line('OPTIONS', '*'));
  await raw('no Host (HTTP/1.0)', 'GET /healthz HTTP/1.0\r\n\r\n');
  await raw('not HTTP', 'hello\r\n\r\n');
  await raw(
    'chunked 300 KiB JSON upload',
    line(
      'POST',
      '/sandboxes',
      [authLine, 'Content-Type: application/json', 'Transfer-Encoding: chunked'],
      chunked(300 * 1024),
    ),
  );
  await raw(
    'chunked 300 KiB form post',
    line(
      'POST',
      '/login/email',
      ['Content-Type: application/x-www-form-urlencoded', 'Transfer-Encoding: chunked'],
      chunked(300 * 1024),
    ),
  );
  await raw(
    'bad chunk size',
    line(
      'POST',
      '/sandboxes',
      [authLine, 'Content-Type: application/json', 'Transfer-Encoding: chunked'],
      'zz\r\n{}\r\n0\r\n\r\n',
    ),
  );
  await raw(
    'two different Content-Lengths',
    line(
      'POST',
      '/sandboxes',
      [authLine, 'Content-Type: application/json', 'Content-Length: 2', 'Content-Length: 3'],
      '{}',
    ),
  );
  await raw(
    'Content-Length and chunked',
    line(
      'POST',
      '/sandboxes',
      [authLine, 'Content-Type: application/json', 'Content-Length: 2', 'Transfer-Encoding: chunked'],
      '{}',
    ),
  );
  await raw(
    'Content-Length shorter than the body',
    line(
      'POST',
      '/sandboxes',
      [authLine, 'Content-Type: application/json', 'Content-Length: 1'],
      '{"repo":"a/b"}',
    ),
  );
  await raw('control byte in a header', line('GET', '/sandboxes', [authLine, 'X-Junk: a\u0001b']));
  await raw('20 KiB header', line('GET', '/sandboxes', [authLine, `X-Big: ${'b'.repeat(20 * 1024)}`]));
  await raw('Latin-1 cookie', line('GET', '/integrations', ['Cookie: twinbox_session=\u00ff\u00fe']));
  await raw(
    'oversize webhook (chunked 2 MiB, unsigned)',
    line(
      'POST',
      '/github/webhooks',
      ['Content-Type: application/json', 'X-GitHub-Event: ping', 'Transfer-Encoding: chunked'],
      chunked(2 * 1024 * 1024),
    ),
  );
  for (const route of routes) {
    // Each route once over HTTP with a malformed body or query, as a client on the network sends it.
    const target = fillHapi(route.path, {
      ...baselineParams(route.path),
      sandbox_id: rng.pick(['%zz', '..', 'x'.repeat(300)]),
    });
    const body = BODY_METHODS.has(route.method) ? rng.pick(bodies) : undefined;
    const headers = [
      ...(route.auth === 'cookie' ? [`Cookie: twinbox_session=${session}`] : []),
      ...(route.auth === 'admin' ? [`Authorization: Bearer ${OPERATOR_TOKEN}`] : []),
      ...(route.auth === 'session' ? [`Authorization: Bearer ${session}`] : []),
      ...(route.auth === 'bearer' ? [authLine] : []),
      ...(body?.contentType ? [`Content-Type: ${body.contentType}`] : []),
      ...Object.entries(body?.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
    ];
    const payload = body ? Buffer.from(body.payload) : Buffer.alloc(0);
    if (body) headers.push(`Content-Length: ${payload.length}`);
    await raw(
      `${key(route.method, route.path)} ${target.slice(0, 60)}${body ? ` body ${body.label}` : ''}`,
      Buffer.concat([line(route.method, `${target}?${rng.pick(queries).slice(0, 200)}`, headers), payload]),
    );
  }

  // The App has worked through every delivery it queued; what failed there is in the log.
  await tb.githubApp!.idle();
  const errors = tb.logs.lines.filter((l) => /"level":(50|60)/.test(l));
  if (process.env.FUZZ_DEBUG) for (const e of errors) console.log('LOGERR', e.slice(0, 600));
  t.comment(`Twinbox logged ${errors.length} errors`);

  // Twinbox is still up, and nothing reached Object.prototype.
  const health = await tb.server.inject('/healthz');
  t.equal(health.statusCode, 200, 'still healthy');
  t.equal(({} as Record<string, unknown>).x, undefined, 'Object.prototype untouched (x)');
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched (polluted)');

  t.comment(
    `Twinbox: ${routes.length} routes; ${part1} requests by inject, ${http} over HTTP; statuses ${violations.histogram()}; ` +
      `${violations.parserAnswers} bodyless HTTP-parser answers, ${violations.closed} closed; ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  t.same(violations.summary(), [], 'no 5xx, and a detail on every 4xx');
});

/** A response body as a client reads it (hapi compresses when the request's Accept-Encoding asks). */
function decoded(raw: Buffer, encoding: string | undefined): string {
  try {
    if (encoding === 'gzip') return gunzipSync(raw).toString('utf8');
    if (encoding === 'deflate') return inflateSync(raw).toString('utf8');
    if (encoding === 'br') return brotliDecompressSync(raw).toString('utf8');
  } catch (error) {
    return `(${encoding} body that does not decode: ${(error as Error).message})`;
  }
  return raw.toString('utf8');
}

/** A form body with `field` set to a string rendering of `value` (forms carry only strings and nesting). */
function formWith(
  sample: Record<string, unknown>,
  field: string,
  value: unknown,
): { contentType: string; payload: string } {
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(sample)) if (k !== field) form.append(k, String(v));
  if (Array.isArray(value)) for (const item of value) form.append(`${field}[]`, JSON.stringify(item));
  else if (value && typeof value === 'object') form.append(`${field}[__proto__]`, 'x');
  else form.append(field, value === null ? '' : String(value));
  return { contentType: 'application/x-www-form-urlencoded', payload: form.toString() };
}

// ---------------------------------------------------------------------------------------------------
// Twins

interface EngineRoutes {
  engine: { app: { routes: Array<{ method: string; compiled?: { pattern?: string } }> } };
  close(): Promise<void>;
}

/** The routes a twin's engine serves (emulate's and ours), read from the router of a driver made for it. */
async function engineRoutes(factory: TwinFactory, seed: unknown): Promise<string[]> {
  const driver = (await factory.create({
    baseUrl: 'http://127.0.0.1:9',
    seed: factory.validateSeed(seed),
  })) as unknown as EngineRoutes;
  const routes = driver.engine.app.routes
    .filter((r) => r.compiled?.pattern && r.method !== 'ALL')
    .map((r) => `${r.method} ${r.compiled!.pattern}`);
  await driver.close();
  return [...new Set(routes)];
}

/** Stripe's routes, from its route table (`['GET', /^\/v1\/customers\/([^/]+)$/, ...]`). */
function stripeRoutes(): string[] {
  return STRIPE_ROUTES.map(
    ([method, pattern]) =>
      `${method} ${pattern.source
        .replace(/^\^|\$$/g, '')
        .replace(/\\\//g, '/')
        .replace(/\(\[\^\/\]\+\)/g, ':id')}`,
  );
}

/** The admin API's routes, from its source, plus GitHub's own admin routes. */
function adminRoutes(): string[] {
  const admin = readFileSync(new URL('../../server/twins/runtime/admin.ts', import.meta.url), 'utf8');
  const github = readFileSync(new URL('../../server/twins/vendors/github/twin.ts', import.meta.url), 'utf8');
  return [
    ...[...admin.matchAll(/case '(GET|POST|PUT|DELETE) (\/[^']*)'/g)].map((m) => `${m[1]} ${m[2]}`),
    'POST /webhooks/deliveries/1/redeliver',
    ...[...github.matchAll(/method === '(\w+)' && subpath === '([^']+)'/g)].map((m) => `${m[1]} ${m[2]}`),
  ];
}

const githubSeed = {
  users: [
    { login: 'octocat', email: 'octocat@example.com' },
    { login: 'hubot', email: 'hubot@example.com' },
  ],
  orgs: [{ login: 'acme' }],
  repos: [
    {
      owner: 'octocat',
      name: 'shop',
      files: { 'index.js': 'hi', 'docs/a.md': '# a' },
      branches: { feature: { 'b.txt': 'b' } },
      issues: [{ title: 'bug', labels: ['bug'], comments: [{ body: 'c', user: 'hubot' }] }],
      pulls: [
        {
          title: 'pr',
          head: 'feature',
          files: { 'c.txt': 'c' },
          review_comments: [{ body: 'r', path: 'c.txt', line: 1 }],
        },
      ],
    },
  ],
  oauth_apps: [
    { client_id: 'Iv1.fuzz', client_secret: 'fuzz-secret', redirect_uris: ['http://127.0.0.1/cb'] },
  ],
};
const slackSeed = {
  users: [{ name: 'alice', email: 'alice@example.com' }],
  channels: [{ name: 'general', messages: [{ text: 'hello' }] }],
};
const stripeSeed = {
  customers: [{ email: 'c@example.com', name: 'C', payment_method: 'pm_card_visa' }],
  products: [
    { id: 'prod_fuzz', name: 'P', prices: [{ id: 'price_fuzz', unit_amount: 100, currency: 'usd' }] },
  ],
};

/** A value for a twin route's path parameter that names something the seed made. */
function twinParam(name: string, template: string, ids: Record<string, string>): string {
  if (name === 'id' && template.startsWith('/v1/')) {
    // Stripe: the id of an object of the route's kind.
    const kind = /^\/v1\/(\w+)/.exec(template)?.[1] ?? '';
    return ids[kind] ?? 'x';
  }
  const known: Record<string, string> = {
    owner: 'octocat',
    repo: 'shop',
    username: 'hubot',
    org: 'acme',
    branch: 'main',
    ref: 'main',
    path: 'index.js',
    basehead: 'main...feature',
    name: 'bug',
    issue_number: '1',
    pull_number: '2',
    client_id: 'Iv1.fuzz',
    team_slug: 'team',
    secret_name: 'S',
    tag: 'v1',
    teamId: 'T0',
    botId: 'B0',
    token: 'nope',
    fileId: 'F0',
    filename: 'f.txt',
  };
  if (known[name]) return known[name]!;
  if (/sha$/.test(name)) return 'main';
  return '1';
}

/** Ids of seeded objects the routes can name (Stripe makes its own; the others' come from the seed). */
async function twinIds(twin: string, entry: TwinEntry): Promise<Record<string, string>> {
  if (twin === 'github') await githubObjects(entry);
  if (twin !== 'stripe') return {};
  const headers = { authorization: `Bearer ${entry.env_vars.STRIPE_SECRET_KEY}` };
  const get = async (path: string) =>
    (await (await fetch(`${entry.base_url}${path}`, { headers })).json()) as {
      data: Array<{ id: string }>;
    };
  const customer = (await get('/v1/customers')).data[0]!.id;
  const paymentMethod = (await get(`/v1/customers/${customer}/payment_methods`)).data[0]?.id ?? 'pm_none';
  const intent = (await (
    await fetch(`${entry.base_url}/v1/payment_intents`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'amount=100&currency=usd&payment_method=pm_card_visa&confirm=true',
    })
  ).json()) as { id: string; latest_charge: string };
  return {
    customers: customer,
    products: 'prod_fuzz',
    prices: 'price_fuzz',
    payment_methods: paymentMethod,
    payment_intents: intent.id,
    charges: intent.latest_charge,
    events: (await get('/v1/events')).data[0]?.id ?? 'evt_none',
  };
}

/**
 * Objects the GitHub seed cannot make, so the routes that name them (id 1 of each kind) reach their
 * handlers instead of a 404: a release, a milestone, a hook, a team, a review, a deployment and its
 * status, a check run, a commit comment.
 */
async function githubObjects(entry: TwinEntry): Promise<void> {
  const headers = {
    authorization: `token ${entry.env_vars.GITHUB_TOKEN}`,
    'content-type': 'application/json',
    accept: 'application/vnd.github+json',
  };
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${entry.base_url}${path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    return (await res.json()) as Record<string, any>;
  };
  const repo = '/repos/octocat/shop';
  const sha = (await (await fetch(`${entry.base_url}${repo}/commits/main`, { headers })).json()) as {
    sha: string;
  };
  await post(`${repo}/releases`, { tag_name: 'v1', name: 'v1' });
  await post(`${repo}/milestones`, { title: 'm1' });
  await post(`${repo}/hooks`, { config: { url: 'http://127.0.0.1:9/hook' } });
  await post('/orgs/acme/teams', { name: 'team' });
  await post(`${repo}/pulls/2/reviews`, { event: 'COMMENT', body: 'r' });
  await post(`${repo}/deployments`, { ref: 'main', auto_merge: false, required_contexts: [] });
  await post(`${repo}/deployments/1/statuses`, { state: 'success' });
  await post(`${repo}/check-runs`, { name: 'ci', head_sha: sha.sha });
  await post(`${repo}/commits/${sha.sha}/comments`, { body: 'c' });
}

/** Whether a route that writes left the seeded objects the later routes name. */
async function intact(twin: string, entry: TwinEntry, ids: Record<string, string>): Promise<boolean> {
  const token = { authorization: `token ${entry.env_vars.GITHUB_TOKEN}` };
  const stripe = { authorization: `Bearer ${entry.env_vars.STRIPE_SECRET_KEY}` };
  const paths: Array<[string, Record<string, string>]> =
    twin === 'github'
      ? [
          ['/repos/octocat/shop', token],
          ['/repos/octocat/shop/pulls/2', token],
          ['/repos/octocat/shop/issues/1', token],
          ['/repos/octocat/shop/releases/1', token],
          ['/repos/octocat/shop/labels/bug', token],
          ['/orgs/acme/teams/team', token],
        ]
      : twin === 'stripe'
        ? [
            [`/v1/customers/${ids.customers}`, stripe],
            [`/v1/products/prod_fuzz`, stripe],
          ]
        : [];
  for (const [path, headers] of paths) {
    const res = await fetch(`${entry.base_url}${path}`, { headers });
    const body = (await res.json()) as { deleted?: boolean };
    if (res.status !== 200 || body.deleted) return false;
  }
  return twin !== 'slack';
}

/** JSON fields the vendors' write endpoints read, to give wrong types. */
const JSON_FIELDS = [
  'title',
  'body',
  'name',
  'head',
  'base',
  'state',
  'labels',
  'assignees',
  'sha',
  'ref',
  'content',
  'message',
  'branch',
  'tag_name',
  'config',
  'events',
  'permission',
  'description',
  'private',
  'environment',
  'tree',
  'parents',
  'reviewers',
  'commit_id',
  'path',
  'line',
  'event',
  'channel',
  'text',
  'ts',
  'blocks',
  'attachments',
  'user',
  'users',
  'view',
  'trigger_id',
  'files',
  'limit',
  'cursor',
  'inputs',
  'required_status_checks',
];

const STRIPE_FORMS = [
  'amount=abc&currency=usd',
  'amount[x]=1',
  'amount=1e400&currency=usd',
  'amount=-1&currency=usd',
  'amount=100&currency=' + 'u'.repeat(5000),
  'metadata=str',
  'metadata[a][b][c]=1',
  `${'a['.repeat(500)}=1`,
  'expand[]=__proto__',
  'expand[]=data.' + 'x.'.repeat(200),
  'email[]=a&email[]=b',
  'a[=1&b]=2&c[][][]=3',
  'customer=cus_nope',
  'payment_method=pm_card_chargeDeclined&confirm=true&amount=100&currency=usd',
  'payment_method[]=x&confirm[]=true',
  'recurring[interval]=decade&unit_amount=1&currency=usd&product=prod_fuzz',
  'items[0][price]=x',
  'limit=0',
  'limit=abc&starting_after=__proto__',
  'ending_before[x]=1',
  'product=%zz',
  'name=' + encodeURIComponent('ünï\u0000💥'),
  'unit_amount=1&currency=usd&product[]=prod_fuzz',
  'capture_method=later&amount=1&currency=usd',
  'amount_to_capture=999999999999999999999',
  'cancellation_reason[0]=x',
  'active=maybe',
];

const SLACK_FORMS = [
  'channel[]=C1&text=x',
  'channel=&text=',
  'blocks=not json&channel=C1',
  'blocks=[{"type":1}]&channel=C1',
  'blocks={"__proto__":{"x":1}}&channel=C1',
  'attachments=[[[[[]]]]]&channel=C1',
  'ts=abc&channel=C1',
  'limit=-1&cursor=%ff',
  'limit=1.5',
  'limit=1e400&cursor=' + 'c'.repeat(3000),
  'users=' + 'U,'.repeat(3000),
  'view=not json&trigger_id=x',
  'view={"type":"modal","blocks":"x"}&trigger_id=1',
  'files=not json',
  'files=[{"id":null}]',
  'length=-5&filename=' + 'f'.repeat(5000),
  'email[x]=1',
  'name=' + encodeURIComponent('ünï\u0000💥'),
  'code=x&client_id=y&client_secret=z',
  'token[]=x',
];

t.test('twins: malformed input to every endpoint', async (t) => {
  const rng = new Rng(SEED ^ 0x5eed);
  const { host } = await tempHost(t);
  const entries = await host.start('fuzz', ['github', 'stripe', 'slack'], {
    adminToken: TWIN_ADMIN,
    seeds: { github: githubSeed, stripe: stripeSeed, slack: slackSeed },
  });

  const twins = [
    {
      name: 'github',
      entry: entries.github!,
      routes: await engineRoutes(githubTwin, githubSeed),
      auth: `token ${entries.github!.env_vars.GITHUB_TOKEN}`,
      param: /:(\w+)(?:\{[^}]*\})?/g,
      open: /^\/(login\/|settings\/connections\/)/,
      perRoute: { params: 1, queries: 1, bodies: 3, fields: 2 },
    },
    {
      name: 'slack',
      entry: entries.slack!,
      routes: await engineRoutes(slackTwin, slackSeed),
      auth: `Bearer ${entries.slack!.env_vars.SLACK_BOT_TOKEN}`,
      param: /:(\w+)(?:\{[^}]*\})?/g,
      open: /^\/(oauth\/|api\/oauth|api\/openid|services\/|upload\/)/,
      perRoute: { params: 2, queries: 2, bodies: 6, fields: 3 },
    },
    {
      name: 'stripe',
      entry: entries.stripe!,
      routes: stripeRoutes(),
      auth: `Bearer ${entries.stripe!.env_vars.STRIPE_SECRET_KEY}`,
      param: /:(\w+)/g,
      open: /^$/,
      perRoute: { params: 5, queries: 4, bodies: 8, fields: 0 },
    },
  ];
  t.ok(
    twins[0]!.routes.some((r) => r === 'POST /repos/:owner/:repo/deployments'),
    'GitHub: our extension routes are listed',
  );
  t.ok(twins[0]!.routes.length > 200, `GitHub: emulate's routes are listed (${twins[0]!.routes.length})`);
  t.ok(twins[1]!.routes.length > 50, `Slack: emulate's routes are listed (${twins[1]!.routes.length})`);
  t.ok(twins[2]!.routes.length > 25, `Stripe: its routes are listed (${twins[2]!.routes.length})`);
  const admin = adminRoutes();
  t.ok(
    admin.includes('PUT /webhooks/target') && admin.includes('POST /repos/files'),
    'admin routes are listed',
  );

  const violations = new Violations();
  const segments = badSegments(rng);
  const queries = badQueries(rng);
  const bodies = badBodies(rng);
  const values = badValues(rng);
  const counts: Record<string, number> = {};
  // Over a real connection, headers that break HTTP framing are the parser's business, not the twins'.
  const twinHeaders = badHeaders().filter((h) => !('content-length' in h) && !('transfer-encoding' in h));

  for (const twin of twins) {
    const port = Number(new URL(twin.entry.base_url).port);
    counts[twin.name] = 0;
    const send = async (
      where: string,
      input: string,
      method: string,
      path: string,
      headers: Record<string, string>,
      payload?: string | Buffer,
      admin = false,
    ) => {
      counts[twin.name]! += 1;
      let res: RawResponse;
      try {
        res = await sendHttp(port, method, path, headers, payload);
      } catch (error) {
        res = { status: 598, headers: {}, body: `no answer: ${(error as Error).message}` };
      }
      violations.count(res.status);
      const label = `${twin.name} ${where}`;
      if (res.status >= 500) violations.add({ where: label, input, status: res.status, body: res.body });
      else if (res.status < 0) violations.closed += 1;
      else if (res.status >= 400 && res.body === '' && !res.headers['content-type']) {
        // Node's HTTP parser refusing the request line (a 20 KiB query is over its header limit).
        violations.parserAnswers += 1;
      } else if (admin && res.status >= 400 && !hasDetail(res.body)) {
        violations.add({ where: label, input, status: res.status, body: res.body });
      }
    };

    // What the routes' parameters name (Stripe's ids are made by the seed), and a way back to the seed
    // after a route that writes: a deleted or renamed repository would make every later answer a 404.
    let ids = await twinIds(twin.name, twin.entry);
    const reset = async () => {
      const res = await sendHttp(
        port,
        'POST',
        '/_twinbox/reset',
        { authorization: `Bearer ${TWIN_ADMIN}` },
        '',
      );
      if (res.status !== 200) throw new Error(`${twin.name}: reset answered ${res.status} ${res.body}`);
      ids = await twinIds(twin.name, twin.entry);
    };
    let resetMs = 0;

    for (const route of twin.routes) {
      const [method, template] = route.split(' ') as [string, string];
      const names = paramNames(template, twin.param);
      const fill = (over: Record<string, string> = {}) =>
        template.replace(twin.param, (_m, name: string) => over[name] ?? twinParam(name, template, ids));
      const hasBody = BODY_METHODS.has(method);
      const form = twin.name !== 'github';
      const goodType = form ? 'application/x-www-form-urlencoded' : 'application/json';
      const auth = { authorization: twin.auth, accept: 'application/json' };
      const empty = form ? '' : '{}';

      await send(
        route,
        'baseline',
        method,
        fill(),
        hasBody ? { ...auth, 'content-type': goodType } : auth,
        hasBody ? empty : undefined,
      );
      for (const name of names) {
        for (const segment of rng.sample(segments, twin.perRoute.params)) {
          await send(route, `:${name} = ${segment.slice(0, 60)}`, method, fill({ [name]: segment }), auth);
        }
      }
      for (const query of rng.sample(queries, twin.perRoute.queries)) {
        await send(route, `?${query.slice(0, 60)}`, method, `${fill()}?${query}`, auth);
      }
      const headers = rng.pick(twinHeaders);
      await send(route, `header ${JSON.stringify(headers).slice(0, 60)}`, method, fill(), {
        ...auth,
        ...headers,
      });
      const [authLabel, authValue] = rng.pick([
        ['no credentials', undefined],
        ['garbage token', `${twin.auth.split(' ')[0]} garbage`],
        ['Basic garbage', 'Basic Og=='],
        ['10 KiB token', `Bearer ${'t'.repeat(10_000)}`],
      ] as const);
      await send(
        route,
        `auth ${authLabel}`,
        method,
        fill(),
        authValue ? { authorization: authValue } : {},
        hasBody ? empty : undefined,
      );
      if (!hasBody) continue;
      // Routes anyone can call without credentials (OAuth, incoming webhooks, uploads) get every input.
      const open = twin.open.test(template);
      const creds = open ? { accept: 'application/json' } : auth;
      for (const body of open ? bodies : rng.sample(bodies, twin.perRoute.bodies)) {
        await send(
          route,
          `body ${body.label}`,
          method,
          fill(),
          {
            ...creds,
            ...(body.contentType ? { 'content-type': body.contentType } : {}),
            ...(body.headers ?? {}),
          },
          body.payload,
        );
      }
      for (let i = 0; i < (open ? 3 : 1) * twin.perRoute.fields; i++) {
        const doc: Record<string, unknown> = {};
        const parts: string[] = [];
        for (const field of rng.sample(JSON_FIELDS, 3)) {
          const { label, value } = rng.pick(values);
          doc[field] = value;
          parts.push(`${field}=${label}`);
        }
        await send(
          route,
          `json ${parts.join(', ')}`,
          method,
          fill(),
          { ...creds, 'content-type': 'application/json' },
          JSON.stringify(doc),
        );
      }
      const forms = twin.name === 'stripe' ? STRIPE_FORMS : twin.name === 'slack' ? SLACK_FORMS : [];
      for (const f of open ? forms : rng.sample(forms, twin.perRoute.bodies)) {
        await send(
          route,
          `form ${f.slice(0, 60)}`,
          method,
          fill(),
          { ...creds, 'content-type': 'application/x-www-form-urlencoded' },
          f,
        );
      }
      if (method !== 'GET') {
        const before = performance.now();
        if (!(await intact(twin.name, twin.entry, ids))) await reset();
        resetMs += performance.now() - before;
      }
    }
    t.comment(`${twin.name}: ${Math.round(resetMs)} ms checking and resetting after writes`);

    // The admin API: the sandbox's admin token, and malformed input.
    const adminAuth = { authorization: `Bearer ${TWIN_ADMIN}` };
    for (const route of admin) {
      const [method, sub] = route.split(' ') as [string, string];
      const path = `/_twinbox${sub === '/' ? '' : sub}`;
      const hasBody = method !== 'GET';
      // Leave the twin's state alone: a reset or reseed mid-run would only make later answers shallower.
      if (route === 'POST /reset') continue;
      await send(`admin ${route}`, 'no token', method, path, {}, undefined, true);
      await send(
        `admin ${route}`,
        'wrong token',
        method,
        path,
        { authorization: 'Bearer nope' },
        undefined,
        true,
      );
      for (const query of rng.sample(queries, 3)) {
        await send(
          `admin ${route}`,
          `?${query.slice(0, 60)}`,
          method,
          `${path}?${query}`,
          adminAuth,
          undefined,
          true,
        );
      }
      if (!hasBody) continue;
      for (const body of rng.sample(bodies, 10)) {
        await send(
          `admin ${route}`,
          `body ${body.label}`,
          method,
          path,
          {
            ...adminAuth,
            ...(body.contentType ? { 'content-type': body.contentType } : {}),
            ...(body.headers ?? {}),
          },
          body.payload,
          true,
        );
      }
      for (let i = 0; i < 4; i++) {
        const doc: Record<string, unknown> = {};
        const parts: string[] = [];
        for (const field of rng.sample(
          [
            'url',
            'secret',
            'events',
            'event',
            'payload',
            'owner',
            'repo',
            'files',
            'branch',
            'status',
            'path',
            'method',
            'users',
            'repos',
            'auto_approve',
            'rate_limit',
            'latency_ms',
            'times',
          ],
          3,
        )) {
          const { label, value } = rng.pick(values);
          doc[field] = value;
          parts.push(`${field}=${label}`);
        }
        await send(
          `admin ${route}`,
          `json ${parts.join(', ')}`,
          method,
          path,
          { ...adminAuth, 'content-type': 'application/json' },
          JSON.stringify(doc),
          true,
        );
      }
    }
    for (const sub of [
      '/nope',
      '/state/x',
      '/%zz',
      '/..%2f..',
      '/webhooks/deliveries/99999999999999999999/redeliver',
      '/webhooks/deliveries/-1/redeliver',
    ]) {
      await send(`admin GET ${sub}`, 'no such route', 'GET', `/_twinbox${sub}`, adminAuth, undefined, true);
      await send(`admin POST ${sub}`, 'no such route', 'POST', `/_twinbox${sub}`, adminAuth, '{}', true);
    }
  }

  // Every twin still answers its SDK's first call, and nothing reached Object.prototype.
  const ping = async (url: string, headers: Record<string, string>, init: RequestInit = {}) =>
    (await fetch(url, { ...init, headers })).status;
  t.equal(
    await ping(`${entries.github!.base_url}/user`, {
      authorization: `token ${entries.github!.env_vars.GITHUB_TOKEN}`,
    }),
    200,
    'GitHub still answers',
  );
  t.equal(
    await ping(`${entries.stripe!.base_url}/v1/customers`, {
      authorization: `Bearer ${entries.stripe!.env_vars.STRIPE_SECRET_KEY}`,
    }),
    200,
    'Stripe still answers',
  );
  t.equal(
    await ping(
      `${entries.slack!.base_url}/api/auth.test`,
      { authorization: `Bearer ${entries.slack!.env_vars.SLACK_BOT_TOKEN}` },
      { method: 'POST' },
    ),
    200,
    'Slack still answers',
  );
  t.equal(({} as Record<string, unknown>).x, undefined, 'Object.prototype untouched (x)');
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched (polluted)');

  t.comment(
    `twins: ${Object.entries(counts)
      .map(([n, c]) => `${n} ${c}`)
      .join(
        ', ',
      )} requests (routes: ${twins.map((w) => `${w.name} ${w.routes.length}`).join(', ')}, admin ${admin.length}); ` +
      `statuses ${violations.histogram()}; ${violations.parserAnswers} bodyless HTTP-parser answers, ${violations.closed} closed; ${((Date.now() - started) / 1000).toFixed(1)} s since start`,
  );
  t.same(violations.summary(), [], 'no 5xx from any twin, and a detail on every 4xx of the admin API');
});
