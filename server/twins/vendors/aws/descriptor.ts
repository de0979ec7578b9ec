/** What Twinbox knows of the AWS twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import type { TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { describeAwsChange } from './changes.ts';
import { summarizeAws } from './summary.ts';
import { awsPresets } from './presets.ts';

export interface AwsSeed {
  region?: string;
  /** IAM user name the twin's own key pair belongs to (what sts:GetCallerIdentity reports). */
  user_name?: string;
  buckets?: Array<{ name: string; objects?: Record<string, string> }>;
  queues?: Array<{ name: string }>;
  iam?: {
    users?: Array<{ user_name: string }>;
    roles?: Array<{ role_name: string; description?: string }>;
  };
}

// S3's bucket naming rules (lower case, digits, dots and hyphens, 3-63 characters).
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

const schema = Joi.object<AwsSeed>({
  region: Joi.string().pattern(/^[a-z]{2}(-[a-z]+)+-\d$/),
  user_name: Joi.string().pattern(/^[\w+=,.@-]{1,64}$/),
  buckets: Joi.array().items(
    Joi.object({
      name: Joi.string().pattern(BUCKET).required().messages({
        'string.pattern.base': '"{#label}" must be a valid S3 bucket name (3-63 of a-z, 0-9, "." and "-")',
      }),
      objects: Joi.object().pattern(Joi.string().min(1).max(1024), Joi.string().allow('')),
    }),
  ),
  queues: Joi.array().items(
    Joi.object({
      name: Joi.string()
        .pattern(/^[\w-]{1,80}(\.fifo)?$/)
        .required(),
    }),
  ),
  iam: Joi.object({
    users: Joi.array().items(
      Joi.object({
        user_name: Joi.string()
          .pattern(/^[\w+=,.@-]{1,64}$/)
          .required(),
      }),
    ),
    roles: Joi.array().items(
      Joi.object({
        role_name: Joi.string()
          .pattern(/^[\w+=,.@-]{1,64}$/)
          .required(),
        description: Joi.string(),
      }),
    ),
  }),
});

const validateAwsSeed = seedValidator('aws', schema);

export const awsDescriptor: TwinDescriptor<AwsSeed, 'aws'> = {
  name: 'aws',
  description:
    'AWS S3 (buckets, objects, presigned URLs), STS and IAM with SigV4-checked credentials, on the emulate engine',
  hosts: [
    'sts.amazonaws.com',
    'sts.*.amazonaws.com',
    's3.amazonaws.com',
    '*.s3.amazonaws.com',
    's3.*.amazonaws.com',
    '*.s3.*.amazonaws.com',
  ],
  envVarNames: [
    'AWS_ACCESS_KEY_ID',
    'AWS_SECRET_ACCESS_KEY',
    'AWS_REGION',
    'AWS_ENDPOINT_URL',
    'AWS_ENDPOINT_URL_S3',
  ],
  summarize: summarizeAws,
  describeChange: describeAwsChange,
  validateSeed: validateAwsSeed,
  presets: awsPresets,
};
