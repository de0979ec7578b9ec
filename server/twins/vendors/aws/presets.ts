/**
 * The AWS twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const awsPresets: TwinPresets = {
  promiseKeys: {
    buckets: 'S3 buckets',
    objects: 'objects, in all buckets',
  },
  presets: [
    {
      id: 'preset_file_uploads',
      name: 'File uploads on S3',
      description:
        'An AWS account in eu-west-1 with an uploads bucket holding files of two users and an empty logs bucket, reached with the AWS SDK through AWS_ENDPOINT_URL.',
      twins: ['aws'],
      seed: {
        aws: {
          region: 'eu-west-1',
          buckets: [
            {
              name: 'acme-uploads',
              objects: {
                'users/ada/notes.txt': 'Analytical Engine notes',
                'users/grace/profile.json': '{"name":"Grace Hopper"}',
              },
            },
            { name: 'acme-logs' },
          ],
        },
      },
      promises: { aws: { buckets: 2, objects: 2 } },
    },
  ],
};
