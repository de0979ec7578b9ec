/** What Twinbox knows of the Clerk twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import { TwinInputError, type TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { describeClerkChange } from './changes.ts';
import { summarizeClerk } from './summary.ts';
import { clerkPresets } from './presets.ts';

export interface ClerkSeed {
  users?: Array<{
    email: string;
    first_name?: string;
    last_name?: string;
    username?: string;
    password?: string;
    external_id?: string;
    public_metadata?: Record<string, unknown>;
    private_metadata?: Record<string, unknown>;
    unsafe_metadata?: Record<string, unknown>;
  }>;
  organizations?: Array<{
    name: string;
    slug?: string;
    max_allowed_memberships?: number;
    public_metadata?: Record<string, unknown>;
    private_metadata?: Record<string, unknown>;
    members?: Array<{ email: string; role?: string }>;
  }>;
}

const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;
const ROLE = /^(org:)?[a-z][a-z0-9_]{0,63}$/;
const metadata = Joi.object().unknown(true);

const schema = Joi.object<ClerkSeed>({
  users: Joi.array()
    .items(
      Joi.object({
        email: Joi.string().email().required(),
        first_name: Joi.string().max(256),
        last_name: Joi.string().max(256),
        username: Joi.string().pattern(/^[a-z0-9_-]{4,64}$/i, 'username'),
        password: Joi.string().min(8).max(72),
        external_id: Joi.string().max(256),
        public_metadata: metadata,
        private_metadata: metadata,
        unsafe_metadata: metadata,
      }),
    )
    .unique((a, b) => a.email.toLowerCase() === b.email.toLowerCase()),
  organizations: Joi.array()
    .items(
      Joi.object({
        name: Joi.string().min(1).max(256).required(),
        slug: Joi.string().pattern(SLUG, 'slug'),
        max_allowed_memberships: Joi.number().integer().min(0),
        public_metadata: metadata,
        private_metadata: metadata,
        members: Joi.array().items(
          Joi.object({
            email: Joi.string().email().required(),
            role: Joi.string().pattern(ROLE, 'role'),
          }),
        ),
      }),
    )
    .unique('name'),
});

const validateClerkSeed = seedValidator('clerk', schema, {
  check(value) {
    // The engine would skip a member it cannot find; a seed that names one is refused instead.
    const emails = new Set((value.users ?? []).map((u) => u.email.toLowerCase()));
    for (const org of value.organizations ?? []) {
      for (const member of org.members ?? []) {
        if (!emails.has(member.email.toLowerCase()))
          throw new TwinInputError(
            400,
            `clerk seed: organization "${org.name}" names member ${member.email}, whom the seed's users lack`,
          );
      }
    }
  },
});

export const clerkDescriptor: TwinDescriptor<ClerkSeed, 'clerk'> = {
  name: 'clerk',
  description:
    'Clerk Backend API (users, email addresses, organizations, memberships, invitations, sessions, session tokens and JWKS) on the emulate engine',
  hosts: ['api.clerk.com'],
  envVarNames: ['CLERK_SECRET_KEY', 'CLERK_PUBLISHABLE_KEY', 'CLERK_API_URL', 'CLERK_JWT_KEY'],
  // The instance's session-token signing key (twin.ts, signingKey).
  rsaKeys: 1,
  summarize: summarizeClerk,
  describeChange: describeClerkChange,
  validateSeed: validateClerkSeed,
  presets: clerkPresets,
};
