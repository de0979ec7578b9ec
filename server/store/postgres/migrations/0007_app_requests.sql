-- The app requests the routers forwarded into sandboxes (server/timeline/app-requests.ts,
-- docs/timeline.md), in batches written off the request path by the process whose router forwarded
-- them, so every process's timeline shows them and they survive a restart. Read by sandbox; swept by
-- their indexed expires_hour once they expire (server/store/expiry.ts).

-- Up Migration

CREATE TABLE app_requests (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE INDEX app_requests_sandbox_id_idx ON app_requests ((data ->> 'sandbox_id'));
CREATE INDEX app_requests_expires_hour_idx ON app_requests ((data ->> 'expires_hour'));

-- Down Migration

DROP TABLE app_requests;
