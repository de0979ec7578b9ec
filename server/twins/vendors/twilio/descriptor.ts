/** What Twinbox knows of the Twilio twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import type { TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { describeTwilioChange } from './changes.ts';
import { summarizeTwilio } from './summary.ts';
import { twilioPresets } from './presets.ts';

export interface TwilioSeed {
  phone_numbers?: Array<{
    phone_number: string;
    friendly_name?: string;
    sms_url?: string;
    voice_url?: string;
  }>;
  verify_services?: Array<{ friendly_name: string; code?: string }>;
}

const E164 = /^\+[1-9]\d{6,14}$/;

const schema = Joi.object<TwilioSeed>({
  phone_numbers: Joi.array().items(
    Joi.object({
      phone_number: Joi.string().pattern(E164, 'E.164').required(),
      friendly_name: Joi.string(),
      sms_url: Joi.string().uri({ scheme: ['http', 'https'] }),
      voice_url: Joi.string().uri({ scheme: ['http', 'https'] }),
    }),
  ),
  verify_services: Joi.array().items(
    Joi.object({
      friendly_name: Joi.string().min(1).required(),
      code: Joi.string().pattern(/^\d{4,10}$/),
    }),
  ),
});

const validateTwilioSeed = seedValidator('twilio', schema);

export const twilioDescriptor: TwinDescriptor<TwilioSeed, 'twilio'> = {
  name: 'twilio',
  description:
    'Twilio REST API (Messages, Calls, IncomingPhoneNumbers, Verify, Messaging and Conversations services) on the emulate engine',
  hosts: ['api.twilio.com'],
  envVarNames: [
    'TWILIO_ACCOUNT_SID',
    'TWILIO_AUTH_TOKEN',
    'TWILIO_API_KEY',
    'TWILIO_API_SECRET',
    'TWILIO_PHONE_NUMBER',
    'TWILIO_VERIFY_SERVICE_SID',
    'TWILIO_BASE_URL',
  ],
  summarize: summarizeTwilio,
  validateSeed: validateTwilioSeed,
  presets: twilioPresets,
  describeChange: describeTwilioChange,
};
