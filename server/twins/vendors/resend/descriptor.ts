/** What Twinbox knows of the Resend twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import type { TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { describeResendChange } from './changes.ts';
import { summarizeResend } from './summary.ts';
import { resendPresets } from './presets.ts';

export interface ResendSeed {
  domains?: Array<{ name: string; region?: string }>;
  contacts?: Array<{ email: string; first_name?: string; last_name?: string; audience?: string }>;
  /** Emails already sent (delivered), oldest first, as `emails.list` and `emails.get` show them. */
  emails?: Array<{ from: string; to: string | string[]; subject: string; html?: string; text?: string }>;
  webhook?: { url: string; events?: string[] };
}

const REGIONS = ['us-east-1', 'eu-west-1', 'sa-east-1', 'ap-northeast-1'];

const schema = Joi.object<ResendSeed>({
  domains: Joi.array().items(
    Joi.object({
      name: Joi.string().domain().required(),
      region: Joi.string().valid(...REGIONS),
    }),
  ),
  contacts: Joi.array().items(
    Joi.object({
      email: Joi.string().email().required(),
      first_name: Joi.string(),
      last_name: Joi.string(),
      audience: Joi.string().min(1),
    }),
  ),
  emails: Joi.array().items(
    Joi.object({
      from: Joi.string().min(3).required(),
      to: Joi.alternatives(Joi.string().email(), Joi.array().items(Joi.string().email()).min(1)).required(),
      subject: Joi.string().min(1).required(),
      html: Joi.string(),
      text: Joi.string(),
    }),
  ),
  webhook: Joi.object({
    url: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .required(),
    events: Joi.array().items(Joi.string()),
  }),
});

const DEFAULT_SEED: ResendSeed = { domains: [{ name: 'example.com' }] };

const validateResendSeed = seedValidator('resend', schema, { empty: DEFAULT_SEED });

export const resendDescriptor: TwinDescriptor<ResendSeed, 'resend'> = {
  name: 'resend',
  description:
    'Resend email API (emails send/batch/get/list/cancel, domains, API keys, audiences and contacts) on the emulate engine',
  hosts: ['api.resend.com'],
  envVarNames: ['RESEND_API_KEY', 'RESEND_BASE_URL', 'RESEND_WEBHOOK_SECRET'],
  // Resend has no framework default; this is the path its webhook guide uses.
  webhook: { path: '/api/webhooks/resend', secretVar: 'RESEND_WEBHOOK_SECRET' },
  summarize: summarizeResend,
  validateSeed: validateResendSeed,
  presets: resendPresets,
  describeChange: describeResendChange,
};
