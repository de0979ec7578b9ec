/** What Twinbox knows of the Google twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import type { TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { describeGoogleChange } from './changes.ts';
import { summarizeGoogle } from './summary.ts';
import { googlePresets } from './presets.ts';

export interface GoogleSeed {
  /** Google accounts; the first is the one GOOGLE_REFRESH_TOKEN signs in as. */
  users?: Array<{ email: string; name?: string; given_name?: string; family_name?: string; hd?: string }>;
  /** Gmail labels; `user_email` defaults to the first user. */
  labels?: Array<{ name: string; user_email?: string }>;
  /**
   * Gmail messages already in a mailbox (INBOX and UNREAD unless `label_ids` says otherwise); `label_ids`
   * take Gmail's system label ids and the names of seeded labels.
   */
  messages?: Array<{
    from: string;
    to: string;
    subject: string;
    body_text?: string;
    body_html?: string;
    label_ids?: string[];
    user_email?: string;
    date?: string;
  }>;
  /** Events on a user's primary calendar. */
  calendar_events?: Array<{
    summary: string;
    start_date_time: string;
    end_date_time: string;
    description?: string;
    location?: string;
    attendees?: Array<{ email: string; display_name?: string }>;
    user_email?: string;
  }>;
  /** Drive files (in My Drive's root); `data` is their text content. */
  drive_files?: Array<{ name: string; mime_type: string; data?: string; user_email?: string }>;
  /** Redirect URIs of the twin's OAuth client (GOOGLE_CLIENT_ID). */
  redirect_uris?: string[];
}

const email = () => Joi.string().email();

const schema = Joi.object<GoogleSeed>({
  users: Joi.array()
    .items(
      Joi.object({
        email: email().required(),
        name: Joi.string().max(200),
        given_name: Joi.string().max(100),
        family_name: Joi.string().max(100),
        hd: Joi.string().domain(),
      }),
    )
    .unique('email'),
  labels: Joi.array().items(
    Joi.object({ name: Joi.string().min(1).max(225).required(), user_email: email() }),
  ),
  messages: Joi.array().items(
    Joi.object({
      from: Joi.string().min(3).max(500).required(),
      to: Joi.string().min(3).max(2000).required(),
      subject: Joi.string().allow('').max(1000).required(),
      body_text: Joi.string().allow(''),
      body_html: Joi.string().allow(''),
      label_ids: Joi.array().items(Joi.string().min(1)),
      user_email: email(),
      date: Joi.string().isoDate(),
    }),
  ),
  calendar_events: Joi.array().items(
    Joi.object({
      summary: Joi.string().min(1).max(1000).required(),
      start_date_time: Joi.string().isoDate().required(),
      end_date_time: Joi.string().isoDate().required(),
      description: Joi.string().allow(''),
      location: Joi.string().allow(''),
      attendees: Joi.array().items(Joi.object({ email: email().required(), display_name: Joi.string() })),
      user_email: email(),
    }),
  ),
  drive_files: Joi.array().items(
    Joi.object({
      name: Joi.string().min(1).max(1000).required(),
      mime_type: Joi.string()
        .pattern(/^[\w.+-]+\/[\w.+-]+$/)
        .required(),
      data: Joi.string().max(256 * 1024),
      user_email: email(),
    }),
  ),
  redirect_uris: Joi.array().items(Joi.string().uri({ scheme: ['http', 'https'] })),
});

const validateGoogleSeed = seedValidator('google', schema);

export const googleDescriptor: TwinDescriptor<GoogleSeed, 'google'> = {
  name: 'google',
  description:
    'Google OAuth 2.0 / OpenID Connect (authorization code with PKCE, refresh tokens, userinfo, JWKS) and the Gmail, Calendar and Drive APIs, on the emulate engine',
  hosts: [
    'oauth2.googleapis.com',
    'accounts.google.com',
    'www.googleapis.com',
    'gmail.googleapis.com',
    'openidconnect.googleapis.com',
  ],
  envVarNames: [
    'GOOGLE_CLIENT_ID',
    'GOOGLE_CLIENT_SECRET',
    'GOOGLE_REFRESH_TOKEN',
    'GOOGLE_API_ROOT_URL',
    'GOOGLE_OAUTH2_AUTH_URL',
    'GOOGLE_OAUTH2_TOKEN_URL',
    'GOOGLE_OAUTH2_REVOKE_URL',
    'GOOGLE_ISSUER',
  ],
  summarize: summarizeGoogle,
  describeChange: describeGoogleChange,
  validateSeed: validateGoogleSeed,
  presets: googlePresets,
};
