import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { ADMIN } from '../auth/bearer.ts';
import type { ApiKeys } from '../auth/api-keys.ts';
import type { Accounts } from '../identity/accounts.ts';
import { EmailTakenError } from '../identity/accounts.ts';
import { InvalidEmailError } from '../identity/email.ts';
import { badRequest, conflict, notFound, validationFailAction } from '../errors.ts';
import { documentedResponses } from '../http/responses.ts';
import type { Plan } from '../store/records.ts';

const plan = Joi.string().valid('free', 'pro');
const accountSchema = Joi.object({
  id: Joi.string().required(),
  email: Joi.string().required(),
  plan: plan.required(),
}).label('AdminAccount');
const accountIdParam = Joi.object({ id: Joi.string().max(100).required() });

/**
 * The operator API, mounted only when TWINBOX_ADMIN_TOKEN is set, authenticated with that token.
 * It is how an operator creates accounts, changes plans and hands out keys without the web flows.
 */
export const adminRoutes: Plugin<{ accounts: Accounts; apiKeys: ApiKeys }> = {
  name: 'twinbox-admin',
  register(server, { accounts, apiKeys }) {
    const options = { auth: { strategy: ADMIN }, tags: ['api', 'admin'] };
    server.route([
      {
        method: 'POST',
        path: '/admin/accounts',
        options: {
          ...options,
          description: 'Create an account',
          validate: {
            payload: Joi.object({ email: Joi.string().max(320).required(), plan: plan.default('free') }),
            failAction: validationFailAction,
          },
          ...documentedResponses({ 201: accountSchema }, 400, 401, 409),
        },
        async handler(request, h) {
          const { email, plan } = request.payload as { email: string; plan: Plan };
          try {
            const account = await accounts.create(email, plan);
            return h.response({ id: account.id, email: account.email, plan: account.plan }).code(201);
          } catch (error) {
            if (error instanceof InvalidEmailError) throw badRequest(error.message, 'invalid_email');
            if (error instanceof EmailTakenError) throw conflict(error.message, 'email_taken');
            throw error;
          }
        },
      },
      {
        method: 'PATCH',
        path: '/admin/accounts/{id}',
        options: {
          ...options,
          description: "Change an account's plan",
          validate: {
            params: accountIdParam,
            payload: Joi.object({ plan: plan.required() }),
            failAction: validationFailAction,
          },
          ...documentedResponses({ 200: accountSchema }, 400, 401, 404),
        },
        async handler(request) {
          const { plan } = request.payload as { plan: Plan };
          const account = await accounts.setPlan(String(request.params.id), plan);
          if (!account) throw notFound(`No account ${String(request.params.id)}.`);
          return { id: account.id, email: account.email, plan: account.plan };
        },
      },
      {
        method: 'POST',
        path: '/admin/accounts/{id}/api-keys',
        options: {
          ...options,
          description: 'Create an API key for an account; the key is shown only in this response',
          validate: {
            params: accountIdParam,
            payload: Joi.object({ name: Joi.string().max(100) }).allow(null),
            failAction: validationFailAction,
          },
          ...documentedResponses(
            {
              201: Joi.object({ id: Joi.string().required(), key: Joi.string().required() }).label(
                'NewApiKey',
              ),
            },
            400,
            401,
            404,
          ),
        },
        async handler(request, h) {
          const account = await accounts.get(String(request.params.id));
          if (!account) throw notFound(`No account ${String(request.params.id)}.`);
          const name = (request.payload as { name?: string } | null)?.name ?? 'operator';
          const { record, key } = await apiKeys.issue(account.id, name);
          return h.response({ id: record.id, key }).code(201);
        },
      },
    ]);
  },
};
