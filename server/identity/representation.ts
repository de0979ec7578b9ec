import Joi from 'joi';
import type { AccountRecord, IdentityRecord } from '../store/records.ts';

/**
 * Accounts and linked identities as the API's JSON shows them (docs/identity.md), and their response
 * schemas; the web pages' HTML is server/web/identity-pages.ts.
 */
export interface AccountView {
  id: string;
  email: string;
  email_verified: boolean;
  plan: string;
  created_at: string;
}

export function toAccountView(account: AccountRecord): AccountView {
  return {
    id: account.id,
    email: account.email,
    email_verified: account.email_verified !== false,
    plan: account.plan,
    created_at: account.created_at,
  };
}

export const accountViewSchema = Joi.object({
  id: Joi.string().required(),
  email: Joi.string().required(),
  email_verified: Joi.boolean().required(),
  plan: Joi.string().valid('free', 'pro').required(),
  created_at: Joi.string().isoDate().required(),
}).label('Account');

export function toIdentityView(identity: IdentityRecord) {
  return {
    provider: identity.provider,
    provider_id: identity.provider_key.split(':')[1]!,
    login: identity.login,
    created_at: identity.created_at,
  };
}

export const identityViewSchema = Joi.object({
  provider: Joi.string().valid('github').required(),
  provider_id: Joi.string().required(),
  login: Joi.string().required(),
  created_at: Joi.string().isoDate().required(),
}).label('Identity');
