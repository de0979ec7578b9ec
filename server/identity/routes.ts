import Joi from 'joi';
import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import { BEARER, BEARER_PATTERN, SESSION, accountOf } from '../auth/bearer.ts';
import type { Sessions } from '../auth/sessions.ts';
import { looksLikeApiKey } from '../auth/api-key-format.ts';
import type { Store } from '../store/store.ts';
import type { AccountRecord } from '../store/records.ts';
import { validationFailAction } from '../errors.ts';
import { documentedResponses } from '../http/responses.ts';
import type { EmailAuth, SignedIn } from './email-auth.ts';
import { SESSION_COOKIE } from './cookies.ts';
import { accountViewSchema, identityViewSchema, toAccountView, toIdentityView } from './representation.ts';

const emailPayload = Joi.object({ email: Joi.string().max(320).required() }).label('EmailRequest');
const codePayload = Joi.object({
  email: Joi.string().max(320).required(),
  code: Joi.string()
    .pattern(/^[0-9]{6}$/)
    .required()
    .messages({ 'string.pattern.base': '"code" must be the 6 digits from the e-mail' }),
}).label('CodeRequest');
const signedInSchema = Joi.object({
  account: accountViewSchema.required(),
  token: Joi.string().required(),
}).label('SignedIn');
const acceptedSchema = Joi.object({ status: Joi.string().valid('sent').required() }).label('CodeSent');

export interface IdentityRoutesOptions {
  emailAuth: EmailAuth;
  sessions: Sessions;
  store: Store;
}

/** The e-mail identity endpoints (spec: identity endpoints) and GET /me. */
export const identityRoutes: Plugin<IdentityRoutesOptions> = {
  name: 'twinbox-identity',
  register(server, { emailAuth, sessions, store }) {
    const anonymous = { auth: false as const, tags: ['api', 'identity'] };
    // The session is optional here: a signed-in caller verifies an address for its own account. Checked
    // in the handler (hapi's optional mode would take our 401 for a bad token as "no credentials").
    const optionalSession = anonymous;
    const ip = (request: Request) => request.info.remoteAddress;
    const caller = async (request: Request): Promise<AccountRecord | undefined> => {
      if (!request.headers.authorization) return undefined;
      const { credentials } = await server.auth.test(SESSION, request);
      return credentials.user?.account;
    };
    const signedIn = (h: ResponseToolkit, result: SignedIn) =>
      h
        .response({ account: toAccountView(result.account), token: result.token })
        .state(SESSION_COOKIE, result.token);

    server.route([
      {
        method: 'POST',
        path: '/auth/email/signup',
        options: {
          ...anonymous,
          description: 'Create an account by e-mail; a code to verify it is mailed',
          validate: { payload: emailPayload, failAction: validationFailAction },
          ...documentedResponses(
            { 201: Joi.object({ account: accountViewSchema }).label('SignedUp') },
            400,
            409,
            429,
          ),
        },
        async handler(request, h) {
          const { email } = request.payload as { email: string };
          const account = await emailAuth.signup(email, ip(request));
          return h.response({ account: toAccountView(account) }).code(201);
        },
      },
      {
        method: 'POST',
        path: '/auth/email-verification/request',
        options: {
          ...optionalSession,
          description: 'Mail a code that verifies an e-mail address',
          validate: { payload: emailPayload, failAction: validationFailAction },
          ...documentedResponses({ 202: acceptedSchema }, 400, 401, 409, 429),
        },
        async handler(request, h) {
          const { email } = request.payload as { email: string };
          await emailAuth.requestVerification(email, ip(request), await caller(request));
          return h.response({ status: 'sent' }).code(202);
        },
      },
      {
        method: 'POST',
        path: '/auth/email-verification/verify',
        options: {
          ...optionalSession,
          description: 'Verify an e-mail address with its code; answers a session',
          validate: { payload: codePayload, failAction: validationFailAction },
          ...documentedResponses({ 200: signedInSchema }, 400, 401, 409, 429),
        },
        async handler(request, h) {
          const { email, code } = request.payload as { email: string; code: string };
          return signedIn(h, await emailAuth.verify(email, code, ip(request), await caller(request)));
        },
      },
      {
        method: 'POST',
        path: '/auth/email/login',
        options: {
          ...anonymous,
          description: 'Mail a sign-in code (same answer whether or not the account exists)',
          validate: { payload: emailPayload, failAction: validationFailAction },
          ...documentedResponses({ 202: acceptedSchema }, 400, 429),
        },
        async handler(request, h) {
          const { email } = request.payload as { email: string };
          await emailAuth.requestLogin(email, ip(request));
          return h.response({ status: 'sent' }).code(202);
        },
      },
      {
        method: 'POST',
        path: '/auth/email/login/verify',
        options: {
          ...anonymous,
          description: 'Sign in with a mailed code; answers a session',
          validate: { payload: codePayload, failAction: validationFailAction },
          ...documentedResponses({ 200: signedInSchema }, 400, 429),
        },
        async handler(request, h) {
          const { email, code } = request.payload as { email: string; code: string };
          return signedIn(h, await emailAuth.verifyLogin(email, code, ip(request)));
        },
      },
      {
        method: 'POST',
        path: '/auth/logout',
        options: {
          auth: false,
          tags: ['api', 'identity'],
          description:
            'Sign out: revokes the session (JWT) of the session cookie and of an `Authorization: Bearer` session token, on every Twinbox process, and clears the cookie. An API key is revoked with DELETE /api-keys/current instead',
          ...documentedResponses({ 204: Joi.any() }),
        },
        async handler(request, h) {
          for (const token of sessionTokensOf(request)) await sessions.revoke(token);
          return h.response().code(204).unstate(SESSION_COOKIE);
        },
      },
      {
        method: 'GET',
        path: '/me',
        options: {
          auth: { strategy: BEARER },
          tags: ['api', 'identity'],
          description: 'The signed-in account and its connected identities (session or API key)',
          ...documentedResponses(
            {
              200: Joi.object({
                account: accountViewSchema.required(),
                identities: Joi.array().items(identityViewSchema).required(),
                token_type: Joi.string().valid('session', 'api_key').required(),
              }).label('Me'),
            },
            401,
          ),
        },
        async handler(request) {
          const account = accountOf(request);
          const identities = await store.identities.findBy('account_id', account.id);
          return {
            account: toAccountView(account),
            identities: identities.map(toIdentityView),
            token_type: request.auth.credentials.user!.tokenType,
          };
        },
      },
    ]);
  },
};

/**
 * The session tokens a sign-out request carries: its cookie's and a bearer JWT. Not an API key, nor a
 * malformed header: this route is anonymous, so those simply revoke nothing.
 */
function sessionTokensOf(request: Request): string[] {
  const tokens: string[] = [];
  const cookie = (request.state as Record<string, unknown> | null)?.[SESSION_COOKIE];
  if (typeof cookie === 'string' && cookie !== '') tokens.push(cookie);
  const header: unknown = request.headers.authorization;
  const bearer = typeof header === 'string' ? BEARER_PATTERN.exec(header)?.[1] : undefined;
  if (bearer && !looksLikeApiKey(bearer)) tokens.push(bearer);
  return tokens;
}
