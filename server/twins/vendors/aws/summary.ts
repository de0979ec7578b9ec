import type { TwinSummary } from '../../contract.ts';
import type { RequestLogEntry } from '../../runtime/request-log.ts';
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

const decode = (s: string) => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/** S3 writes by method and path (`/bucket` or `/bucket/key`); query-protocol actions by name. */
export function describeAwsChange(entry: RequestLogEntry): string | undefined {
  if (entry.status < 200 || entry.status >= 300) return undefined;
  const [pathname, query = ''] = entry.path.split('?');
  const action = new URLSearchParams(query).get('Action');
  const form = typeof entry.request_body === 'string' ? new URLSearchParams(entry.request_body) : undefined;
  const named = action ?? form?.get('Action');
  if (entry.method === 'POST' && named && /^(Create|Delete|Send|Purge|Assume)/.test(named)) {
    return `${named}${form?.get('QueueName') ? ` ${form.get('QueueName')}` : ''}${form?.get('UserName') ? ` ${form.get('UserName')}` : ''}`;
  }
  const [, bucket, ...rest] = (pathname ?? '').split('/');
  if (!bucket) return undefined;
  const key = decode(rest.join('/'));
  if (entry.method === 'PUT')
    return key ? `object s3://${bucket}/${key} written` : `bucket ${bucket} created`;
  if (entry.method === 'DELETE')
    return key ? `object s3://${bucket}/${key} deleted` : `bucket ${bucket} deleted`;
  if (entry.method === 'POST' && new URLSearchParams(query).has('delete'))
    return `objects deleted from ${bucket}`;
  return undefined;
}
