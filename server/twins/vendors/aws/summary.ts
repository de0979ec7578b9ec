import type { TwinSummary } from '../../contract.ts';
import { engineItems, newestFirst, summaryTable, text } from '../../kit/summary.ts';

/** The AWS twin's snapshot as buckets, objects, queues and IAM users, newest first. */
export function summarizeAws(state: unknown): TwinSummary {
  const objects = newestFirst(engineItems(state, 'aws.s3_objects'));
  return {
    tables: [
      summaryTable(
        'S3 buckets',
        ['Bucket', 'Region', 'Objects', 'Created'],
        newestFirst(engineItems(state, 'aws.s3_buckets')).map((b) => [
          text(b.bucket_name),
          text(b.region),
          String(objects.filter((o) => o.bucket_name === b.bucket_name).length),
          text(b.creation_date),
        ]),
      ),
      summaryTable(
        'S3 objects',
        ['Bucket', 'Key', 'Bytes', 'Type', 'Modified'],
        objects.map((o) => [
          text(o.bucket_name),
          text(o.key),
          text(o.content_length),
          text(o.content_type),
          text(o.last_modified),
        ]),
      ),
      summaryTable(
        'SQS queues',
        ['Queue', 'URL'],
        newestFirst(engineItems(state, 'aws.sqs_queues')).map((q) => [text(q.queue_name), text(q.queue_url)]),
      ),
      summaryTable(
        'IAM users',
        ['User', 'ARN'],
        newestFirst(engineItems(state, 'aws.iam_users')).map((u) => [text(u.user_name), text(u.arn)]),
      ),
    ],
  };
}
